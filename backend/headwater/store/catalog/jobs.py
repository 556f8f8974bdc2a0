"""What only jobs have: their children, and jobs by the state of their latest run (what they
share with datasets is in nodes.py)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES
from headwater.store.catalog.records import JobRecord
from headwater.store.catalog.rows import grouped, job_from_row

if TYPE_CHECKING:
    import asyncpg


async def fetch_child_jobs(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[JobRecord]]:
    """The jobs whose parent is each of the given jobs."""
    rows = await conn.fetch(QUERIES["fetch_child_jobs"], uuids)
    return grouped(uuids, rows, "parent_job_uuid", job_from_row)


async def page_jobs_by_last_run_state(
    conn: asyncpg.Connection, states: list[str], *, limit: int, offset: int
) -> tuple[list[JobRecord], int]:
    """Jobs of every namespace whose latest run is in one of ``states`` (stored run states, OTHER
    for none), by (namespace, name), and how many there are in all."""
    rows = await conn.fetch(QUERIES["page_jobs_by_last_run_state"], states, limit, offset)
    total = await conn.fetchval(QUERIES["count_jobs_by_last_run_state"], states)
    return [job_from_row(r) for r in rows], int(total)
