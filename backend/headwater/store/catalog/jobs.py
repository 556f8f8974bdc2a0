"""What only jobs have: their children; and the job bindings of the shared catalog reads
(nodes.py) that loaders and other callers take as plain functions."""

from __future__ import annotations

import uuid
from functools import partial
from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES
from headwater.store.catalog.nodes import (
    JOBS,
    fetch_node_versions,
    fetch_nodes_by_keys,
    fetch_nodes_by_uuids,
    fetch_versions_by_uuids,
    mark_node_deleted,
)
from headwater.store.catalog.records import JobRecord
from headwater.store.catalog.rows import job_from_row

if TYPE_CHECKING:
    import asyncpg


# The shared reads and writes, bound to jobs.
fetch_jobs_by_keys = partial(fetch_nodes_by_keys, JOBS)
fetch_jobs_by_uuids = partial(fetch_nodes_by_uuids, JOBS)
fetch_job_versions = partial(fetch_node_versions, JOBS)
fetch_job_versions_by_uuids = partial(fetch_versions_by_uuids, JOBS)
mark_job_deleted = partial(mark_node_deleted, JOBS)


async def fetch_child_jobs(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[JobRecord]]:
    """The jobs whose parent is each of the given jobs."""
    out: dict[uuid.UUID, list[JobRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_child_jobs"], uuids):
        out[r["parent_job_uuid"]].append(job_from_row(r))
    return out


async def page_jobs_by_last_run_state(
    conn: asyncpg.Connection, states: list[str], *, limit: int, offset: int
) -> tuple[list[JobRecord], int]:
    """Jobs of every namespace whose latest run is in one of ``states`` (stored run states, OTHER
    for none), by (namespace, name), and how many there are in all."""
    rows = await conn.fetch(QUERIES["page_jobs_by_last_run_state"], states, limit, offset)
    total = await conn.fetchval(QUERIES["count_jobs_by_last_run_state"], states)
    return [job_from_row(r) for r in rows], int(total)
