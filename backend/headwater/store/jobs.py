"""Jobs and job versions."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from headwater.db.pool import json_text
from headwater.db.queries import QUERIES
from headwater.store.edges import EdgeChange
from headwater.store.facets import delete_reported_facets

if TYPE_CHECKING:
    import asyncpg


@dataclass(frozen=True)
class JobRow:
    job_uuid: uuid.UUID
    node_id: int
    created: bool


# The functions below are batch operations (see ``headwater.ingest.rounds``): the requests of several
# events, one statement, one result per request.


@dataclass(frozen=True)
class JobUpsert:
    namespace: str
    name: str
    at: dt.datetime
    # The parent job (namespace, name), upserted before it in the same request.
    parent: tuple[str, str] | None = None
    job_type: str | None = None
    description: str | None = None
    facets: dict[str, Any] = field(default_factory=dict)
    deleted_facets: list[str] = field(default_factory=list)


async def upsert_jobs(conn: asyncpg.Connection, requests: list[list[JobUpsert]]) -> list[list[JobRow]]:
    """Create or touch jobs; facets merge per key with the later eventTime winning. A job may name a
    parent upserted in the same request."""
    items = [item for request in requests for item in request]
    rows = await conn.fetch(
        QUERIES["upsert_jobs"],
        [r.namespace for r in items],
        [r.name for r in items],
        [r.parent[0] if r.parent else None for r in items],
        [r.parent[1] if r.parent else None for r in items],
        [r.job_type for r in items],
        [r.description for r in items],
        [r.facets for r in items],
        [r.at for r in items],
        [uuid.uuid4() for _ in items],
    )
    await delete_reported_facets(
        conn, [("JOB", r.namespace, r.name, r.deleted_facets, r.at) for r in items if r.deleted_facets]
    )
    found = {
        (r["namespace"], r["name"]): JobRow(r["job_uuid"], r["node_id"], r["created"]) for r in rows
    }
    missing = sorted({(r.namespace, r.name) for r in items} - found.keys())
    if missing:
        # Created by a concurrent transaction after the upsert's snapshot was taken.
        for r in await _fetch_by_identity(conn, missing):
            found[(r["namespace"], r["name"])] = JobRow(r["job_uuid"], r["node_id"], False)
    return [[found[(r.namespace, r.name)] for r in request] for request in requests]


async def find_jobs_created(
    conn: asyncpg.Connection, identities: list[tuple[str, str]]
) -> dict[tuple[str, str], dt.datetime]:
    """When each of the given jobs that is stored was created (its earliest eventTime)."""
    rows = await _fetch_by_identity(conn, identities)
    return {(r["namespace"], r["name"]): r["created_at"] for r in rows}


async def _fetch_by_identity(
    conn: asyncpg.Connection, identities: list[tuple[str, str]]
) -> list[asyncpg.Record]:
    """The stored jobs among the given (namespace, name) identities."""
    rows: list[asyncpg.Record] = await conn.fetch(
        QUERIES["fetch_jobs_by_identity"], [i[0] for i in identities], [i[1] for i in identities]
    )
    return rows


@dataclass(frozen=True)
class JobVersionUpsert:
    job_uuid: uuid.UUID
    version: str
    input_uuids: list[uuid.UUID]
    output_uuids: list[uuid.UUID]
    code_hash: str | None
    run_uuid: uuid.UUID | None
    at: dt.datetime


async def upsert_job_versions(
    conn: asyncpg.Connection, requests: list[JobVersionUpsert]
) -> list[tuple[uuid.UUID, bool]]:
    """The job version with each hash: (uuid, created)."""
    rows = await conn.fetch(
        QUERIES["upsert_job_versions"],
        [r.job_uuid for r in requests],
        [r.version for r in requests],
        [json_text(r.input_uuids) for r in requests],
        [json_text(r.output_uuids) for r in requests],
        [r.code_hash for r in requests],
        [r.run_uuid for r in requests],
        [r.at for r in requests],
    )
    found = {r["job_uuid"]: (r["job_version_uuid"], r["created"]) for r in rows}
    same = [r for r in requests if r.job_uuid not in found]
    if same:
        rows = await conn.fetch(
            QUERIES["fetch_job_versions"], [r.job_uuid for r in same], [r.version for r in same]
        )
        found.update({r["job_uuid"]: (r["job_version_uuid"], False) for r in rows})
    return [found[r.job_uuid] for r in requests]


@dataclass(frozen=True)
class CurrentVersionMove:
    """A job whose current version moved: the version before, and the edges the move closed."""

    previous_version_uuid: uuid.UUID | None
    previous_version: str | None
    previous_input_uuids: list[uuid.UUID]
    previous_output_uuids: list[uuid.UUID]
    closed_edges: list[EdgeChange]


@dataclass(frozen=True)
class VersionWritten:
    """A job version computed from a completed run's datasets (or a job event's), to be made the
    job's current version if the run is the job's latest: with the datasets it reads and writes,
    and the outputs whose column lineage the run reported, as (dataset uuids, derived)."""

    job_uuid: uuid.UUID
    version_uuid: uuid.UUID
    at: dt.datetime
    run_uuid: uuid.UUID | None
    input_uuids: list[uuid.UUID]
    output_uuids: list[uuid.UUID]
    column_outputs: list[tuple[list[uuid.UUID], bool]]


async def set_job_versions(
    conn: asyncpg.Connection, requests: list[VersionWritten]
) -> list[CurrentVersionMove | None]:
    """Move current versions, closing the edges and column edges the new version no longer has;
    None where the current version did not move (a later run already defined the job)."""
    rows = await conn.fetch(
        QUERIES["set_job_versions"],
        [r.job_uuid for r in requests],
        [r.version_uuid for r in requests],
        [r.at for r in requests],
        [r.run_uuid for r in requests],
        [json_text(r.input_uuids) for r in requests],
        [json_text(r.output_uuids) for r in requests],
        [
            json_text(
                [{"outputs": outputs, "derived": derived} for outputs, derived in r.column_outputs]
            )
            for r in requests
        ],
    )
    closed: dict[uuid.UUID, list[EdgeChange]] = {}
    for row in rows:
        if not row["moved"]:
            closed.setdefault(row["job_uuid"], []).append(EdgeChange.of(row))
    moved = {
        row["job_uuid"]: CurrentVersionMove(
            row["previous_version_uuid"],
            row["previous_version"],
            list(row["previous_input_uuids"] or []),
            list(row["previous_output_uuids"] or []),
            closed.get(row["job_uuid"], []),
        )
        for row in rows
        if row["moved"]
    }
    return [moved.get(r.job_uuid) for r in requests]
