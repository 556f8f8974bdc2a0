"""Table-level lineage: resolve roots, walk the graph, load the nodes and the edges between them.

Depth counts the jobs on a path from the root, the root not counted: from a dataset, depth 1
upstream is the jobs that write it and the datasets they read; from a job, depth 0 downstream is its
outputs and depth 1 adds the jobs reading them and their outputs. The walk is directed: UPSTREAM
follows edges backwards, DOWNSTREAM forwards, BOTH is the union of the two walks. Several roots give
the union of their graphs.

Point in time: without ``as_of`` only open edges are walked (``valid_to IS NULL``: what the jobs'
latest completed runs read and wrote). With ``as_of=T`` the walk follows the edges valid at T,
``valid_from <= T < coalesce(valid_to, infinity)``: an input a job stopped reading after T is
still there, an edge first seen after T is not. A soft-deleted dataset or job is left out when it
was deleted (at or before T, with ``as_of``); a root is always kept. Node documents (facets, fields,
latest run) are the current ones in both cases.

The answer is bounded: a walk stops once it holds ``max_nodes`` nodes and says so (``truncated``);
nodes are admitted level by level, so a cut graph holds everything nearer than its last level.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from headwater.db.queries import QUERIES
from headwater.errors import InvalidRequestError, LineageDepthTooLargeError, NodeNotFoundError
from headwater.lineage.documents import DocumentCache, load_documents
from headwater.lineage.horizon import check_horizon
from headwater.lineage.node_ids import NodeType, parse_node_id

if TYPE_CHECKING:
    import asyncpg

Direction = Literal["UPSTREAM", "DOWNSTREAM", "BOTH"]

DEFAULT_MAX_NODES = 10_000


def check_depth(depth: int, maximum: int) -> int:
    """A depth within [0, maximum], or an error naming the limit (400 over REST)."""
    if depth < 0:
        raise InvalidRequestError(f"Lineage depth must be 0 or more, got {depth}.")
    if depth > maximum:
        raise LineageDepthTooLargeError(depth, maximum)
    return depth


@dataclass(frozen=True)
class Root:
    node_id: int
    node_type: NodeType
    namespace: str
    name: str


class LineageNode(msgspec.Struct, gc=False):
    """A dataset or job of a lineage answer; ``data_json`` is its Marquez ``data`` object, encoded.

    Not tracked by the garbage collector (no reference cycles), as answers hold thousands of them.
    """

    id: str
    type: NodeType
    namespace: str
    name: str
    hops: int
    data_json: bytes
    in_edges: list[tuple[str, str]] = msgspec.field(default_factory=list)
    out_edges: list[tuple[str, str]] = msgspec.field(default_factory=list)

    @property
    def data(self) -> dict[str, Any]:
        """The node's ``data`` object, decoded."""
        result: dict[str, Any] = msgspec.json.decode(self.data_json)
        return result


@dataclass
class LineageGraph:
    roots: list[Root]
    nodes: list[LineageNode]
    edges: list[tuple[str, str]]
    truncated: bool = False


@dataclass(frozen=True)
class Walk:
    """What the walk reached: node ids with their level and document stamp, the edges among them,
    and whether a cap cut it."""

    levels: dict[int, int]
    stamps: dict[int, int]
    edges: list[tuple[int, int]]
    truncated: bool


async def resolve_roots(conn: asyncpg.Connection, node_ids: list[str]) -> list[Root]:
    """Find the datasets and jobs node ids name (aliases included), in two queries; 404 if one is unknown."""
    parsed = [parse_node_id(node_id) for node_id in node_ids]
    asks: dict[str, tuple[list[int], list[str], list[str]]] = {
        "DATASET": ([], [], []),
        "JOB": ([], [], []),
    }
    for i, p in enumerate(parsed):
        index, namespaces, names = asks[p.node_type]
        for namespace, name in p.candidates:
            index.append(i)
            namespaces.append(namespace)
            names.append(name)
    found: dict[int, Any] = {}
    for node_type, query in (("DATASET", "resolve_dataset_ids"), ("JOB", "resolve_job_ids")):
        index, namespaces, names = asks[node_type]
        if not index:
            continue
        for row in await conn.fetch(QUERIES[query], index, namespaces, names):
            # Several splits can match (a name containing ':'): the longest namespace is the most specific.
            best = found.get(row["ask"])
            if best is None or len(row["asked_namespace"]) > len(best["asked_namespace"]):
                found[row["ask"]] = row
    roots = []
    for i, p in enumerate(parsed):
        if i not in found:
            raise NodeNotFoundError(p.raw)
        row = found[i]
        roots.append(Root(row["node_id"], p.node_type, row["namespace"], row["name"]))
    return roots


