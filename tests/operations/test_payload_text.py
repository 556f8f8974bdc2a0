"""Migration 0085: raw_events.payload from jsonb to text, on a populated table, in batches."""

from __future__ import annotations

import datetime as dt
import shutil
import uuid
from pathlib import Path

import asyncpg
import pytest

from headwater.db import migrate as migrate_module
from headwater.db.migrate import migrate
from headwater.store.job_code import RunCode, fetch_code_of_runs
from tests.pg import empty_database

pytestmark = pytest.mark.db

MIGRATION = migrate_module.MIGRATIONS_DIR / "0085_store_raw_payloads_as_text.sql"
ROWS = (
    "SELECT raw_event_id, content_hash, event_time, payload::text AS payload FROM raw_events ORDER BY 1"
)
PARTITIONS = """
    SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'raw_events'::regclass ORDER BY 1
"""


def _rows(n: int) -> str:
    """n raw events as the jsonb table held them: most in January 2025 (more than two batches of
    10,000 in one partition), some in February and March, one far ahead (the default partition)."""
    return f"""
        INSERT INTO raw_events (content_hash, event_kind, event_type, event_time, run_uuid, job_namespace,
                                job_name, producer, payload)
        SELECT sha256(i::text::bytea), 'RUN', 'COMPLETE',
               CASE WHEN i = {n} THEN '2999-01-01'::timestamptz
                    WHEN i % 10 = 0 THEN '2025-02-03'::timestamptz + (i % 50) * interval '1 day'
                    ELSE '2025-01-01'::timestamptz + (i % 31) * interval '1 day' END,
               ('00000000-0000-0000-0000-' || lpad(i::text, 12, '0'))::uuid, 'ns', 'job' || (i % 7), 'p',
               jsonb_build_object('i', i, 'eventType', 'COMPLETE', 'name', 'é ☃',
                                  'job', jsonb_build_object('facets', jsonb_build_object(
                                      'sql', jsonb_build_object('query', 'SELECT ' || i))))
        FROM generate_series(1, {n}) AS i
    """


