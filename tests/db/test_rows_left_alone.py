"""Rows an event has nothing new for are not rewritten: each rewrite costs a new row version, a dead
one left behind until the page is next visited or vacuumed, and WAL."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import pytest

from headwater.ingest.validate import validate_event
from headwater.store.datasets import fields_hash
from tests.factories import dataset, run_event
from tests.writes import ingest_events

pytestmark = pytest.mark.db


async def rewrites(conn: asyncpg.Connection, table: str, events: list[dict[str, Any]]) -> int:
    """Rows of ``table`` rewritten by ingesting ``events``, as a trigger counts them (the statistics
    views lag: they show a transaction's counts only once flushed)."""
    await conn.execute(
        f"""
        CREATE TABLE rewrites_seen (n int);
        CREATE FUNCTION count_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN INSERT INTO rewrites_seen VALUES (1); RETURN NEW; END $$;
        CREATE TRIGGER count_rewrite BEFORE UPDATE ON {table}
            FOR EACH ROW EXECUTE FUNCTION count_rewrite();
        """
    )
    try:
        await ingest_events(conn, [validate_event(e) for e in events])
        return await conn.fetchval("SELECT count(*) FROM rewrites_seen")
    finally:
        await conn.execute(
            f"DROP TRIGGER count_rewrite ON {table}; DROP FUNCTION count_rewrite(); DROP TABLE rewrites_seen"
        )


def schema(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "type": "string", "description": None} for n in names]


async def test_a_dataset_is_created_with_its_schema_in_one_row_version(conn):
    # Read, so that no version of it is written (which moves its current version: a rewrite).
    created = run_event("load", inputs=[dataset("totals", fields=["id", "total"])], outputs=["report"])
    assert await rewrites(conn, "datasets", [created]) == 1  # the output's current version

    row = await conn.fetchrow("SELECT dataset_uuid, fields_hash FROM datasets WHERE name = 'totals'")
    assert row["fields_hash"] == fields_hash(schema("id", "total"))
    fields = await conn.fetch(
        "SELECT name FROM dataset_fields WHERE dataset_uuid = $1 ORDER BY position", row["dataset_uuid"]
    )
    assert [f["name"] for f in fields] == ["id", "total"]
    # A new dataset's first schema is not a change of schema.
    assert not await conn.fetch("SELECT 1 FROM change_log WHERE kind = 'SCHEMA_CHANGED'")

    # The same schema again changes nothing; another one is a change, logged, and stored.
    again = run_event("load", inputs=[dataset("totals", fields=["id", "total"])], time=10)
    assert await rewrites(conn, "datasets", [again]) == 0
    wider = run_event("load", outputs=[dataset("totals", fields=["id", "total", "currency"])], time=20)
    await rewrites(conn, "datasets", [wider])
    [change] = await conn.fetch("SELECT details FROM change_log WHERE kind = 'SCHEMA_CHANGED'")
    assert change["details"]["added"] == [{"name": "currency", "type": "string"}]
    assert await conn.fetchval("SELECT fields_hash FROM datasets WHERE name = 'totals'") == fields_hash(
        schema("id", "total", "currency")
    )


async def test_a_dataset_read_and_written_by_one_event_starts_with_the_written_schema(conn):
    event = run_event(
        "rewrite",
        inputs=[dataset("scratch", fields=["a"])],
        outputs=[dataset("scratch", fields=["a", "b"])],
    )
    await rewrites(conn, "datasets", [event])
    assert await conn.fetchval("SELECT fields_hash FROM datasets WHERE name = 'scratch'") == fields_hash(
        schema("a", "b")
    )
    names = await conn.fetch(
        "SELECT f.name FROM dataset_fields f JOIN datasets d USING (dataset_uuid)"
        " WHERE d.name = 'scratch' ORDER BY f.position"
    )
    assert [n["name"] for n in names] == ["a", "b"]


async def test_a_start_arriving_after_its_complete_does_not_rewrite_the_job(conn):
    earlier = run_event("load", inputs=["orders"], outputs=["totals"], time=0)
    run = uuid.uuid4()
    complete = run_event("load", "COMPLETE", run_id=run, inputs=["orders"], outputs=["totals"], time=15)
    start = run_event("load", "START", run_id=run, inputs=["orders"], outputs=["totals"], time=10)
    await rewrites(conn, "jobs", [earlier, complete])
    before = await conn.fetchrow(
        "SELECT current_version_uuid, current_version_at, latest_run_uuid FROM jobs WHERE name = 'load'"
    )
    assert await rewrites(conn, "jobs", [start]) == 0
    after = await conn.fetchrow(
        "SELECT current_version_uuid, current_version_at, latest_run_uuid FROM jobs WHERE name = 'load'"
    )
    assert after == before
    assert after["latest_run_uuid"] == run
