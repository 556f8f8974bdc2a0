"""Datasets: by key or uuid, pages and counts, fields, versions, writers; soft delete and restore."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES
from headwater.errors import DatasetNotFoundError
from headwater.lineage.node_ids import format_node_id
from headwater.store.catalog.records import (
    DatasetRecord,
    DatasetVersionRecord,
    FieldRecord,
    NodeFilter,
    NodeKey,
    NodeOrder,
    RunRecord,
)
from headwater.store.catalog.rows import (
    dataset_from_row,
    dataset_version_from_row,
    filter_args,
    page_args,
    run_from_row,
)
from headwater.store.changes import Change, insert_changes

if TYPE_CHECKING:
    import asyncpg


async def fetch_datasets_by_keys(
    conn: asyncpg.Connection, keys: list[tuple[str, str]]
) -> dict[tuple[str, str], DatasetRecord]:
    """Datasets by (namespace, name) as asked; an alias finds its dataset."""
    rows = await conn.fetch(
        QUERIES["fetch_datasets_by_keys"], [k[0] for k in keys], [k[1] for k in keys]
    )
    return {(r["asked_namespace"], r["asked_name"]): dataset_from_row(r) for r in rows}


async def fetch_datasets_by_uuids(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, DatasetRecord]:
    """Datasets by uuid."""
    rows = await conn.fetch(QUERIES["fetch_datasets_by_uuids"], uuids)
    return {r["dataset_uuid"]: dataset_from_row(r) for r in rows}


# The query of each order (the only ORDER BY clauses a listing runs).
_PAGE_QUERIES: dict[NodeOrder, str] = {
    "NAME": "page_datasets",
    "HEAT": "page_datasets_by_heat",
    "UPDATED_AT": "page_datasets_by_updated_at",
}


async def page_datasets(
    conn: asyncpg.Connection,
    f: NodeFilter,
    *,
    order: NodeOrder = "NAME",
    after: NodeKey | None,
    limit: int,
    offset: int = 0,
) -> list[DatasetRecord]:
    """Datasets in ``order`` (see NodeOrder), after a keyset (from ``page_key``) and/or an offset."""
    rows = await conn.fetch(QUERIES[_PAGE_QUERIES[order]], *page_args(f, order, after, limit, offset))
    return [dataset_from_row(r) for r in rows]


async def count_datasets(conn: asyncpg.Connection, f: NodeFilter) -> int:
    """How many datasets the filter matches."""
    return int(await conn.fetchval(QUERIES["count_datasets"], *filter_args(f)))


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
        out[r["dataset_uuid"]].append(dataset_version_from_row(r))
    return out


async def fetch_dataset_versions_by_uuids(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, DatasetVersionRecord]:
    """Dataset versions by uuid."""
    rows = await conn.fetch(QUERIES["fetch_dataset_versions_by_uuids"], uuids)
    return {r["dataset_version_uuid"]: dataset_version_from_row(r) for r in rows}


async def fetch_runs_writing_datasets(
    conn: asyncpg.Connection, uuids: list[uuid.UUID], limit: int
) -> dict[uuid.UUID, list[RunRecord]]:
    """The latest ``limit`` runs that wrote each dataset, newest first."""
    out: dict[uuid.UUID, list[RunRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_runs_writing_datasets"], uuids, limit):
        out[r["dataset_uuid"]].append(run_from_row(r))
    return out


async def set_dataset_deleted(
    conn: asyncpg.Connection, namespace: str, name: str, *, deleted: bool, at: dt.datetime
) -> tuple[DatasetRecord, bool] | None:
    """Soft-delete or restore a dataset: (the dataset, whether it changed), None if there is none."""
    r = await conn.fetchrow(QUERIES["set_dataset_deleted"], namespace, name, deleted, at)
    return None if r is None else (dataset_from_row(r), bool(r["changed"]))


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
