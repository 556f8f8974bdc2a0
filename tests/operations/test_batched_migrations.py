"""The migration runner's batched migrations: setup, a batch repeated until it moves nothing, finish."""

from __future__ import annotations

import logging
from pathlib import Path

import asyncpg
import pytest

from headwater.db import migrate as migrate_module
from headwater.db.migrate import migrate
from headwater.errors import MigrationError
from tests.pg import empty_database

pytestmark = pytest.mark.db

MOVE = """
CREATE TABLE IF NOT EXISTS old_rows (id int PRIMARY KEY);
CREATE TABLE IF NOT EXISTS new_rows (id int PRIMARY KEY);
INSERT INTO old_rows SELECT generate_series(1, 10) ON CONFLICT DO NOTHING;
-- migrate:batch
WITH moved AS (DELETE FROM old_rows WHERE id IN (SELECT id FROM old_rows ORDER BY id LIMIT 3) RETURNING id)
INSERT INTO new_rows SELECT id FROM moved;
-- migrate:finish
DROP TABLE old_rows;
"""


async def test_a_batched_migration_moves_everything_and_says_so(
    pg_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "0001_move.sql").write_text(MOVE)
    monkeypatch.setattr(migrate_module, "MIGRATIONS_DIR", tmp_path)
    monkeypatch.setattr(migrate_module, "VIEWS_DIR", tmp_path / "none")
    async with empty_database(pg_server, "headwater_ops_batches") as url:
        conn = await asyncpg.connect(url)
        try:
            with caplog.at_level(logging.INFO, logger="headwater.db.migrate"):
                assert (await migrate(conn)).applied == ["0001_move.sql"]
            assert await conn.fetchval("SELECT count(*) FROM new_rows") == 10
            assert await conn.fetchval("SELECT to_regclass('old_rows')") is None
            assert "0001_move.sql rewrites a large table in batches" in caplog.text
            assert "0001_move.sql: 10 rows moved" in caplog.text
            assert (await migrate(conn)).applied == []
        finally:
            await conn.close()


async def test_a_batch_marker_without_its_finish_is_refused(
    pg_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "0001_broken.sql").write_text(MOVE.partition("-- migrate:finish")[0])
    monkeypatch.setattr(migrate_module, "MIGRATIONS_DIR", tmp_path)
    async with empty_database(pg_server, "headwater_ops_batches") as url:
        conn = await asyncpg.connect(url)
        try:
            with pytest.raises(MigrationError, match=r"0001_broken\.sql has a '-- migrate:batch' line"):
                await migrate(conn)
        finally:
            await conn.close()