async def resolve_root(conn: asyncpg.Connection, node_id: str) -> Root:
    """Find the dataset or job a node id names (aliases included); NodeNotFoundError if none."""
    return (await resolve_roots(conn, [node_id]))[0]


def hop_limit(root: Root, depth: int) -> int:
    """Edges to walk for a depth counted in jobs: 2 per job, plus the first hop out of a job root."""
    return 2 * depth + (1 if root.node_type == "JOB" else 0)


async def walk_lineage(
    conn: asyncpg.Connection,
    roots: list[Root],
    *,
    depth: int,
    direction: Direction,
    as_of: dt.datetime | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    namespaces: list[str] | None = None,
) -> Walk:
    """One query: the nodes within ``depth`` of any root, their level, and the edges among them.

    Levels count edges from a job root; a dataset root sits at level 1, so that one limit of
    ``2 * depth + 1`` gives every root its own hop limit (see ``hop_limit``).
    """
    cap = max(max_nodes, len(roots))
    row = await conn.fetchrow(
        QUERIES["walk_lineage"], *_walk_from(roots, depth, direction), as_of, cap, namespaces or None
    )
    assert row is not None
    node_ids = row["node_ids"] or []
    levels = dict(zip(node_ids, row["levels"] or [], strict=True))
    stamps = dict(zip(node_ids, row["stamps"] or [], strict=True))
    unstamped = [node_id for node_id, stamp in stamps.items() if stamp is None]
    if unstamped:  # not where its level says: look in both tables
        stamps.update(await fetch_stamps(conn, unstamped))
    edges = list(zip(row["edge_srcs"] or [], row["edge_dsts"] or [], strict=True))
    if as_of is not None:  # validity intervals of an edge do not overlap, but stay safe
        edges = list(dict.fromkeys(edges))
    truncated = row["truncated"]
    if len(levels) > cap:  # the two walks together: keep the nearest nodes
        kept = sorted(levels, key=lambda n: (levels[n], n))[:cap]
        levels = {n: levels[n] for n in kept}
        stamps = {n: stamps[n] for n in kept}
        edges = [(a, b) for a, b in edges if a in levels and b in levels]
        truncated = True
    return Walk(levels, stamps, edges, truncated)


def _walk_from(roots: list[Root], depth: int, direction: Direction) -> tuple[Any, ...]:
    """lineage_walk's first arguments: job roots, dataset roots, hop limit, the directions."""
    return (
        [r.node_id for r in roots if r.node_type == "JOB"],
        [r.node_id for r in roots if r.node_type == "DATASET"],
        2 * depth + 1,
        direction in ("DOWNSTREAM", "BOTH"),
        direction in ("UPSTREAM", "BOTH"),
    )


@dataclass(frozen=True)
class Hops:
    """The nodes a walk reached, by node id as the API spells it, with their hops from the nearest
    root, and whether a cap cut it."""

    hops: dict[str, int]
    truncated: bool


