"""Catalog reads: namespaces, datasets, jobs, runs and their versions; soft delete and restore.

Every read takes lists of keys and answers in one query, so the API's DataLoaders cost one
statement per batch however many objects a response holds.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from headwater.db.queries import QUERIES
from headwater.errors import DatasetNotFoundError, JobNotFoundError, NotFoundError
from headwater.lineage.node_ids import format_node_id
from headwater.store.changes import Change, insert_changes

if TYPE_CHECKING:
    import asyncpg

NodeKind = Literal["DATASET", "JOB"]


class NamespaceNotFoundError(NotFoundError):
    code = "namespace_not_found"

    def __init__(self, name: str) -> None:
        super().__init__(f"Namespace '{name}' not found.")


@dataclass(frozen=True)
class NamespaceRecord:
    name: str
    created_at: dt.datetime
    updated_at: dt.datetime


@dataclass(frozen=True)
class DatasetRecord:
    dataset_uuid: uuid.UUID
    node_id: int
    namespace: str
    name: str
    source_name: str | None
    description: str | None
    facets: dict[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime
    current_version_uuid: uuid.UUID | None
    last_modified_at: dt.datetime | None
    deleted_at: dt.datetime | None


@dataclass(frozen=True)
class FieldRecord:
    dataset_uuid: uuid.UUID
    name: str
    type: str | None
    description: str | None
    position: int


@dataclass(frozen=True)
class DatasetVersionRecord:
    dataset_version_uuid: uuid.UUID
    dataset_uuid: uuid.UUID
    version: str
    schema_fields: list[dict[str, Any]] | None
    storage_version: str | None
    created_by_run_uuid: uuid.UUID | None
    created_at: dt.datetime


@dataclass(frozen=True)
class JobRecord:
    job_uuid: uuid.UUID
    node_id: int
    namespace: str
    name: str
    parent_job_uuid: uuid.UUID | None
    job_type: str | None
    description: str | None
    facets: dict[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime
    current_version_uuid: uuid.UUID | None
    latest_run_uuid: uuid.UUID | None
    deleted_at: dt.datetime | None
    manual: bool


@dataclass(frozen=True)
class JobVersionRecord:
    job_version_uuid: uuid.UUID
    job_uuid: uuid.UUID
    version: str
    input_uuids: list[uuid.UUID]
    output_uuids: list[uuid.UUID]
    code_hash: str | None
    created_by_run_uuid: uuid.UUID | None
    created_at: dt.datetime


@dataclass(frozen=True)
class RunRecord:
    run_uuid: uuid.UUID
    job_uuid: uuid.UUID
    job_version_uuid: uuid.UUID | None
    parent_run_uuid: uuid.UUID | None
    root_run_uuid: uuid.UUID | None
    state: str | None
    state_at: dt.datetime | None
    started_at: dt.datetime | None
    ended_at: dt.datetime | None
    nominal_start_time: dt.datetime | None
    nominal_end_time: dt.datetime | None
    error_message: str | None
    facets: dict[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime


@dataclass(frozen=True)
class RunStateRecord:
    run_uuid: uuid.UUID
    state: str
    event_time: dt.datetime


@dataclass(frozen=True)
class RunDatasetRecord:
    run_uuid: uuid.UUID
    dataset_uuid: uuid.UUID
    direction: Literal["INPUT", "OUTPUT"]
    dataset_version_uuid: uuid.UUID | None


@dataclass(frozen=True)
class SearchHit:
    kind: NodeKind
    namespace: str
    name: str
    updated_at: dt.datetime


@dataclass(frozen=True)
class NodeFilter:
    """Which datasets or jobs a listing shows: namespace, a name fragment (any case), deleted ones."""

    namespace: str | None = None
    name_contains: str | None = None
    include_deleted: bool = False


def like_fragment(text: str) -> str:
    """``text`` with LIKE's wildcards escaped, to match it literally inside '%...%'."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _filter_args(f: NodeFilter) -> tuple[str | None, str | None, bool]:
    fragment = like_fragment(f.name_contains) if f.name_contains else None
    return f.namespace, fragment, f.include_deleted


def _dataset(r: Any) -> DatasetRecord:
    return DatasetRecord(
        r["dataset_uuid"],
        r["node_id"],
        r["namespace"],
        r["name"],
        r["source_name"],
        r["description"],
        r["facets"] or {},
        r["created_at"],
        r["updated_at"],
        r["current_version_uuid"],
        r["current_version_at"],
        r["deleted_at"],
    )


