"""Forward-only SQL migrations with checksums, then views and functions re-created.

Files in ``migrations/`` are applied once, in name order, each in its own transaction, and recorded
with a SHA-256 checksum; an applied file that changed stops the run. Files in ``views/`` are
re-applied after every run (``CREATE OR REPLACE``), so they may be edited freely.

A migration that rewrites a large table must not do it in one transaction (twice the table's size
held until commit, and nothing to show for hours of work if it is interrupted). Such a file is in
three parts: its setup, then a line ``-- migrate:batch`` and one statement that moves a bounded
batch of rows, then a line ``-- migrate:finish`` and what completes it. The setup runs in its own
transaction, the batch statement again and again, each time in its own transaction, until it
touches no row, and the finish in the transaction that records the migration. A run interrupted
anywhere resumes where it stopped, so the setup must be safe to run again.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from headwater.errors import MigrationError

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
VIEWS_DIR = Path(__file__).parent / "views"

# Any fixed 64-bit number: serializes concurrent `migrate` runs (several replicas starting at once).
_LOCK_KEY = 0x4845_4144_5741_5452
_BATCH = "-- migrate:batch"
_FINISH = "-- migrate:finish"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MigrationResult:
    """What one migrate run did."""

    applied: list[str]
    already_applied: int


def _checksum(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def migrate(conn: asyncpg.Connection) -> MigrationResult:
    """Apply pending migrations and re-create views; safe to run from several processes at once."""
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        await conn.execute(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                name text PRIMARY KEY,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """
        )
        applied = {
            r["name"]: r["checksum"]
            for r in await conn.fetch("SELECT name, checksum FROM schema_migrations")
        }
        done: list[str] = []
        for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
            text = path.read_text()
            checksum = _checksum(text)
            if path.name in applied:
                if applied[path.name] != checksum:
                    raise MigrationError(
                        f"Migration {path.name} was changed after it was applied "
                        f"(recorded checksum {applied[path.name][:12]}, file {checksum[:12]}). "
                        "Applied migrations must never be edited; add a new one instead."
                    )
                continue
            finish = text
            if _BATCH in text:
                finish = await _run_batches(conn, path.name, text)
            async with conn.transaction():
                await conn.execute(finish)
                await conn.execute(
                    "INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)", path.name, checksum
                )
            done.append(path.name)
        for path in sorted(VIEWS_DIR.glob("*.sql")):
            async with conn.transaction():
                await conn.execute(path.read_text())
        return MigrationResult(applied=done, already_applied=len(applied))
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)


async def _run_batches(conn: asyncpg.Connection, name: str, text: str) -> str:
    """Run the setup and the batches of a batched migration; returns its finishing part."""
    setup, _, rest = text.partition(_BATCH)
    batch, found, finish = rest.partition(_FINISH)
    if not found or not batch.strip():
        raise MigrationError(
            f"Migration {name} has a '{_BATCH}' line but no batch statement followed by '{_FINISH}'."
        )
    async with conn.transaction():
        await conn.execute(setup)
    moved = 0
    while True:
        async with conn.transaction():
            status = await conn.execute(batch)
        # A command tag ends with the number of rows the statement touched ("INSERT 0 10000").
        rows = int(status.rsplit(" ", 1)[-1])
        if rows == 0:
            break
        if not moved:
            log.warning("migration %s rewrites a large table in batches; this can take a while", name)
        moved += rows
        log.info("migration %s: %d rows moved", name, moved)
    return finish
