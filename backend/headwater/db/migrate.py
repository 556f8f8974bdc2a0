"""Forward-only SQL migrations with checksums, then views and functions re-created.

Files in ``migrations/`` are applied once, in name order, each in its own transaction, and recorded
with a SHA-256 checksum; an applied file that changed stops the run. Files in ``views/`` are
re-applied after every run (``CREATE OR REPLACE``), so they may be edited freely.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from headwater.errors import MigrationError

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
VIEWS_DIR = Path(__file__).parent / "views"

# Any fixed 64-bit number: serializes concurrent `migrate` runs (several replicas starting at once).
_LOCK_KEY = 0x4845_4144_5741_5452


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
            async with conn.transaction():
                await conn.execute(text)
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
