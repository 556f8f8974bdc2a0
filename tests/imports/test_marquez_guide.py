"""The README's guide for switching from Marquez, followed as written from a Marquez database.

The history is imported with the very command the guide shows while Marquez still takes events, the
clients are repointed (events sent while that rolls out reach both), and the import is run again
for what Marquez took meanwhile. Lineage, column lineage, versions and run states end as if every
event had been posted to Headwater from the start, and runs keep the ids Marquez gave them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from headwater.app import create_app
from headwater.ingest.validate import run_uuid
from headwater.settings import Settings
from tests.client import post_all
from tests.corpus import OPENLINEAGE
from tests.marquez import add_to_marquez, fill_marquez, history, in_ingest_order
from tests.pg import migrated_database
from tests.snapshot import TABLES, model_snapshot

pytestmark = pytest.mark.db

README = Path(__file__).resolve().parents[2] / "README.md"
COMPAT = OPENLINEAGE / "compat-consumer"


def guide() -> str:
    """The README's section on switching from Marquez."""
    text = README.read_text()
    start = text.index("\n## Switching from Marquez\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def import_command(source: str) -> list[str]:
    """The guide's import command, with its example URL replaced by `source`."""
    [command] = re.findall(r"`(headwater import marquez --from postgresql://[^`]*)`", guide())
    argv = [source if a.startswith("postgresql://") else a for a in shlex.split(command)]
    # The console script installed beside this interpreter, as a user's shell finds it.
    return [str(Path(sys.executable).parent / argv[0]), *argv[1:]]


def compatibility_events() -> list[dict[str, Any]]:
    """Every event of OpenLineage's consumer compatibility scenarios (one has runId "run_id")."""
    if not COMPAT.is_dir():
        pytest.skip(f"compatibility scenarios not found at {COMPAT}")
    return [json.loads(p.read_text()) for p in sorted(COMPAT.glob("*/*.json"))]


def distinct(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events without repeats of the same content (scenarios share some), first kept."""
    seen: set[str] = set()
    out = []
    for event in events:
        key = json.dumps(event, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(event)
    return out


# Times that say since when something has held, which the order events arrive in decides: events
# of the window Marquez took alone while clients were repointed come after newer ones, and repeat
# facets those already set.
ARRIVAL_TIMES = {
    "datasets": ("facets_at", "fields_at", "updated_at"),
    "jobs": ("facets_at", "updated_at"),
}


def columns(table: str) -> list[str]:
    """The column names of a snapshot table, from its query (no commas inside its expressions)."""
    listed = re.fullmatch(r"SELECT (.*) FROM \w+ t", TABLES[table], re.DOTALL)
    assert listed, TABLES[table]
    return [c.rsplit(" ", 1)[-1] if c.startswith("(") else c for c in listed[1].split(", ")]


def lineage(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The model without the change log (in arrival order) and without ARRIVAL_TIMES."""
    out = {}
    for table, rows in snapshot.items():
        if table == "change_log":
            continue
        names = columns(table)
        masked = {names.index(c) for c in ARRIVAL_TIMES.get(table, ())}
        out[table] = sorted(
            (tuple(None if i in masked else v for i, v in enumerate(r)) for r in rows), key=repr
        )
    return out


async def test_following_the_guide_from_marquez_ends_with_the_same_lineage(
    client, database_url, marquez, pg_server, tmp_path
):
    events = in_ingest_order(distinct(history() + compatibility_events()))
    assert any(e.get("run", {}).get("runId") == "run_id" for e in events)
    # Marquez holds the first half of the events when the history is imported and takes them up to
    # two thirds while its clients are repointed; from three fifths on, repointed clients send them
    # to Headwater, so that those up to two thirds reach both.
    half, switched, third = len(events) // 2, len(events) * 3 // 5, len(events) * 2 // 3
    await fill_marquez(marquez, events[:half], duplicates=3)
    await post_all(client, events)  # what posting every event to Headwater would have built

    async with migrated_database(pg_server, "headwater_mqz_target") as target:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
        env["HEADWATER_DATABASE_URL"] = target  # the database, named as for `serve`

        def run_import() -> str:
            done = subprocess.run(
                import_command(marquez),
                env=env,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            assert ", refused 0" in done.stderr
            return done.stderr

        # 1. Bring the history, with the guide's command.
        assert f"imported {len(events[:half]):,}," in run_import()
        # 2. Point the clients at Headwater; Marquez took some events meanwhile.
        await add_to_marquez(marquez, events[half:third])
        settings = Settings(database_url=target, pool_min_size=1, pool_max_size=2)
        async with AsyncTestClient(app=create_app(settings)) as headwater:
            await post_all(headwater, events[switched:])
        # 3. Run the import again: what Marquez took meanwhile, nothing twice.
        assert "(resumed: events from " in (err := run_import())
        assert f"imported {switched - half:,}, already stored" in err

        # The same lineage, column lineage, versions and run states as posting everything.
        imported = lineage(await model_snapshot(target))
        posted = lineage(await model_snapshot(database_url))
        assert {k: len(v) for k, v in imported.items()} == {k: len(v) for k, v in posted.items()}
        assert imported == posted

        # Tools reading Marquez's REST API find runs under the ids Marquez gave them.
        async with AsyncTestClient(app=create_app(settings)) as headwater:
            run = (await headwater.get(f"/api/v1/runs/{run_uuid('run_id')}")).json()
        assert (run["id"], run["reportedRunId"]) == (str(run_uuid("run_id")), "run_id")
