"""An upgrade from the previous release keeps lineage, versions and raw events, and ingest goes on.

The previous release is the latest tag before HEAD; until there is one, the first commit that could
ingest (the first migration set). Its code, taken from git, migrates a fresh database and ingests the
shared OpenLineage events with its own ingest, and records its lineage answers; then today's
migrations run on that database, and today's code must find the same events, versions and lineage,
refuse the same events again as duplicates, and ingest new ones.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from headwater.db.migrate import migrate
from headwater.db.pool import register_codecs
from headwater.lineage.graph import fetch_lineage
from tests.corpus import EVENTS
from tests.factories import job_run
from tests.operations.conftest import ingest
from tests.pg import empty_database

pytestmark = pytest.mark.db

REPO = Path(__file__).resolve().parents[2]
SEED = Path(__file__).with_name("seed_release.py")

VERSIONS = """
    SELECT 'job' AS kind, j.namespace || ':' || j.name AS owner, v.version, v.created_at
    FROM job_versions v JOIN jobs j USING (job_uuid)
    UNION ALL
    SELECT 'dataset', d.namespace || ':' || d.name, v.version, v.created_at
    FROM dataset_versions v JOIN datasets d USING (dataset_uuid)
    ORDER BY 1, 2, 3
"""
RAW_EVENTS = "SELECT raw_event_id, content_hash, event_time, payload::text FROM raw_events ORDER BY 1"
CURRENT = """
    SELECT j.namespace || ':' || j.name AS job, v.version
    FROM jobs j JOIN job_versions v ON v.job_version_uuid = j.current_version_uuid ORDER BY 1
"""


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def previous_release() -> str:
    """The latest tag before HEAD, else the commit that first had an ingest (the first migrations)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("the upgrade test needs the git history of the checkout")
    try:
        return _git("describe", "--tags", "--abbrev=0", "HEAD^")
    except subprocess.CalledProcessError:
        first = _git(
            "log", "--diff-filter=A", "--format=%H", "--", "backend/headwater/ingest/service.py"
        ).splitlines()
        # A shallow clone shows its one commit as adding every file: that is no earlier release.
        if not first or first[-1] == _git("rev-parse", "HEAD"):
            pytest.skip("no earlier release in the git history (a shallow clone?)")
        return first[-1]


def shared_events() -> list[str]:
    if not EVENTS.is_dir():
        pytest.skip(f"OpenLineage event corpus not found at {EVENTS}")
    return sorted(
        str(p)
        for p in EVENTS.rglob("*.json")
        if not p.name.endswith((".invalid.json", ".template.json"))
    )


def seed_with(release: str, workdir: Path, url: str, files: list[str]) -> dict[str, Any]:
    """Run the release's own code on the database: its migrations, its ingest, its answers."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", release, "backend"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(workdir)], input=archive, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEADWATER_", "PYTHONPATH"))}
    env["PYTHONPATH"] = str(workdir / "backend")
    done = subprocess.run(
        [sys.executable, str(SEED), url, *files],
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def test_an_upgrade_from_the_previous_release_keeps_everything(
    pg_server: str, tmp_path: Path
) -> None:
    release = previous_release()
    files = shared_events()
    async with empty_database(pg_server, "headwater_ops_upgrade") as url:
        seeded = await asyncio.to_thread(seed_with, release, tmp_path, url, files)
        assert len(seeded["stored"]) > 40, seeded["refused"]
        conn = await asyncpg.connect(url)
        await register_codecs(conn)
        try:
            raw_before = await conn.fetch(RAW_EVENTS)
            versions_before = await conn.fetch(VERSIONS)
            current_before = await conn.fetch(CURRENT)
            assert len(raw_before) == len(seeded["stored"])

            result = await migrate(conn)
            assert "0080_partition_raw_events_by_month.sql" in result.applied

            assert await conn.fetch(RAW_EVENTS) == raw_before
            assert await conn.fetch(VERSIONS) == versions_before
            assert await conn.fetch(CURRENT) == current_before
            for node, answer in seeded["lineage"].items():
                graph = await fetch_lineage(conn, [node], depth=20)
                assert sorted(n.id for n in graph.nodes) == answer["nodes"], node
                assert sorted(list(e) for e in graph.edges) == answer["edges"], node

            # Ingest goes on: what the release stored is a duplicate, a new event is stored.
            stored = [json.loads(Path(f).read_text()) for f in seeded["stored"]]
            assert {r.status for r in await ingest(conn, stored)} == {"duplicate"}
            fresh = job_run("after_upgrade", inputs=["upgraded_in"], outputs=["upgraded_out"])
            assert [r.status for r in await ingest(conn, fresh)] == ["created", "created"]
            graph = await fetch_lineage(conn, ["dataset:warehouse:upgraded_out"], depth=2)
            assert "dataset:warehouse:upgraded_in" in {n.id for n in graph.nodes}
        finally:
            await conn.close()
