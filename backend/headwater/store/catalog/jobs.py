"""Jobs: by key or uuid, children, pages and counts, versions; soft delete and restore."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES
from headwater.errors import JobNotFoundError
from headwater.lineage.node_ids import format_node_id
from headwater.store.catalog.records import JobRecord, JobVersionRecord, NodeFilter, NodeKey, NodeOrder
from headwater.store.catalog.rows import filter_args, job_from_row, job_version_from_row, page_args
from headwater.store.changes import Change, insert_changes

if TYPE_CHECKING:
    import asyncpg


async def fetch_jobs_by_keys(
    conn: asyncpg.Connection, keys: list[tuple[str, str]]
) -> dict[tuple[str, str], JobRecord]:
    """Jobs by (namespace, name)."""
    rows = await conn.fetch(QUERIES["fetch_jobs_by_keys"], [k[0] for k in keys], [k[1] for k in keys])
    return {(r["namespace"], r["name"]): job_from_row(r) for r in rows}


async def fetch_jobs_by_uuids(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, JobRecord]:
    """Jobs by uuid."""
    rows = await conn.fetch(QUERIES["fetch_jobs_by_uuids"], uuids)
    return {r["job_uuid"]: job_from_row(r) for r in rows}


async def fetch_child_jobs(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[JobRecord]]:
    """The jobs whose parent is each of the given jobs."""
    out: dict[uuid.UUID, list[JobRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_child_jobs"], uuids):
        out[r["parent_job_uuid"]].append(job_from_row(r))
    return out


# The query of each order (the only ORDER BY clauses a listing runs).
_PAGE_QUERIES: dict[NodeOrder, str] = {
    "NAME": "page_jobs",
    "HEAT": "page_jobs_by_heat",
    "UPDATED_AT": "page_jobs_by_updated_at",
}


async def page_jobs(
    conn: asyncpg.Connection,
    f: NodeFilter,
    *,
    order: NodeOrder = "NAME",
    after: NodeKey | None,
    limit: int,
    offset: int = 0,
) -> list[JobRecord]:
    """Jobs in ``order`` (see NodeOrder), after a keyset (from ``page_key``) and/or an offset."""
    rows = await conn.fetch(QUERIES[_PAGE_QUERIES[order]], *page_args(f, order, after, limit, offset))
    return [job_from_row(r) for r in rows]


async def count_jobs(conn: asyncpg.Connection, f: NodeFilter) -> int:
    """How many jobs the filter matches."""
    return int(await conn.fetchval(QUERIES["count_jobs"], *filter_args(f)))


async def fetch_job_versions(
    conn: asyncpg.Connection, uuids: list[uuid.UUID], limit: int
) -> dict[uuid.UUID, list[JobVersionRecord]]:
    """The latest ``limit`` versions of each job, newest first."""
    out: dict[uuid.UUID, list[JobVersionRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_job_versions"], uuids, limit):
        out[r["job_uuid"]].append(job_version_from_row(r))
    return out


async def fetch_job_versions_by_uuids(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, JobVersionRecord]:
    """Job versions by uuid."""
    rows = await conn.fetch(QUERIES["fetch_job_versions_by_uuids"], uuids)
    return {r["job_version_uuid"]: job_version_from_row(r) for r in rows}


async def set_job_deleted(
    conn: asyncpg.Connection, namespace: str, name: str, *, deleted: bool, at: dt.datetime
) -> tuple[JobRecord, bool] | None:
    """Soft-delete or restore a job: (the job, whether it changed), None if there is none."""
    r = await conn.fetchrow(QUERIES["set_job_deleted"], namespace, name, deleted, at)
    return None if r is None else (job_from_row(r), bool(r["changed"]))


async def mark_job_deleted(
    conn: asyncpg.Connection, namespace: str, name: str, *, deleted: bool, at: dt.datetime
) -> JobRecord:
    """Soft-delete (``deleted``) or restore a job, logging JOB_DELETED / JOB_RESTORED."""
    async with conn.transaction():
        found = await set_job_deleted(conn, namespace, name, deleted=deleted, at=at)
        if found is None:
            raise JobNotFoundError(namespace, name)
        record, changed = found
        if changed:
            kind = "JOB_DELETED" if deleted else "JOB_RESTORED"
            node = format_node_id("JOB", record.namespace, record.name)
            await insert_changes(conn, [Change(kind, node, record.namespace, at)])
    return record
