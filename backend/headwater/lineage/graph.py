"""Table-level lineage: resolve roots, walk the graph, load the nodes and the edges between them.

Depth counts the jobs on a path from the root, the root not counted: from a dataset, depth 1
upstream is the jobs that write it and the datasets they read; from a job, depth 0 downstream is its
outputs and depth 1 adds the jobs reading them and their outputs. The walk is directed: UPSTREAM
follows edges backwards, DOWNSTREAM forwards, BOTH is the union of the two walks.
"""

from __future__ import annotations

import datetime as dt

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from headwater.db.queries import QUERIES
from headwater.errors import NodeNotFoundError
from headwater.lineage.node_ids import NodeType, format_node_id, parse_node_id

if TYPE_CHECKING:
    import asyncpg

Direction = Literal["UPSTREAM", "DOWNSTREAM", "BOTH"]


@dataclass(frozen=True)
class Root:
    node_id: int
    node_type: NodeType
    namespace: str
    name: str


@dataclass
class LineageNode:
    id: str
    type: NodeType
    namespace: str
    name: str
    hops: int
    data: dict[str, Any]
    in_edges: list[tuple[str, str]] = field(default_factory=list)
    out_edges: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class LineageGraph:
    roots: list[Root]
    nodes: list[LineageNode]
    edges: list[tuple[str, str]]
    truncated: bool = False


async def resolve_root(conn: asyncpg.Connection, node_id: str) -> Root:
    """Find the dataset or job a node id names (aliases included); NodeNotFoundError if none."""
    parsed = parse_node_id(node_id)
    namespaces = [c[0] for c in parsed.candidates]
    names = [c[1] for c in parsed.candidates]
    if parsed.node_type == "DATASET":
        rows = await conn.fetch(QUERIES["resolve_dataset_ids"], namespaces, names)
    else:
        rows = await conn.fetch(QUERIES["resolve_job_ids"], namespaces, names)
    if not rows:
        raise NodeNotFoundError(node_id)
    # Several splits can match (a name containing ':'): the longest namespace is the most specific.
    row = max(rows, key=lambda r: len(r.get("asked_namespace") or r["namespace"]))
    return Root(row["node_id"], parsed.node_type, row["namespace"], row["name"])


def hop_limit(root: Root, depth: int) -> int:
    """Edges to walk for a depth counted in jobs: 2 per job, plus the first hop out of a job root."""
    return 2 * depth + (1 if root.node_type == "JOB" else 0)


async def fetch_lineage(
    conn: asyncpg.Connection,
    node_ids: list[str],
    *,
    depth: int,
    direction: Direction = "BOTH",
    as_of: dt.datetime | None = None,
) -> LineageGraph:
    """The lineage graph around one or more roots (their union), current or as of a time."""
    roots = [await resolve_root(conn, node_id) for node_id in node_ids]
    reached = await conn.fetch(
        QUERIES["walk_lineage"],
        [r.node_id for r in roots],
        [hop_limit(r, depth) for r in roots],
        direction in ("DOWNSTREAM", "BOTH"),
        direction in ("UPSTREAM", "BOTH"),
        as_of,
    )
    hops = {r["node_id"]: r["hops"] for r in reached}
    return await load_graph(conn, roots, hops, as_of)


async def load_graph(
    conn: asyncpg.Connection, roots: list[Root], hops: dict[int, int], as_of: dt.datetime | None
) -> LineageGraph:
    """Load node details and the edges among the reached nodes (a fixed number of queries)."""
    node_ids = list(hops)
    datasets = await conn.fetch(QUERIES["fetch_dataset_nodes"], node_ids)
    jobs = await conn.fetch(QUERIES["fetch_job_nodes"], node_ids)
    edges = await conn.fetch(QUERIES["fetch_edges_between"], node_ids, as_of)
    nodes: dict[int, LineageNode] = {}
    for row in datasets:
        nid = format_node_id("DATASET", row["namespace"], row["name"])
        nodes[row["node_id"]] = LineageNode(nid, "DATASET", row["namespace"], row["name"], hops[row["node_id"]],
                                            dataset_data(row))
    for row in jobs:
        nid = format_node_id("JOB", row["namespace"], row["name"])
        nodes[row["node_id"]] = LineageNode(nid, "JOB", row["namespace"], row["name"], hops[row["node_id"]],
                                            job_data(row))
    pairs: list[tuple[str, str]] = []
    for e in edges:
        src, dst = nodes.get(e["src_node_id"]), nodes.get(e["dst_node_id"])
        if src is None or dst is None:
            continue
        pair = (src.id, dst.id)
        pairs.append(pair)
        src.out_edges.append(pair)
        dst.in_edges.append(pair)
    ordered = sorted(nodes.values(), key=lambda n: (n.hops, n.type, n.id))
    for node in ordered:
        node.in_edges.sort()
        node.out_edges.sort()
    return LineageGraph(roots=roots, nodes=ordered, edges=sorted(pairs))


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def dataset_data(row: Any) -> dict[str, Any]:
    """Marquez-style data of a dataset node."""
    facets = row["facets"] or {}
    return {
        "type": "DB_TABLE",
        "id": {"namespace": row["namespace"], "name": row["name"]},
        "name": row["name"],
        "physicalName": row["name"],
        "namespace": row["namespace"],
        "sourceName": row["source_name"],
        "description": row["description"],
        "fields": row["fields"],
        "createdAt": _iso(row["created_at"]),
        "updatedAt": _iso(row["updated_at"]),
        "lastModifiedAt": _iso(row["last_modified_at"]),
        "deleted": row["deleted_at"] is not None,
        "facets": facets,
    }


def job_data(row: Any) -> dict[str, Any]:
    """Marquez-style data of a job node."""
    latest_run = None
    if row["latest_run_uuid"] is not None:
        latest_run = {
            "id": str(row["latest_run_uuid"]),
            "state": row["latest_run_state"],
            "startedAt": _iso(row["latest_run_started_at"]),
            "endedAt": _iso(row["latest_run_ended_at"]),
        }
    parent = None
    if row["parent_name"] is not None:
        parent = {"namespace": row["parent_namespace"], "name": row["parent_name"]}
    return {
        "type": row["job_type"] or "BATCH",
        "id": {"namespace": row["namespace"], "name": row["name"]},
        "name": row["name"],
        "simpleName": row["name"].rsplit(".", 1)[-1],
        "namespace": row["namespace"],
        "parentJob": parent,
        "description": row["description"],
        "createdAt": _iso(row["created_at"]),
        "updatedAt": _iso(row["updated_at"]),
        "deleted": row["deleted_at"] is not None,
        "latestRun": latest_run,
        "facets": row["facets"] or {},
    }


