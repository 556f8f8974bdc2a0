"""A pg_dump of a populated database, restored into a fresh one, answers the same lineage."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from headwater.db.migrate import migrate
from headwater.db.pool import register_codecs
from headwater.lineage.columns import fetch_column_lineage
from headwater.lineage.graph import fetch_lineage
from headwater.operations.retention import run_retention
from tests.factories import job_run, rid
from tests.operations.conftest import ingest
from tests.operations.test_retention import KEEP_DAYS, history
from tests.pg import empty_database
from tests.snapshot import model_snapshot

pytestmark = pytest.mark.db

NODES = (
    "SELECT 'dataset:' || namespace || ':' || name AS id FROM datasets"
    " UNION ALL SELECT 'job:' || namespace || ':' || name FROM jobs ORDER BY 1"
)


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


def late() -> list[dict[str, Any]]:
    return job_run("late", inputs=["daily"], outputs=["late_out"], start=30, end=31, run_id=rid("late"))


async def answers(conn: asyncpg.Connection) -> dict[str, object]:
    """Every node's lineage (table and column level), and the retention horizon."""
    found: dict[str, object] = {}
    for row in await conn.fetch(NODES):
        graph = await fetch_lineage(conn, [row["id"]], depth=20)
        found[row["id"]] = (sorted((n.id, n.data_json) for n in graph.nodes), sorted(graph.edges))
        if row["id"].startswith("dataset:"):
            columns = await fetch_column_lineage(conn, [row["id"]], depth=20)
            found[row["id"] + "#columns"] = columns.edges
    found["horizon"] = await conn.fetchval("SELECT max(horizon) FROM retention_passes")
    return found


async def test_a_dump_restored_into_a_fresh_database_answers_the_same(
    ops: asyncpg.Connection, ops_url: str, pg_server: str, tmp_path: Path
) -> None:
    pg_dump, pg_restore = _tool("pg_dump"), _tool("pg_restore")
    await ingest(ops, history())
    # A pass first: the restore must keep the horizon too, or it would answer a past it lacks.
    await run_retention(ops, KEEP_DAYS)
    await ingest(ops, late())
    before = await answers(ops)
    dump = tmp_path / "headwater.dump"
    await asyncio.to_thread(
        subprocess.run, [pg_dump, "--format=custom", "--file", str(dump), ops_url], check=True
    )

    async with empty_database(pg_server, "headwater_ops_restored") as restored_url:
        await asyncio.to_thread(
            subprocess.run,
            [pg_restore, "--exit-on-error", "--no-owner", "--dbname", restored_url, str(dump)],
            check=True,
        )
        restored = await asyncpg.connect(restored_url)
        await register_codecs(restored)
        try:
            assert await answers(restored) == before
            assert await model_snapshot(restored_url) == await model_snapshot(ops_url)
            # The restore is a database at today's schema: nothing to migrate, its partitions
            # there, and ingest goes on (the same event a duplicate, a new one stored after the rest).
            assert (await migrate(restored)).applied == []
            assert await restored.fetchval("SELECT to_regclass('raw_events_default') IS NOT NULL")
            assert {r.status for r in await ingest(restored, late())} == {"duplicate"}
            assert [
                r.status for r in await ingest(restored, job_run("new", inputs=["a"], outputs=["b"]))
            ] == [
                "created",
                "created",
            ]
            assert await restored.fetchval(
                "SELECT max(raw_event_id) FROM raw_events"
            ) > await ops.fetchval("SELECT max(raw_event_id) FROM raw_events")
        finally:
            await restored.close()