async def walk_hops(
    conn: asyncpg.Connection,
    node_ids: list[str],
    *,
    depth: int,
    direction: Direction,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> Hops:
    """The nodes of ``fetch_lineage`` over the current edges (no namespaces, all node types) with
    their hops, and nothing else: one query after resolving the roots, without edges or documents.

    The same walk (lineage_walk), so the same nodes, hops and cap; NodeNotFoundError if a root is
    unknown.
    """
    roots = await resolve_roots(conn, node_ids)
    cap = max(max_nodes, len(roots))
    row = await conn.fetchrow(QUERIES["walk_lineage_ids"], *_walk_from(roots, depth, direction), cap)
    assert row is not None
    numbers: list[int] = row["node_ids"] or []
    ids: list[str] = row["ids"] or []
    levels: list[int] = row["levels"] or []
    truncated = bool(row["truncated"])
    if len(numbers) > cap:  # the two walks together: keep the nearest nodes, as walk_lineage does
        kept = sorted(range(len(numbers)), key=lambda i: (levels[i], numbers[i]))[:cap]
        ids = [ids[i] for i in kept]
        levels = [levels[i] for i in kept]
        truncated = True
    # Levels start a dataset root at 1 (see walk_lineage); hops start every root at 0.
    shift = 0 if any(r.node_type == "JOB" for r in roots) else 1
    return Hops({node_id: level - shift for node_id, level in zip(ids, levels, strict=True)}, truncated)


async def fetch_stamps(conn: asyncpg.Connection, node_ids: list[int]) -> dict[int, int]:
    """The document stamps of datasets and jobs by node id."""
    rows = await conn.fetch(QUERIES["fetch_lineage_stamps"], node_ids)
    return {r["node_id"]: r["stamp"] for r in rows}


async def fetch_lineage(
    conn: asyncpg.Connection,
    node_ids: list[str],
    *,
    depth: int,
    direction: Direction = "BOTH",
    as_of: dt.datetime | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    namespaces: list[str] | None = None,
    node_type: NodeType | None = None,
    cache: DocumentCache | None = None,
) -> LineageGraph:
    """The lineage graph around one or more roots (their union), current or as of a time.

    ``namespaces`` keeps the walk inside those namespaces (roots excepted); ``node_type`` keeps only
    datasets or only jobs in the answer, joining A -> B when A reaches B through one node of the
    other type (dataset -> dataset through the jobs between them, job -> job through datasets).
    """
    await check_horizon(conn, as_of)
    roots = await resolve_roots(conn, node_ids)
    walk = await walk_lineage(
        conn,
        roots,
        depth=depth,
        direction=direction,
        as_of=as_of,
        max_nodes=max_nodes,
        namespaces=namespaces,
    )
    graph = await load_graph(conn, roots, walk, cache)
    return keep_node_type(graph, node_type) if node_type else graph


async def load_graph(
    conn: asyncpg.Connection, roots: list[Root], walk: Walk, cache: DocumentCache | None = None
) -> LineageGraph:
    """Attach node documents (cached, or one query) and the edges among the nodes to a walk."""
    docs = await load_documents(conn, walk.stamps, cache)
    # Hops from the nearest root; levels start a dataset root at 1 (see walk_lineage).
    shift = 0 if any(r.node_type == "JOB" for r in roots) else 1
    nodes = {
        node_id: LineageNode(
            doc.id, doc.type, doc.namespace, doc.name, walk.levels[node_id] - shift, doc.data_json
        )
        for node_id, doc in docs.items()
    }
    pairs: list[tuple[str, str]] = []
    for src_id, dst_id in walk.edges:
        src, dst = nodes.get(src_id), nodes.get(dst_id)
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
    return LineageGraph(roots=roots, nodes=ordered, edges=sorted(pairs), truncated=walk.truncated)


def keep_node_type(graph: LineageGraph, node_type: NodeType) -> LineageGraph:
    """Only the nodes of one type, joined through the dropped nodes between them (one hop)."""
    kept = {n.id: n for n in graph.nodes if n.type == node_type}
    preds: dict[str, list[str]] = defaultdict(list)
    succs: dict[str, list[str]] = defaultdict(list)
    for src, dst in graph.edges:
        succs[src].append(dst)
        preds[dst].append(src)
    pairs: set[tuple[str, str]] = set()
    for node in graph.nodes:
        if node.id in kept:
            continue
        for src in preds[node.id]:
            for dst in succs[node.id]:
                if src in kept and dst in kept:
                    pairs.add((src, dst))
    nodes = [
        LineageNode(n.id, n.type, n.namespace, n.name, n.hops, n.data_json)
        for n in graph.nodes
        if n.id in kept
    ]
    by_id = {n.id: n for n in nodes}
    ordered_pairs = sorted(pairs)
    for src, dst in ordered_pairs:
        by_id[src].out_edges.append((src, dst))
        by_id[dst].in_edges.append((src, dst))
    return LineageGraph(graph.roots, nodes, ordered_pairs, graph.truncated)
