"""The README's examples, run as written (but for the address) against a real `headwater serve`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.server import HeadwaterServer, server_of_its_own

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()

pytestmark = pytest.mark.db


def _section(heading: str) -> str:
    start = README.index(f"\n## {heading}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end]


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.DOTALL)


def _at(server: HeadwaterServer, text: str) -> str:
    host = server.url.removeprefix("http://")
    return text.replace("localhost:5000", host)


# A database of its own: the examples' cursors count from its first change. Open, as a new user's
# first server is: the README's first steps send no key.
server = server_of_its_own("headwater_readme", secured=False)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_examples_post_an_event_and_read_it_back_over_rest_and_graphql(
    server: HeadwaterServer,
) -> None:
    (script,) = _blocks(_section("Send it an event, read lineage"), "sh")
    # Each answer on a line of its own.
    prelude = 'curl() { command curl "$@"; echo; }\n'
    out = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", prelude + _at(server, script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    posted, rest, graphql = (json.loads(line) for line in out.splitlines() if line.strip())
    assert posted["status"] == "created"
    assert {n["id"] for n in rest["graph"]} == {
        "dataset:postgres://db:5432:shop.public.revenue",
        "job:etl:build_revenue",
        "dataset:postgres://db:5432:shop.public.orders",
    }
    lineage = graphql["data"]["lineage"]
    assert {
        "origin": "job:etl:build_revenue",
        "destination": "dataset:postgres://db:5432:shop.public.revenue",
    } in lineage["edges"]
    assert len(lineage["nodes"]) == 3


def test_subscription_client_replays_from_a_cursor_then_follows_live_changes(
    server: HeadwaterServer, tmp_path: Path
) -> None:
    section = _section("GraphQL and the lineage change subscription")
    client = next(b for b in _blocks(section, "python") if "lineageChanges" in b)
    script = tmp_path / "subscribe.py"
    script.write_text(_at(server, client))

    def changes(after: str, count: int) -> list[list[str]]:
        """The first ``count`` lines the client prints when started with ``after``."""
        with subprocess.Popen(
            [sys.executable, str(script), after],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as proc:
            assert proc.stdout is not None
            lines: list[list[str]] = []
            deadline = time.monotonic() + 30
            while len(lines) < count and time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                lines.append(line.split())
            proc.kill()
            _, err = proc.communicate()
        assert len(lines) == count, err
        return lines

    # The revenue table has a history whether or not the curl example ran first.
    event = {
        "eventType": "COMPLETE",
        "eventTime": "2026-01-01T13:00:00Z",
        "producer": "https://example.com/my-etl",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": "0194a0c4-1f0e-7cc5-a1b5-4b3c7a9c2d12"},
        "job": {"namespace": "etl", "name": "build_revenue"},
        "inputs": [{"namespace": "postgres://db:5432", "name": "shop.public.orders"}],
        "outputs": [{"namespace": "postgres://db:5432", "name": "shop.public.revenue"}],
    }
    assert httpx.post(f"{server.url}/api/v1/lineage", json=event).status_code == 201

    replayed = changes("0", 3)
    kinds = {kind for _, kind, _ in replayed}
    assert "DATASET_CREATED" in kinds or "JOB_CREATED" in kinds
    cursors = [int(cursor) for cursor, _, _ in replayed]
    assert cursors == sorted(cursors)

    # Resuming after the second change starts exactly at the third.
    resumed = changes(replayed[1][0], 1)
    assert resumed[0] == replayed[2]