async def _before_0085(
    conn: asyncpg.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    earlier = tmp_path / "migrations"
    earlier.mkdir()
    for path in sorted(migrate_module.MIGRATIONS_DIR.glob("*.sql")):
        if path.name < "0085":
            shutil.copy(path, earlier)
    monkeypatch.setattr(migrate_module, "MIGRATIONS_DIR", earlier)
    await migrate(conn)
    for month in ("2025-01-01", "2025-02-01", "2025-03-01"):
        await conn.execute("SELECT raw_events_ensure_partitions(ARRAY[$1::text::timestamptz])", month)
    monkeypatch.undo()


async def test_the_migration_converts_a_populated_table_without_losing_or_doubling_an_event(
    pg_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with empty_database(pg_server, "headwater_ops_payload_text") as url:
        conn = await asyncpg.connect(url)
        try:
            await _before_0085(conn, tmp_path, monkeypatch)
            await conn.execute(_rows(25_001))
            before = await conn.fetch(ROWS)
            partitions = await conn.fetch(PARTITIONS)
            assert await conn.fetchval("SELECT count(*) FROM raw_events_2025_01") > 20_000

            result = await migrate(conn)
            assert "0085_store_raw_payloads_as_text.sql" in result.applied

            # Every event once, with its id, and its payload as the text jsonb gave it.
            assert await conn.fetch(ROWS) == before
            assert (
                await conn.fetch(
                    "SELECT raw_event_id, content_hash, event_time, payload FROM raw_events ORDER BY 1"
                )
                == before
            )
            # The same partitions under the same names, each text (compressed with LZ4 since 0093,
            # which this migrate applies too); nothing left over.
            assert await conn.fetch(PARTITIONS) == partitions
            columns = await conn.fetch(
                "SELECT attrelid::regclass::text AS rel, atttypid::regtype::text AS type, attcompression::text"
                " FROM pg_attribute WHERE attname = 'payload'"
                " AND attrelid IN (SELECT relid FROM pg_partition_tree('raw_events'))"
            )
            assert {(c["type"], c["attcompression"]) for c in columns} == {
                ("text", await _lz4_or_pglz(conn))
            }
            assert len(columns) == len(partitions) + 1
            assert (
                await conn.fetchval(
                    "SELECT count(*) FROM pg_class WHERE relname LIKE 'raw\\_events\\_jsonb%'"
                )
                == 0
            )
            assert await conn.fetchval("SELECT to_regproc('raw_events_move_jsonb_batch')") is None
            assert await conn.fetchval("SELECT to_regclass('raw_events_2025_01_pkey')") is not None

            # Readers by field parse the converted text.
            assert await fetch_code_of_runs(
                conn, [uuid.UUID("00000000-0000-0000-0000-000000000042")]
            ) == {uuid.UUID("00000000-0000-0000-0000-000000000042"): RunCode("SELECT 42", "SQL")}

            # New events are numbered after the moved ones; the same content is refused.
            insert = (
                "INSERT INTO raw_events (content_hash, event_kind, event_time, payload)"
                " VALUES ($1, 'RUN', $2, '{}') RETURNING raw_event_id"
            )
            assert await conn.fetchval(insert, b"new", dt.datetime(2025, 1, 5, tzinfo=dt.UTC)) == 25_002
            with pytest.raises(asyncpg.UniqueViolationError):
                await conn.fetchval(insert, before[0]["content_hash"], before[0]["event_time"])
        finally:
            await conn.close()


async def test_an_interrupted_conversion_resumes_with_the_events_left(
    pg_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with empty_database(pg_server, "headwater_ops_payload_resume") as url:
        conn = await asyncpg.connect(url)
        try:
            await _before_0085(conn, tmp_path, monkeypatch)
            await conn.execute(_rows(12_000))
            before = await conn.fetch(ROWS)
            # The setup and one batch committed, then the process died.
            setup, _, rest = MIGRATION.read_text().partition("-- migrate:batch")
            batch = rest.partition("-- migrate:finish")[0]
            await conn.execute(setup)
            await conn.execute(batch)
            assert await conn.fetchval("SELECT count(*) FROM raw_events") == 10_000
            assert await conn.fetchval("SELECT count(*) FROM raw_events_jsonb") == 2_000
            # Ingest meanwhile stores into the new table, numbered after every old event.
            new = await conn.fetchval(
                "INSERT INTO raw_events (content_hash, event_kind, event_time, payload)"
                " VALUES ('\\x01', 'RUN', '2025-03-03Z', '{\"new\":true}') RETURNING raw_event_id"
            )
            assert new == 12_001

            await migrate(conn)
            after = await conn.fetch(ROWS)
            assert after[:-1] == before
            assert after[-1]["raw_event_id"] == new
            assert await conn.fetchval("SELECT to_regclass('raw_events_jsonb')") is None
        finally:
            await conn.close()


async def _lz4_or_pglz(conn: asyncpg.Connection) -> str:
    """The compression 0093 leaves payloads with: LZ4 ('l') where the server has it, else pglz."""
    try:
        await conn.execute("CREATE TEMP TABLE lz4_probe (t text COMPRESSION lz4); DROP TABLE lz4_probe")
    except asyncpg.FeatureNotSupportedError:
        return "p"
    return "l"


async def test_a_new_database_stores_text_compressed_with_lz4(ops: asyncpg.Connection) -> None:
    # 0085 made the column text compressed with pglz; 0093 moves it to LZ4, on every partition.
    expected = await _lz4_or_pglz(ops)
    assert (
        await ops.fetchval(
            "SELECT atttypid::regtype::text || ' ' || attcompression::text FROM pg_attribute"
            " WHERE attrelid = 'raw_events'::regclass AND attname = 'payload'"
        )
        == f"text {expected}"
    )
    # A partition made later, as ingest makes them, takes the parent's compression.
    await ops.execute("SELECT raw_events_create_partition('2031-05-01T00:00:00Z')")
    assert (
        await ops.fetchval(
            "SELECT count(*) FROM pg_attribute WHERE attname = 'payload' AND attcompression::text <> $1"
            " AND attrelid IN (SELECT relid FROM pg_partition_tree('raw_events'))",
            expected,
        )
        == 0
    )
    assert await ops.fetchval("SELECT to_regclass('raw_events_2031_05') IS NOT NULL")