def _job(r: Any) -> JobRecord:
    return JobRecord(
        r["job_uuid"],
        r["node_id"],
        r["namespace"],
        r["name"],
        r["parent_job_uuid"],
        r["job_type"],
        r["description"],
        r["facets"] or {},
        r["created_at"],
        r["updated_at"],
        r["current_version_uuid"],
        r["latest_run_uuid"],
        r["deleted_at"],
        r["manual"],
    )


def _run(r: Any) -> RunRecord:
    return RunRecord(
        r["run_uuid"],
        r["job_uuid"],
        r["job_version_uuid"],
        r["parent_run_uuid"],
        r["root_run_uuid"],
        r["current_state"],
        r["current_state_at"],
        r["started_at"],
        r["ended_at"],
        r["nominal_start_time"],
        r["nominal_end_time"],
        r["error_message"],
        r["facets"] or {},
        r["created_at"],
        r["updated_at"],
    )


def _dataset_version(r: Any) -> DatasetVersionRecord:
    return DatasetVersionRecord(
        r["dataset_version_uuid"],
        r["dataset_uuid"],
        r["version"],
        r["schema_fields"],
        r["storage_version"],
        r["created_by_run_uuid"],
        r["created_at"],
    )


def _job_version(r: Any) -> JobVersionRecord:
    return JobVersionRecord(
        r["job_version_uuid"],
        r["job_uuid"],
        r["version"],
        list(r["input_uuids"]),
        list(r["output_uuids"]),
        r["code_hash"],
        r["created_by_run_uuid"],
        r["created_at"],
    )


# -- namespaces ---------------------------------------------------------------------------------


async def list_namespaces(conn: asyncpg.Connection) -> list[NamespaceRecord]:
    """Every namespace, by name."""
    rows = await conn.fetch(QUERIES["list_namespaces"])
    return [NamespaceRecord(r["name"], r["created_at"], r["updated_at"]) for r in rows]


async def fetch_namespaces_by_names(
    conn: asyncpg.Connection, names: list[str]
) -> dict[str, NamespaceRecord]:
    """Namespaces by name; unknown names are absent."""
    rows = await conn.fetch(QUERIES["fetch_namespaces_by_names"], names)
    return {r["name"]: NamespaceRecord(r["name"], r["created_at"], r["updated_at"]) for r in rows}


# -- datasets -----------------------------------------------------------------------------------


async def fetch_datasets_by_keys(
    conn: asyncpg.Connection, keys: list[tuple[str, str]]
) -> dict[tuple[str, str], DatasetRecord]:
    """Datasets by (namespace, name) as asked; an alias finds its dataset."""
    rows = await conn.fetch(
        QUERIES["fetch_datasets_by_keys"], [k[0] for k in keys], [k[1] for k in keys]
    )
    return {(r["asked_namespace"], r["asked_name"]): _dataset(r) for r in rows}


async def fetch_datasets_by_uuids(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, DatasetRecord]:
    """Datasets by uuid."""
    rows = await conn.fetch(QUERIES["fetch_datasets_by_uuids"], uuids)
    return {r["dataset_uuid"]: _dataset(r) for r in rows}


async def page_datasets(
    conn: asyncpg.Connection,
    f: NodeFilter,
    *,
    after: tuple[str, str] | None,
    limit: int,
    offset: int = 0,
) -> list[DatasetRecord]:
    """Datasets by (namespace, name), after a keyset and/or an offset."""
    rows = await conn.fetch(
        QUERIES["page_datasets"],
        *_filter_args(f),
        after[0] if after else None,
        after[1] if after else None,
        limit,
        offset,
    )
    return [_dataset(r) for r in rows]


async def count_datasets(conn: asyncpg.Connection, f: NodeFilter) -> int:
    """How many datasets the filter matches."""
    return int(await conn.fetchval(QUERIES["count_datasets"], *_filter_args(f)))


