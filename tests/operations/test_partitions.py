"""raw_events in month partitions: made ahead, made on demand, the default one, the conversion."""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
from pathlib import Path

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from headwater.app import create_app
from headwater.db import migrate as migrate_module
from headwater.db.migrate import migrate
from headwater.operations.partitions import prepare_partitions
from headwater.settings import Settings
from headwater.store import events as event_store
from tests.factories import run_event
from tests.operations.conftest import ingest
from tests.pg import empty_database

pytestmark = pytest.mark.db


async def placement(conn: asyncpg.Connection) -> dict[str, int]:
    rows = await conn.fetch(
        "SELECT tableoid::regclass::text AS p, count(*) AS n FROM raw_events GROUP BY 1"
    )
    return {r["p"]: r["n"] for r in rows}


def this_month(months: int = 0) -> dt.datetime:
    now = dt.datetime.now(dt.UTC)
    index = now.year * 12 + now.month - 1 + months
    return dt.datetime(index // 12, index % 12 + 1, 1, tzinfo=dt.UTC)


async def test_a_new_database_has_this_month_and_three_ahead_and_a_default(
    ops: asyncpg.Connection,
) -> None:
    months = [p.starts for p in await event_store.fetch_partitions(ops)]
    assert months == [this_month(i) for i in range(4)]
    assert await ops.fetchval("SELECT to_regclass('raw_events_default') IS NOT NULL")
    assert await ops.fetchval("SELECT relkind::text FROM pg_class WHERE relname = 'raw_events'") == "p"


async def test_a_late_event_gets_its_month_made_on_demand_and_stays_idempotent(
    ops: asyncpg.Connection,
) -> None:
    late = run_event("nightly", time="2019-03-31T23:59:59.999Z", outputs=["t"])
    early = run_event("nightly", time="2019-04-01T00:00:00Z", outputs=["t"])
    assert [r.status for r in await ingest(ops, [late, early])] == ["created", "created"]
    # Months are UTC: the last instant of March and the first of April land apart.
    assert await placement(ops) == {"raw_events_2019_03": 1, "raw_events_2019_04": 1}
    # The same content again: found in its month's partition, not stored twice.
    assert [r.status for r in await ingest(ops, [late, early])] == ["duplicate", "duplicate"]
    assert await ops.fetchval("SELECT count(*) FROM raw_events") == 2


async def test_far_future_events_go_to_the_default_partition(ops: asyncpg.Connection) -> None:
    wrong_clock = run_event("job", time="2999-01-01T00:00:00Z", outputs=["t"])
    await ingest(ops, [wrong_clock])
    assert await placement(ops) == {"raw_events_default": 1}
    assert [r.status for r in await ingest(ops, [wrong_clock])] == ["duplicate"]
    # Upkeep makes no partition for it either.
    assert await prepare_partitions(ops) == []


async def test_a_busy_table_sends_a_new_month_to_the_default_and_upkeep_moves_it(
    ops: asyncpg.Connection, ops_url: str
) -> None:
    event = run_event("job", time="2020-06-15T00:00:00Z", outputs=["t"])
    reader = await asyncpg.connect(ops_url)
    try:
        # Another session reading raw_events for longer than ingest waits to make the partition.
        async with reader.transaction():
            await reader.execute("SELECT count(*) FROM raw_events")
            assert (await ingest(ops, [event]))[0].status == "created"
    finally:
        await reader.close()
    assert await placement(ops) == {"raw_events_default": 1}
    before = await ops.fetchrow("SELECT raw_event_id, content_hash FROM raw_events")

    assert await prepare_partitions(ops) == [dt.datetime(2020, 6, 1, tzinfo=dt.UTC)]
    assert await placement(ops) == {"raw_events_2020_06": 1}
    assert await ops.fetchrow("SELECT raw_event_id, content_hash FROM raw_events") == before
    assert (await ingest(ops, [event]))[0].status == "duplicate"


async def test_ingest_waits_a_moment_for_a_busy_table_to_make_a_new_month(
    ops: asyncpg.Connection, ops_url: str
) -> None:
    event = run_event("job", time="2021-02-03T00:00:00Z", outputs=["t"])
    reader = await asyncpg.connect(ops_url)
    try:
        read = reader.transaction()
        await read.start()
        await reader.execute("SELECT count(*) FROM raw_events")

        async def finish_reading() -> None:
            await asyncio.sleep(0.5)
            await read.commit()

        finishing = asyncio.create_task(finish_reading())
        assert (await ingest(ops, [event]))[0].status == "created"
        await finishing
    finally:
        await reader.close()
    assert await placement(ops) == {"raw_events_2021_02": 1}


async def test_making_a_partition_leaves_the_callers_lock_timeout_as_it_was(
    ops: asyncpg.Connection,
) -> None:
    async with ops.transaction():
        await ops.execute("SET LOCAL lock_timeout = '7s'")
        made = await ops.fetchval(
            "SELECT raw_events_ensure_partitions(ARRAY['2018-05-05Z'::timestamptz])"
        )
        assert made == [dt.datetime(2018, 5, 1, tzinfo=dt.UTC)]
        assert await ops.fetchval("SHOW lock_timeout") == "7s"


def _rows(n: int) -> str:
    """n raw events over 14 months of 2024-2025, one of them far ahead, in the old table's layout."""
    return f"""
        INSERT INTO raw_events (content_hash, event_kind, event_type, event_time, run_uuid, job_namespace,
                                job_name, producer, payload)
        SELECT sha256(i::text::bytea), 'RUN', 'COMPLETE',
               CASE WHEN i = {n} THEN '2999-01-01'::timestamptz
                    ELSE '2024-11-03'::timestamptz + (i % 425) * interval '1 day' END,
               gen_random_uuid(), 'ns', 'job' || (i % 7), 'p', jsonb_build_object('i', i)
        FROM generate_series(1, {n}) AS i
    """


async def test_the_migration_converts_a_populated_table_without_losing_or_doubling_an_event(
    pg_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    earlier = tmp_path / "migrations"
    earlier.mkdir()
    for path in sorted(migrate_module.MIGRATIONS_DIR.glob("*.sql")):
        if path.name < "0080":
            shutil.copy(path, earlier)
    async with empty_database(pg_server, "headwater_ops_convert") as url:
        conn = await asyncpg.connect(url)
        try:
            monkeypatch.setattr(migrate_module, "MIGRATIONS_DIR", earlier)
            await migrate(conn)
            # More than two batches of the migration's 10,000.
            await conn.execute(_rows(25_001))
            before = await conn.fetch(
                "SELECT raw_event_id, content_hash, event_time, payload FROM raw_events ORDER BY 1"
            )
            monkeypatch.undo()

            result = await migrate(conn)
            assert "0080_partition_raw_events_by_month.sql" in result.applied
            after = await conn.fetch(
                "SELECT raw_event_id, content_hash, event_time, payload FROM raw_events ORDER BY 1"
            )
            assert after == before
            assert await conn.fetchval("SELECT to_regclass('raw_events_unpartitioned')") is None
            counts = await placement(conn)
            assert counts["raw_events_default"] == 1
            assert sum(counts.values()) == 25_001
            # 425 days from 2024-11-03 to 2026-01-01: 15 months, each in its own partition.
            assert len([p for p in counts if p.startswith("raw_events_202")]) == 15
            assert counts.get("raw_events_2024_11")
            assert counts.get("raw_events_2026_01")
            # New events are numbered after the moved ones; the same content is refused.
            insert = (
                "INSERT INTO raw_events (content_hash, event_kind, event_time, payload)"
                " VALUES ($1, 'RUN', $2, '{}') RETURNING raw_event_id"
            )
            assert await conn.fetchval(insert, b"new", dt.datetime(2025, 1, 1, tzinfo=dt.UTC)) == 25_002
            with pytest.raises(asyncpg.UniqueViolationError):
                await conn.fetchval(insert, after[0]["content_hash"], after[0]["event_time"])
        finally:
            await conn.close()


async def test_an_interrupted_conversion_resumes_with_the_events_left(
    pg_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    earlier = tmp_path / "migrations"
    earlier.mkdir()
    for path in sorted(migrate_module.MIGRATIONS_DIR.glob("*.sql")):
        if path.name < "0080":
            shutil.copy(path, earlier)
    conversion = migrate_module.MIGRATIONS_DIR / "0080_partition_raw_events_by_month.sql"
    async with empty_database(pg_server, "headwater_ops_resume") as url:
        conn = await asyncpg.connect(url)
        try:
            monkeypatch.setattr(migrate_module, "MIGRATIONS_DIR", earlier)
            await migrate(conn)
            await conn.execute(_rows(12_000))
            # The setup and one batch committed, then the process died.
            setup, _, rest = conversion.read_text().partition("-- migrate:batch")
            batch = rest.partition("-- migrate:finish")[0]
            await conn.execute(setup)
            await conn.execute(batch)
            assert await conn.fetchval("SELECT count(*) FROM raw_events_unpartitioned") == 2_000
            monkeypatch.undo()

            await migrate(conn)
            assert await conn.fetchval("SELECT count(*) FROM raw_events") == 12_000
            assert await conn.fetchval("SELECT count(DISTINCT raw_event_id) FROM raw_events") == 12_000
        finally:
            await conn.close()


async def test_far_past_events_go_to_the_default_partition(ops: asyncpg.Connection) -> None:
    # One event a month of the years 1000 to 1004 made sixty partitions: only the last ten years
    # get their own.
    old = [
        run_event("job", time=f"{1000 + m // 12:04d}-{m % 12 + 1:02d}-15T00:00:00Z", outputs=["t"])
        for m in range(60)
    ]
    before = await placement(ops)
    assert {r.status for r in await ingest(ops, old)} == {"created"}
    assert await placement(ops) == {**before, "raw_events_default": 60}
    assert await prepare_partitions(ops) == []
    ten_years_back = this_month(-119)
    recent = run_event("job", time=f"{ten_years_back:%Y-%m}-15T00:00:00Z", outputs=["t"])
    await ingest(ops, [recent])
    assert (await placement(ops))[f"raw_events_{ten_years_back:%Y_%m}"] == 1


async def test_the_first_and_last_storable_months(ops: asyncpg.Connection) -> None:
    # asyncpg reads 0001-01-01T00:00Z, the first month's start, as -infinity: it must not be sent so.
    first = run_event("job", time="0001-01-01T00:00:00.000001Z", outputs=["t"])
    last = run_event("job", time="9999-12-31T23:59:59.999998Z", outputs=["t"])
    assert [r.status for r in await ingest(ops, [first, last])] == ["created", "created"]
    assert await placement(ops) == {"raw_events_default": 2}
    assert [r.status for r in await ingest(ops, [first, last])] == ["duplicate", "duplicate"]
    assert await prepare_partitions(ops) == []


async def test_serve_makes_the_coming_months_at_start(ops: asyncpg.Connection, ops_url: str) -> None:
    name = f"raw_events_{this_month(2):%Y_%m}"
    await ops.execute(f"DROP TABLE {name}")
    settings = Settings(database_url=ops_url, pool_min_size=1, pool_max_size=2)
    async with AsyncTestClient(app=create_app(settings)):
        for _ in range(100):
            if await ops.fetchval("SELECT to_regclass($1) IS NOT NULL", name):
                break
            await asyncio.sleep(0.1)
    months = [p.starts for p in await event_store.fetch_partitions(ops)]
    assert months == [this_month(i) for i in range(4)]
