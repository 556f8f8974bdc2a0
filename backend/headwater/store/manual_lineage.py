"""Lineage declared by hand: manual edges, kept apart from observed ones and never closed by ingest.

The graph is bipartite (dataset -> job -> dataset), so a manual edge joins a dataset and a job:
dataset -> job is a READ, job -> dataset a WRITE. A dataset -> dataset flow goes through the
destination's manual job (``manual/<dataset name>``, in its namespace, marked manual): the source
is READ by it and it WRITEs the destination. Removing the last source of that job retires it.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from headwater.db.queries import QUERIES
from headwater.errors import AppError, InvalidRequestError, NotFoundError, checked_description, shown
from headwater.lineage.node_ids import MAX_NAME_BYTES, NodeType, format_node_id, utf8_length
from headwater.store.changes import Change, insert_changes

if TYPE_CHECKING:
    import asyncpg

MANUAL_JOB_PREFIX = "manual/"


class LineageEdgeExistsError(AppError):
    code = "lineage_edge_exists"
    status = 409
    title = "Edge exists"

    def __init__(self, origin: str, destination: str) -> None:
        super().__init__(
            f"An observed edge '{origin}' -> '{destination}' already exists; it cannot be declared."
        )


class ManualEdgeNotFoundError(NotFoundError):
    code = "manual_edge_not_found"

    def __init__(self, origin: str, destination: str) -> None:
        super().__init__(f"Manual edge '{origin}' -> '{destination}' not found.")


@dataclass(frozen=True)
class NodeRef:
    """A lineage node as the store knows it: its graph id, its kind, uuid and identity."""

    node_id: int
    node_type: NodeType
    uuid: uuid.UUID
    namespace: str
    name: str

    @property
    def id(self) -> str:
        return format_node_id(self.node_type, self.namespace, self.name)


@dataclass(frozen=True)
class ManualEdge:
    """A declared edge as asked for, the graph edges carrying it, and whether anything changed."""

    origin: str
    destination: str
    via: NodeRef | None  # the manual job of a dataset -> dataset edge
    edges: list[tuple[str, str]]
    changed: bool


@dataclass(frozen=True)
class ManualEdgeRecord:
    job_namespace: str
    job_name: str
    edge_type: Literal["READ", "WRITE"]
    dataset_namespace: str
    dataset_name: str
    description: str | None
    valid_from: dt.datetime

    @property
    def pair(self) -> tuple[str, str]:
        """(origin, destination) node ids."""
        job = format_node_id("JOB", self.job_namespace, self.job_name)
        dataset = format_node_id("DATASET", self.dataset_namespace, self.dataset_name)
        return (dataset, job) if self.edge_type == "READ" else (job, dataset)


async def fetch_node_refs(conn: asyncpg.Connection, node_ids: list[int]) -> dict[int, NodeRef]:
    """The dataset or job behind each graph node id."""
    rows = await conn.fetch(QUERIES["fetch_node_refs"], node_ids)
    return {
        r["node_id"]: NodeRef(r["node_id"], r["node_type"], r["uuid"], r["namespace"], r["name"])
        for r in rows
    }


async def fetch_manual_edges_of_jobs(
    conn: asyncpg.Connection, jobs: list[tuple[str, str]], as_of: dt.datetime | None = None
) -> dict[tuple[str, str], list[ManualEdgeRecord]]:
    """The manual edges of jobs (namespace, name), current or valid at ``as_of``."""
    out: dict[tuple[str, str], list[ManualEdgeRecord]] = {j: [] for j in jobs}
    rows = await conn.fetch(
        QUERIES["fetch_manual_edges_of_jobs"], [j[0] for j in jobs], [j[1] for j in jobs], as_of
    )
    for r in rows:
        out[(r["job_namespace"], r["job_name"])].append(
            ManualEdgeRecord(
                r["job_namespace"],
                r["job_name"],
                r["edge_type"],
                r["dataset_namespace"],
                r["dataset_name"],
                r["description"],
                r["valid_from"],
            )
        )
    return out


def _edge_kind(origin: NodeRef, destination: NodeRef) -> Literal["READ", "WRITE", "FLOW"]:
    if origin.node_type == "DATASET" and destination.node_type == "JOB":
        return "READ"
    if origin.node_type == "JOB" and destination.node_type == "DATASET":
        return "WRITE"
    if origin.node_type == "DATASET" and destination.node_type == "DATASET":
        if origin.node_id == destination.node_id:
            raise InvalidRequestError(f"A dataset cannot flow into itself: '{origin.id}'.")
        return "FLOW"
    raise InvalidRequestError(
        f"Jobs connect through datasets: declare '{origin.id}' -> dataset -> '{destination.id}' instead."
    )


def _graph_edge(src: NodeRef, dst: NodeRef) -> tuple[int, int, uuid.UUID, uuid.UUID, str]:
    """(src node, dst node, job uuid, dataset uuid, READ|WRITE) of a dataset-job edge."""
    if src.node_type == "DATASET":
        return src.node_id, dst.node_id, dst.uuid, src.uuid, "READ"
    return src.node_id, dst.node_id, src.uuid, dst.uuid, "WRITE"


async def _open_edge(
    conn: asyncpg.Connection, src: NodeRef, dst: NodeRef, description: str | None, at: dt.datetime
) -> bool:
    """Open a manual edge; False when the same manual edge is open already. Observed ones conflict."""
    s, d, job_uuid, dataset_uuid, edge_type = _graph_edge(src, dst)
    if await conn.fetchval(
        QUERIES["insert_manual_edge"], s, d, job_uuid, dataset_uuid, edge_type, description, at
    ):
        return True
    existing = await conn.fetchrow(QUERIES["fetch_open_edge"], s, d)
    if existing is not None and not existing["manual"]:
        raise LineageEdgeExistsError(src.id, dst.id)
    return False


async def _manual_job(
    conn: asyncpg.Connection, destination: NodeRef, at: dt.datetime
) -> tuple[NodeRef, bool]:
    name = MANUAL_JOB_PREFIX + destination.name
    if (length := utf8_length(name)) > MAX_NAME_BYTES:
        # Longer than any job ingest takes: its node id would name nothing the API can look up.
        raise InvalidRequestError(
            f"Dataset '{shown(destination.namespace)}'.'{shown(destination.name)}' has too long a "
            f"name for a manual job ('{MANUAL_JOB_PREFIX}' and its name take {length:,} "
            f"bytes in UTF-8, more than {MAX_NAME_BYTES:,}): declare the flow through a job, "
            "dataset -> job -> dataset."
        )
    row = await conn.fetchrow(
        QUERIES["upsert_manual_job"],
        destination.namespace,
        name,
        f"Declared lineage into '{destination.namespace}'.'{destination.name}'.",
        at,
    )
    assert row is not None
    if not row["manual"]:
        raise InvalidRequestError(
            f"Job '{destination.namespace}'.'{name}' exists and was not declared by hand."
        )
    return NodeRef(row["node_id"], "JOB", row["job_uuid"], destination.namespace, name), bool(
        row["created"]
    )


async def add_manual_edge(
    conn: asyncpg.Connection,
    origin: NodeRef,
    destination: NodeRef,
    *,
    description: str | None,
    at: dt.datetime,
) -> ManualEdge:
    """Declare origin -> destination (dataset -> job, job -> dataset or dataset -> dataset).

    Declaring an edge that is already declared changes nothing; one that was observed is a
    LineageEdgeExistsError. A MANUAL_EDGE_ADDED change (and JOB_CREATED for a new manual job) is
    logged in the same transaction.
    """
    checked_description(description, "a manual edge")
    kind = _edge_kind(origin, destination)
    changes: list[Change] = []
    async with conn.transaction():
        if kind == "FLOW":
            job, created = await _manual_job(conn, destination, at)
            if created:
                changes.append(Change("JOB_CREATED", job.id, job.namespace, at, {"manual": True}))
            hops = [(origin, job), (job, destination)]
        else:
            job, hops = None, [(origin, destination)]
            # An edge of a flow's manual job, declared directly, locks the job as a flow does: a
            # flow's removal counting what the job reads meanwhile would retire it under this edge.
            for end in (origin, destination):
                if end.node_type == "JOB" and end.name.startswith(MANUAL_JOB_PREFIX):
                    await conn.fetchrow(QUERIES["lock_manual_job"], end.namespace, end.name)
        opened = [(s.id, d.id) for s, d in hops if await _open_edge(conn, s, d, description, at)]
        if opened:
            changes.append(
                _edge_change("MANUAL_EDGE_ADDED", origin, destination, job, opened, description, at)
            )
        await insert_changes(conn, changes)
    return ManualEdge(
        origin.id, destination.id, job, [(s.id, d.id) for s, d in hops], changed=bool(opened)
    )


async def remove_manual_edge(
    conn: asyncpg.Connection, origin: NodeRef, destination: NodeRef, *, at: dt.datetime
) -> ManualEdge:
    """Close a declared edge (ManualEdgeNotFoundError if there is none); observed edges stay.

    For a dataset -> dataset flow, the manual job's write into the destination is closed too once
    it reads from nothing, and the job is retired.
    """
    kind = _edge_kind(origin, destination)
    async with conn.transaction():
        job = None
        if kind == "FLOW":
            name = MANUAL_JOB_PREFIX + destination.name
            # Locked before its reads are counted: a flow into the same dataset added meanwhile
            # (which locks the job first too) would otherwise be left reading into a retired job
            # that writes nowhere.
            found = await conn.fetchrow(QUERIES["lock_manual_job"], destination.namespace, name)
            if found is None:
                raise ManualEdgeNotFoundError(origin.id, destination.id)
            job = NodeRef(found["node_id"], "JOB", found["job_uuid"], destination.namespace, name)
            first = (origin, job)
        else:
            first = (origin, destination)
        if (
            await conn.fetchrow(QUERIES["close_manual_edge"], first[0].node_id, first[1].node_id, at)
            is None
        ):
            raise ManualEdgeNotFoundError(origin.id, destination.id)
        closed = [(first[0].id, first[1].id)]
        if job is not None and not await conn.fetchval(QUERIES["count_open_manual_reads"], job.uuid):
            if await conn.fetch(QUERIES["close_manual_job_writes"], job.uuid, at):
                closed.append((job.id, destination.id))
            await conn.execute(QUERIES["retire_manual_job"], job.uuid, at)
        await insert_changes(
            conn, [_edge_change("MANUAL_EDGE_REMOVED", origin, destination, job, closed, None, at)]
        )
    return ManualEdge(origin.id, destination.id, job, closed, changed=True)


def _edge_change(
    kind: str,
    origin: NodeRef,
    destination: NodeRef,
    job: NodeRef | None,
    edges: list[tuple[str, str]],
    description: str | None,
    at: dt.datetime,
) -> Change:
    details: dict[str, Any] = {
        "origin": origin.id,
        "destination": destination.id,
        "via": job.id if job else None,
        "edges": [{"origin": o, "destination": d} for o, d in edges],
    }
    if description is not None:
        details["description"] = description
    return Change(kind, destination.id, destination.namespace, at, details)
