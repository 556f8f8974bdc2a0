"""Runs: by uuid, the latest of jobs, pages of one job's runs, state history and datasets touched."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES
from headwater.store.catalog.records import RunDatasetRecord, RunRecord, RunStateRecord
from headwater.store.catalog.rows import grouped, run_dataset_from_row, run_from_row, run_state_from_row

if TYPE_CHECKING:
    import asyncpg


async def fetch_runs_by_uuids(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, RunRecord]:
    """Runs by uuid."""
    rows = await conn.fetch(QUERIES["fetch_runs_by_uuids"], uuids)
    return {r["run_uuid"]: run_from_row(r) for r in rows}


async def fetch_runs_by_jobs(
    conn: asyncpg.Connection,
    uuids: list[uuid.UUID],
    limit: int,
    *,
    before: tuple[dt.datetime, uuid.UUID] | None = None,
) -> dict[uuid.UUID, list[RunRecord]]:
    """The latest ``limit`` runs of each job, newest first; older than ``before`` when given."""
    rows = await conn.fetch(
        QUERIES["fetch_runs_by_jobs"],
        uuids,
        limit,
        before[0] if before else None,
        before[1] if before else None,
    )
    return grouped(uuids, rows, "job_uuid", run_from_row)


async def page_job_runs(
    conn: asyncpg.Connection, job_uuid: uuid.UUID, *, limit: int, offset: int
) -> list[RunRecord]:
    """One page of a job's runs, newest first."""
    return [run_from_row(r) for r in await conn.fetch(QUERIES["page_job_runs"], job_uuid, limit, offset)]


async def count_job_runs(conn: asyncpg.Connection, job_uuid: uuid.UUID) -> int:
    """How many runs the job has."""
    return int(await conn.fetchval(QUERIES["count_job_runs"], job_uuid))


async def fetch_run_states(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[RunStateRecord]]:
    """Every state transition of runs, oldest first."""
    rows = await conn.fetch(QUERIES["fetch_run_states"], uuids)
    return grouped(uuids, rows, "run_uuid", run_state_from_row)


async def fetch_run_datasets_by_runs(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[RunDatasetRecord]]:
    """The datasets each run read and wrote."""
    rows = await conn.fetch(QUERIES["fetch_run_datasets_by_runs"], uuids)
    return grouped(uuids, rows, "run_uuid", run_dataset_from_row)