async def fetch_fields_by_datasets(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[FieldRecord]]:
    """The current fields of datasets, in schema order."""
    out: dict[uuid.UUID, list[FieldRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_fields_by_datasets"], uuids):
        out[r["dataset_uuid"]].append(
            FieldRecord(r["dataset_uuid"], r["name"], r["type"], r["description"], r["position"])
        )
    return out


async def fetch_dataset_versions(
    conn: asyncpg.Connection, uuids: list[uuid.UUID], limit: int
) -> dict[uuid.UUID, list[DatasetVersionRecord]]:
    """The latest ``limit`` versions of each dataset, newest first."""
    out: dict[uuid.UUID, list[DatasetVersionRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_dataset_versions"], uuids, limit):
        out[r["dataset_uuid"]].append(_dataset_version(r))
    return out


async def fetch_dataset_versions_by_uuids(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, DatasetVersionRecord]:
    """Dataset versions by uuid."""
    rows = await conn.fetch(QUERIES["fetch_dataset_versions_by_uuids"], uuids)
    return {r["dataset_version_uuid"]: _dataset_version(r) for r in rows}


async def fetch_runs_writing_datasets(
    conn: asyncpg.Connection, uuids: list[uuid.UUID], limit: int
) -> dict[uuid.UUID, list[RunRecord]]:
    """The latest ``limit`` runs that wrote each dataset, newest first."""
    out: dict[uuid.UUID, list[RunRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_runs_writing_datasets"], uuids, limit):
        out[r["dataset_uuid"]].append(_run(r))
    return out


async def set_dataset_deleted(
    conn: asyncpg.Connection, namespace: str, name: str, *, deleted: bool, at: dt.datetime
) -> tuple[DatasetRecord, bool] | None:
    """Soft-delete or restore a dataset: (the dataset, whether it changed), None if there is none."""
    r = await conn.fetchrow(QUERIES["set_dataset_deleted"], namespace, name, deleted, at)
    return None if r is None else (_dataset(r), bool(r["changed"]))


# -- jobs and runs ------------------------------------------------------------------------------


async def fetch_jobs_by_keys(
    conn: asyncpg.Connection, keys: list[tuple[str, str]]
) -> dict[tuple[str, str], JobRecord]:
    """Jobs by (namespace, name)."""
    rows = await conn.fetch(QUERIES["fetch_jobs_by_keys"], [k[0] for k in keys], [k[1] for k in keys])
    return {(r["namespace"], r["name"]): _job(r) for r in rows}


async def fetch_jobs_by_uuids(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, JobRecord]:
    """Jobs by uuid."""
    rows = await conn.fetch(QUERIES["fetch_jobs_by_uuids"], uuids)
    return {r["job_uuid"]: _job(r) for r in rows}


async def fetch_child_jobs(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[JobRecord]]:
    """The jobs whose parent is each of the given jobs."""
    out: dict[uuid.UUID, list[JobRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_child_jobs"], uuids):
        out[r["parent_job_uuid"]].append(_job(r))
    return out


async def page_jobs(
    conn: asyncpg.Connection,
    f: NodeFilter,
    *,
    after: tuple[str, str] | None,
    limit: int,
    offset: int = 0,
) -> list[JobRecord]:
    """Jobs by (namespace, name), after a keyset and/or an offset."""
    rows = await conn.fetch(
        QUERIES["page_jobs"],
        *_filter_args(f),
        after[0] if after else None,
        after[1] if after else None,
        limit,
        offset,
    )
    return [_job(r) for r in rows]


async def count_jobs(conn: asyncpg.Connection, f: NodeFilter) -> int:
    """How many jobs the filter matches."""
    return int(await conn.fetchval(QUERIES["count_jobs"], *_filter_args(f)))


async def fetch_job_versions(
    conn: asyncpg.Connection, uuids: list[uuid.UUID], limit: int
) -> dict[uuid.UUID, list[JobVersionRecord]]:
    """The latest ``limit`` versions of each job, newest first."""
    out: dict[uuid.UUID, list[JobVersionRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_job_versions"], uuids, limit):
        out[r["job_uuid"]].append(_job_version(r))
    return out


async def fetch_job_versions_by_uuids(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, JobVersionRecord]:
    """Job versions by uuid."""
    rows = await conn.fetch(QUERIES["fetch_job_versions_by_uuids"], uuids)
    return {r["job_version_uuid"]: _job_version(r) for r in rows}


async def fetch_runs_by_uuids(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, RunRecord]:
    """Runs by uuid."""
    rows = await conn.fetch(QUERIES["fetch_runs_by_uuids"], uuids)
    return {r["run_uuid"]: _run(r) for r in rows}


async def fetch_runs_by_jobs(
    conn: asyncpg.Connection,
    uuids: list[uuid.UUID],
    limit: int,
    *,
    before: tuple[dt.datetime, uuid.UUID] | None = None,
) -> dict[uuid.UUID, list[RunRecord]]:
    """The latest ``limit`` runs of each job, newest first; older than ``before`` when given."""
    out: dict[uuid.UUID, list[RunRecord]] = {u: [] for u in uuids}
    rows = await conn.fetch(
        QUERIES["fetch_runs_by_jobs"],
        uuids,
        limit,
        before[0] if before else None,
        before[1] if before else None,
    )
    for r in rows:
        out[r["job_uuid"]].append(_run(r))
    return out


async def page_job_runs(
    conn: asyncpg.Connection, job_uuid: uuid.UUID, *, limit: int, offset: int
) -> list[RunRecord]:
    """One page of a job's runs, newest first."""
    return [_run(r) for r in await conn.fetch(QUERIES["page_job_runs"], job_uuid, limit, offset)]


async def count_job_runs(conn: asyncpg.Connection, job_uuid: uuid.UUID) -> int:
    """How many runs the job has."""
    return int(await conn.fetchval(QUERIES["count_job_runs"], job_uuid))


async def fetch_run_states(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[RunStateRecord]]:
    """Every state transition of runs, oldest first."""
    out: dict[uuid.UUID, list[RunStateRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_run_states"], uuids):
        out[r["run_uuid"]].append(RunStateRecord(r["run_uuid"], r["state"], r["event_time"]))
    return out


async def fetch_run_datasets_by_runs(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[RunDatasetRecord]]:
    """The datasets each run read and wrote."""
    out: dict[uuid.UUID, list[RunDatasetRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_run_datasets_by_runs"], uuids):
        out[r["run_uuid"]].append(
            RunDatasetRecord(r["run_uuid"], r["dataset_uuid"], r["direction"], r["dataset_version_uuid"])
        )
    return out


async def set_job_deleted(
    conn: asyncpg.Connection, namespace: str, name: str, *, deleted: bool, at: dt.datetime
) -> tuple[JobRecord, bool] | None:
    """Soft-delete or restore a job: (the job, whether it changed), None if there is none."""
    r = await conn.fetchrow(QUERIES["set_job_deleted"], namespace, name, deleted, at)
    return None if r is None else (_job(r), bool(r["changed"]))


# -- search -------------------------------------------------------------------------------------


SearchSort = Literal["RELEVANCE", "NAME", "UPDATE_AT"]


async def search_nodes(
    conn: asyncpg.Connection,
    text: str,
    *,
    namespace: str | None = None,
    kind: NodeKind | None = None,
    sort: SearchSort = "RELEVANCE",
    limit: int = 20,
) -> list[SearchHit]:
    """Datasets and jobs whose name contains ``text``, best matches first unless sorted otherwise."""
    rows = await conn.fetch(
        QUERIES["search_nodes"], like_fragment(text), namespace, limit, text, kind, sort
    )
    return [SearchHit(r["kind"], r["namespace"], r["name"], r["updated_at"]) for r in rows]


async def count_search_nodes(
    conn: asyncpg.Connection, text: str, *, namespace: str | None = None, kind: NodeKind | None = None
) -> int:
    """How many datasets and jobs search_nodes would find without a limit."""
    return int(await conn.fetchval(QUERIES["count_search_nodes"], like_fragment(text), namespace, kind))


# -- soft delete --------------------------------------------------------------------------------


async def mark_dataset_deleted(
    conn: asyncpg.Connection, namespace: str, name: str, *, deleted: bool, at: dt.datetime
) -> DatasetRecord:
    """Soft-delete (``deleted``) or restore a dataset, logging DATASET_DELETED / DATASET_RESTORED.

    Deleting a deleted dataset, or restoring one that is not, changes and logs nothing.
    """
    async with conn.transaction():
        found = await set_dataset_deleted(conn, namespace, name, deleted=deleted, at=at)
        if found is None:
            raise DatasetNotFoundError(namespace, name)
        record, changed = found
        if changed:
            kind = "DATASET_DELETED" if deleted else "DATASET_RESTORED"
            node = format_node_id("DATASET", record.namespace, record.name)
            await insert_changes(conn, [Change(kind, node, record.namespace, at)])
    return record


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
