"""Datasets and jobs alike: identity, pages and counts, versions and soft deletes.

What the two share is written once, in SQL (catalog_nodes.sql over the functions of
catalog_functions.sql) and here, over the records they share (NodeRecord, VersionRecord). Every
function takes a ``NodeShape`` first, saying which kind is meant and how its rows become records
(the GraphQL loaders bind it with ``partial(f, DATASETS)``). What only one kind has (fields and
writers of datasets, children of jobs) is in datasets.py and jobs.py.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from headwater.db.queries import QUERIES
from headwater.errors import DatasetNotFoundError, JobNotFoundError, NotFoundError
from headwater.lineage.node_ids import format_node_id
from headwater.store.catalog.records import (
    DatasetRecord,
    DatasetVersionRecord,
    JobRecord,
    JobVersionRecord,
    NodeFilter,
    NodeKey,
    NodeKind,
    NodeOrder,
)
from headwater.store.catalog.rows import (
    dataset_from_row,
    dataset_version_from_row,
    filter_args,
    grouped,
    job_from_row,
    job_version_from_row,
    page_args,
)
from headwater.store.changes import Change, insert_changes

if TYPE_CHECKING:
    import asyncpg

R = TypeVar("R", DatasetRecord, JobRecord)
V = TypeVar("V", DatasetVersionRecord, JobVersionRecord)


@dataclass(frozen=True)
class NodeShape(Generic[R, V]):
    """One kind of versioned node: its name in SQL and the change log, and its records."""

    kind: NodeKind
    record: Callable[[Any], R]
    version: Callable[[Any], V]
    not_found: Callable[[str, str], NotFoundError]


DATASETS = NodeShape("DATASET", dataset_from_row, dataset_version_from_row, DatasetNotFoundError)
JOBS = NodeShape("JOB", job_from_row, job_version_from_row, JobNotFoundError)

# The query of each order (the only ORDER BY clauses a listing runs).
_PAGE_QUERIES: dict[NodeOrder, str] = {
    "NAME": "page_nodes",
    "HEAT": "page_nodes_by_heat",
    "UPDATED_AT": "page_nodes_by_updated_at",
}


async def fetch_nodes_by_keys(
    shape: NodeShape[R, V], conn: asyncpg.Connection, keys: list[tuple[str, str]]
) -> dict[tuple[str, str], R]:
    """Datasets or jobs by (namespace, name) as asked; an alias finds its dataset."""
    rows = await conn.fetch(
        QUERIES["fetch_nodes_by_keys"], shape.kind, [k[0] for k in keys], [k[1] for k in keys]
    )
    return {(r["asked_namespace"], r["asked_name"]): shape.record(r) for r in rows}


async def fetch_node(shape: NodeShape[R, V], conn: asyncpg.Connection, namespace: str, name: str) -> R:
    """One dataset or job by (namespace, name); its kind's NotFoundError when there is none."""
    found = (await fetch_nodes_by_keys(shape, conn, [(namespace, name)])).get((namespace, name))
    if found is None:
        raise shape.not_found(namespace, name)
    return found


async def fetch_nodes_by_uuids(
    shape: NodeShape[R, V], conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, R]:
    """Datasets or jobs by uuid."""
    rows = await conn.fetch(QUERIES["fetch_nodes_by_uuids"], shape.kind, uuids)
    return {r["node_uuid"]: shape.record(r) for r in rows}


async def page_nodes(
    shape: NodeShape[R, V],
    conn: asyncpg.Connection,
    f: NodeFilter,
    *,
    order: NodeOrder = "NAME",
    after: NodeKey | None,
    limit: int,
    offset: int = 0,
) -> list[R]:
    """Datasets or jobs in ``order`` (see NodeOrder), after a keyset (``page_key``) and/or an offset."""
    args = page_args(f, order, after, limit, offset)
    return [shape.record(r) for r in await conn.fetch(QUERIES[_PAGE_QUERIES[order]], shape.kind, *args)]


async def count_nodes(shape: NodeShape[R, V], conn: asyncpg.Connection, f: NodeFilter) -> int:
    """How many datasets or jobs the filter matches."""
    return int(await conn.fetchval(QUERIES["count_nodes"], shape.kind, *filter_args(f)))


async def count_nodes_by_namespaces(
    shape: NodeShape[R, V], conn: asyncpg.Connection, namespaces: list[str]
) -> dict[str, int]:
    """How many datasets or jobs (not deleted) each namespace holds; one without any is absent."""
    rows = await conn.fetch(QUERIES["count_nodes_by_namespaces"], shape.kind, namespaces)
    return {r["namespace"]: r["count"] for r in rows}


async def fetch_node_versions(
    shape: NodeShape[R, V], conn: asyncpg.Connection, uuids: list[uuid.UUID], limit: int
) -> dict[uuid.UUID, list[V]]:
    """The latest ``limit`` versions of each dataset or job, newest first."""
    rows = await conn.fetch(QUERIES["fetch_node_versions"], shape.kind, uuids, limit)
    return grouped(uuids, rows, "node_uuid", shape.version)


async def page_node_versions(
    shape: NodeShape[R, V], conn: asyncpg.Connection, node: uuid.UUID, *, limit: int, offset: int
) -> tuple[list[V], int]:
    """One page of a dataset's or job's versions, newest first, and how many it has in all."""
    rows = await conn.fetch(QUERIES["page_node_versions"], shape.kind, node, limit, offset)
    total = await conn.fetchval(QUERIES["count_node_versions"], shape.kind, node)
    return [shape.version(r) for r in rows], int(total)


async def fetch_node_version(
    shape: NodeShape[R, V], conn: asyncpg.Connection, node: uuid.UUID, version: str
) -> V | None:
    """The version of a dataset or job named by its version string or its uuid."""
    row = await conn.fetchrow(QUERIES["fetch_node_version"], shape.kind, node, version)
    return None if row is None else shape.version(row)


async def fetch_versions_by_uuids(
    shape: NodeShape[R, V], conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, V]:
    """Dataset or job versions by uuid."""
    rows = await conn.fetch(QUERIES["fetch_versions_by_uuids"], shape.kind, uuids)
    return {r["version_uuid"]: shape.version(r) for r in rows}


async def mark_node_deleted(
    shape: NodeShape[R, V],
    conn: asyncpg.Connection,
    namespace: str,
    name: str,
    *,
    deleted: bool,
    at: dt.datetime,
) -> R:
    """Soft-delete (``deleted``) or restore a dataset or job, logging <KIND>_DELETED / _RESTORED.

    Deleting a deleted node, or restoring one that is not, changes and logs nothing.
    """
    async with conn.transaction():
        node = await fetch_node(shape, conn, namespace, name)
        if await conn.fetchval(QUERIES["set_node_deleted"], shape.kind, node.node_uuid, deleted, at):
            change = f"{shape.kind}_DELETED" if deleted else f"{shape.kind}_RESTORED"
            node_id = format_node_id(shape.kind, node.namespace, node.name)
            await insert_changes(conn, [Change(change, node_id, node.namespace, at)])
        return (await fetch_nodes_by_uuids(shape, conn, [node.node_uuid]))[node.node_uuid]
