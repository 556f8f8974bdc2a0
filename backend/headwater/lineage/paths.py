"""Shortest lineage paths between two nodes.

A path is directed: DOWNSTREAM paths follow edges from ``from`` to ``to`` (``from`` feeds ``to``),
UPSTREAM paths follow them backwards (``to`` feeds ``from``), BOTH takes whichever direction has the
shorter paths (both when equally short). ``max_depth`` counts jobs as lineage depth does, so ``to``
is found exactly when it is in ``from``'s lineage at that depth. Every shortest path is returned, as
node ids from ``from`` to ``to``, up to ``MAX_PATHS`` (``truncated`` beyond), with the graph of the
nodes and edges on them. ``as_of`` walks the edges valid then, as lineage does.

With no path within ``max_depth``, the answer tells why: the walk ran out of nodes (not connected
at any depth), or it was cut at ``max_depth`` and a second walk, as deep as ``search_depth`` allows,
found the depth the shortest paths need (or did not: further than the server walks). Each walk
visits at most ``max_nodes`` nodes: a breadth-first search over a large graph to the deepest depth
took seconds of PostgreSQL, and ten at once held every connection.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES
from headwater.lineage.documents import DocumentCache, load_documents
from headwater.lineage.graph import (
    DEFAULT_MAX_NODES,
    Direction,
    LineageGraph,
    LineageNode,
    Root,
    hop_limit,
    resolve_roots,
)
from headwater.lineage.horizon import check_horizon

if TYPE_CHECKING:
    import asyncpg

MAX_PATHS = 1_000


@dataclass
class PathResult:
    paths: list[list[str]]
    graph: LineageGraph
    truncated: bool
    # True: a path exists, ``depth`` the least maxDepth finding it; False: none at any depth; None:
    # none within the deepest walk the server allows, which had nodes left to visit.
    connected: bool | None
    depth: int | None


async def fetch_paths(
    conn: asyncpg.Connection,
    from_id: str,
    to_id: str,
    *,
    direction: Direction = "BOTH",
    max_depth: int,
    search_depth: int | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    as_of: dt.datetime | None = None,
    cache: DocumentCache | None = None,
) -> PathResult:
    """All shortest paths from one node to another (one query for the search, one for documents;
    a second search, up to ``search_depth``, only when the first was cut at ``max_depth`` before
    finding any)."""
    await check_horizon(conn, as_of)
    roots = await resolve_roots(conn, [from_id, to_id])
    start, end = roots

    async def search(depth: int) -> tuple[list[asyncpg.Record], bool | None, int | None, bool]:
        """The rows of the shortest paths within ``depth``, whether the nodes are connected (None:
        not within it, and the walk was cut), the least maxDepth that finds the paths, and whether
        the walk stopped at ``max_nodes``."""
        rows = await conn.fetch(
            QUERIES["find_lineage_paths"],
            start.node_id,
            end.node_id,
            hop_limit(start, depth),
            direction in ("DOWNSTREAM", "BOTH"),
            direction in ("UPSTREAM", "BOTH"),
            as_of,
            max_nodes,
        )
        found = [r for r in rows if r["downstream"] is not None]
        if not found:
            return found, None if rows[0]["cut"] else False, None, rows[0]["capped"]
        return found, True, _depth_needed(start, found), False

    rows, connected, depth, capped = await search(max_depth)
    # A walk that stopped at its node budget would stop there again, however deep it may go.
    if connected is None and not capped and search_depth is not None and search_depth > max_depth:
        _, connected, depth, _ = await search(search_depth)
    levels: dict[int, int] = {}
    stamps: dict[int, int] = {}
    nexts: dict[tuple[bool, int], list[int]] = defaultdict(list)
    edges: set[tuple[int, int]] = set()
    walks = sorted({row["downstream"] for row in rows}, reverse=True)
    on_path = {(row["downstream"], row["level"]): set(row["nodes"]) for row in rows}
    for row in rows:
        downstream, level = row["downstream"], row["level"]
        for node_id, stamp in zip(row["nodes"], row["stamps"], strict=True):
            stamps[node_id] = stamp
            levels[node_id] = min(levels.get(node_id, level), level)
        following = on_path.get((downstream, level + 1), set())
        for a, b in zip(row["edge_froms"] or [], row["edge_tos"] or [], strict=True):
            if b in following:
                nexts[(downstream, a)].append(b)
                edges.add((a, b) if downstream else (b, a))
    docs = await load_documents(conn, stamps, cache)
    ids = {node_id: doc.id for node_id, doc in docs.items()}
    found, truncated = enumerate_paths(start.node_id, end.node_id, walks, nexts)
    # A node to itself is found both ways.
    paths = sorted(map(list, dict.fromkeys(tuple(ids[n] for n in path) for path in found)))

    nodes = {
        node_id: LineageNode(doc.id, doc.type, doc.namespace, doc.name, levels[node_id], doc.data_json)
        for node_id, doc in docs.items()
    }
    pairs = sorted((nodes[a].id, nodes[b].id) for a, b in edges)
    by_id = {n.id: n for n in nodes.values()}
    for pair in pairs:
        by_id[pair[0]].out_edges.append(pair)
        by_id[pair[1]].in_edges.append(pair)
    ordered = sorted(nodes.values(), key=lambda n: (n.hops, n.type, n.id))
    return PathResult(paths, LineageGraph(roots, ordered, pairs), truncated, connected, depth)


def _depth_needed(start: Root, rows: list[asyncpg.Record]) -> int:
    """The least maxDepth whose hop limit reaches the shortest paths' length in edges."""
    edges = max(row["level"] for row in rows)
    return next(d for d in range(edges + 1) if hop_limit(start, d) >= edges)


def enumerate_paths(
    start: int, end: int, walks: list[bool], nexts: dict[tuple[bool, int], list[int]]
) -> tuple[list[list[int]], bool]:
    """Every path from start to end along the shortest-path edges, up to MAX_PATHS (then cut: True)."""
    paths: list[list[int]] = []
    for downstream in walks:
        stack: list[list[int]] = [[start]]
        while stack:
            path = stack.pop()
            if path[-1] == end:
                if len(paths) == MAX_PATHS:
                    return paths, True
                paths.append(path)
                continue
            stack.extend([*path, n] for n in sorted(nexts[(downstream, path[-1])], reverse=True))
    return paths, False
