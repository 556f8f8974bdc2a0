"""The code of a job version: the SQL or source its first run reported, read from that run's raw
events (the job's facets keep only the latest code)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    import asyncpg


@dataclass(frozen=True)
class RunCode:
    """A run's SQL (language: its dialect, else "SQL") or source code (language as reported)."""

    text: str
    language: str


async def fetch_code_of_runs(
    conn: asyncpg.Connection, runs: list[uuid.UUID]
) -> dict[uuid.UUID, RunCode]:
    """The code each run reported, for the runs whose stored events carry some."""
    rows = await conn.fetch(QUERIES["fetch_code_of_runs"], runs)
    return {r["run_uuid"]: RunCode(r["code"], r["language"]) for r in rows}
