"""Jobs and job versions."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    import asyncpg


@dataclass(frozen=True)
class JobRow:
    job_uuid: uuid.UUID
    node_id: int
    created: bool


async def upsert_job(
    conn: asyncpg.Connection,
    namespace: str,
    name: str,
    *,
    at: dt.datetime,
    parent_job_uuid: uuid.UUID | None = None,
    job_type: str | None = None,
    description: str | None = None,
    facets: dict[str, Any] | None = None,
    deleted_facets: list[str] | None = None,
) -> JobRow:
    """Create or touch a job; facets merge per key with the later eventTime winning."""
    row = await conn.fetchrow(
        QUERIES["upsert_job"],
        namespace,
        name,
        parent_job_uuid,
        job_type,
        description,
        facets or {},
        deleted_facets or [],
        at,
    )
    assert row is not None
    return JobRow(row["job_uuid"], row["node_id"], row["created"])


async def upsert_job_version(
    conn: asyncpg.Connection,
    job_uuid: uuid.UUID,
    version: str,
    input_uuids: list[uuid.UUID],
    output_uuids: list[uuid.UUID],
    code_hash: str | None,
    run_uuid: uuid.UUID | None,
    at: dt.datetime,
) -> tuple[uuid.UUID, bool]:
    """The job version with this hash: (uuid, created)."""
    row = await conn.fetchrow(
        QUERIES["upsert_job_version"],
        job_uuid,
        version,
        input_uuids,
        output_uuids,
        code_hash,
        run_uuid,
        at,
    )
    assert row is not None
    return row["job_version_uuid"], row["created"]


@dataclass(frozen=True)
class CurrentVersionMove:
    previous_version_uuid: uuid.UUID | None
    previous_version: str | None
    previous_input_uuids: list[uuid.UUID]
    previous_output_uuids: list[uuid.UUID]


async def set_current_job_version(
    conn: asyncpg.Connection,
    job_uuid: uuid.UUID,
    version_uuid: uuid.UUID,
    at: dt.datetime,
    run_uuid: uuid.UUID | None,
) -> CurrentVersionMove | None:
    """Make the version current if it is the latest by eventTime; None when a later one is current."""
    row = await conn.fetchrow(QUERIES["set_current_job_version"], job_uuid, version_uuid, at, run_uuid)
    if row is None:
        return None
    return CurrentVersionMove(
        row["previous_version_uuid"],
        row["previous_version"],
        list(row["previous_input_uuids"] or []),
        list(row["previous_output_uuids"] or []),
    )
