"""The backfill's writer (no Spark needed): vacuums as it goes, collects garbage rarely meanwhile."""

from __future__ import annotations

import asyncio
import gc
import json

import asyncpg
import pytest

from headwater.ingest.service import COLLECTOR_THRESHOLDS
from headwater.pipeline.db import VACUUM_EVERY, ingest_partition
from tests.factories import mixed_history

pytestmark = pytest.mark.db

UPDATED_IN_PLACE = (
    "datasets",
    "dataset_versions",
    "jobs",
    "job_versions",
    "runs",
    "run_datasets",
    "lineage_edges",
    "column_lineage",
)


async def vacuum_counts(conn: asyncpg.Connection) -> dict[str, int]:
    # The vacuuming backend counts its own passes in the shared statistics: no flush delay.
    rows = await conn.fetch(
        "SELECT relname, vacuum_count FROM pg_stat_user_tables WHERE relname = ANY($1::text[])",
        list(UPDATED_IN_PLACE),
    )
    return {r["relname"]: r["vacuum_count"] for r in rows}


@pytest.mark.parametrize(
    "batches", [18, 2 * VACUUM_EVERY], ids=["ends-between-passes", "ends-on-a-pass"]
)
async def test_a_backfill_vacuums_the_tables_it_updates_every_few_batches_and_at_the_end(
    conn, database_url, batches
):
    events = mixed_history()[:batches]
    assert len(events) == batches  # a batch per event
    before = await vacuum_counts(conn)

    def write() -> list:
        payloads = (json.dumps(e) for e in events)
        return list(ingest_partition(payloads, database_url, None, batch_size=1))

    [totals] = await asyncio.to_thread(write)
    assert totals.created + totals.duplicates == len(events)
    assert totals.created > 0
    after = await vacuum_counts(conn)
    # One pass per VACUUM_EVERY batches, and one for the batches after the last (none if no batch is).
    passes = -(-batches // VACUUM_EVERY)
    assert {t: after[t] - before[t] for t in UPDATED_IN_PLACE} == dict.fromkeys(UPDATED_IN_PLACE, passes)
    # What was vacuumed away was only dead: every event is there.
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == totals.created


async def test_the_writer_collects_garbage_rarely_while_it_writes_and_then_as_before(db, database_url):
    # Python's defaults to start from, whatever a server run in this process left (a running
    # server collects rarely too).
    original = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        await _writes_with_rare_collections(database_url)
    finally:
        gc.set_threshold(*original)


async def _writes_with_rare_collections(database_url: str) -> None:
    before = gc.get_threshold()
    assert before != COLLECTOR_THRESHOLDS
    seen: list[tuple[int, int, int]] = []

    def payloads():
        for event in mixed_history():
            seen.append(gc.get_threshold())  # read as the writer takes the next event
            yield json.dumps(event)

    [totals] = await asyncio.to_thread(lambda: list(ingest_partition(payloads(), database_url, None, 3)))
    assert totals.created > 0
    assert set(seen) == {COLLECTOR_THRESHOLDS}
    assert gc.get_threshold() == before
