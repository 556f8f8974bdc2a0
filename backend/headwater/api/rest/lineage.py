"""GET /api/v1/lineage: Marquez-compatible lineage graph around one or more nodes."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import asyncpg
from litestar import get
from litestar.datastructures import State
from litestar.params import Parameter, QueryParameter

from headwater.errors import InvalidRequestError, LineageDepthTooLargeError
from headwater.lineage.graph import Direction, LineageGraph, fetch_lineage

DEFAULT_DEPTH = 20
_DIRECTIONS = ("UPSTREAM", "DOWNSTREAM", "BOTH")


def check_depth(depth: int, maximum: int) -> int:
    """A depth within [0, maximum], or a 400 naming the limit."""
    if depth < 0:
        raise InvalidRequestError(f"Lineage depth must be 0 or more, got {depth}.")
    if depth > maximum:
        raise LineageDepthTooLargeError(depth, maximum)
    return depth


def check_direction(direction: str) -> Direction:
    """UPSTREAM, DOWNSTREAM or BOTH (any case)."""
    value = direction.upper()
    if value not in _DIRECTIONS:
        raise InvalidRequestError(f"Unknown direction '{direction}': expected UPSTREAM, DOWNSTREAM or BOTH.")
    return value  # type: ignore[return-value]


def parse_as_of(as_of: str | None) -> dt.datetime | None:
    """An RFC 3339 time (a time without offset is read as UTC)."""
    if as_of is None:
        return None
    try:
        value = dt.datetime.fromisoformat(as_of.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequestError(f"asOf '{as_of}' is not an RFC 3339 time, e.g. 2026-01-31T12:00:00Z.") from None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def graph_json(graph: LineageGraph) -> dict[str, Any]:
    """Marquez's shape: {"graph": [{id, type, data, inEdges, outEdges}]}."""
    return {
        "graph": [
            {
                "id": node.id,
                "type": node.type,
                "data": node.data,
                "inEdges": [{"origin": o, "destination": d} for o, d in node.in_edges],
                "outEdges": [{"origin": o, "destination": d} for o, d in node.out_edges],
            }
            for node in graph.nodes
        ],
        "truncated": graph.truncated,
    }


@get("/api/v1/lineage", summary="Lineage graph around nodes")
async def get_lineage(
    state: State,
    node_id: Annotated[list[str], QueryParameter(name="nodeId", description="dataset:NS:NAME or job:NS:NAME; repeat for several roots")],
    depth: Annotated[int, Parameter(description="jobs from the root to include (default 20)")] = DEFAULT_DEPTH,
    direction: Annotated[str, Parameter(description="UPSTREAM, DOWNSTREAM or BOTH (default)")] = "BOTH",
    as_of: Annotated[str | None, QueryParameter(name="asOf", description="RFC 3339 time: the graph as it was then")] = None,
) -> dict[str, Any]:
    """The graph around the given nodes: only current edges unless asOf is given."""
    settings = state.settings
    pool: asyncpg.Pool = state.pool
    depth = check_depth(depth, settings.max_lineage_depth)
    walk = check_direction(direction)
    when = parse_as_of(as_of)
    async with pool.acquire() as conn:
        graph = await fetch_lineage(conn, node_id, depth=depth, direction=walk, as_of=when)
    return graph_json(graph)
