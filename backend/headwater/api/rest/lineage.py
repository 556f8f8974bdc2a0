"""GET /api/v1/lineage and /api/v1/lineage/path: Marquez-compatible lineage graphs and paths."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
from litestar import Response, get
from litestar.datastructures import State
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Parameter, QueryParameter

from headwater import times
from headwater.errors import InvalidRequestError
from headwater.lineage.documents import cache_for
from headwater.lineage.graph import Direction, LineageGraph, check_depth, fetch_lineage
from headwater.lineage.node_ids import NodeType
from headwater.lineage.paths import fetch_paths

if TYPE_CHECKING:
    import asyncpg

    from headwater.settings import Settings

DEFAULT_DEPTH = 20
_DIRECTIONS = ("UPSTREAM", "DOWNSTREAM", "BOTH")
_NODE_TYPES = ("DATASET", "JOB")
_encoder = msgspec.json.Encoder()


class Edge(msgspec.Struct):
    origin: str
    destination: str


class Node(msgspec.Struct, rename="camel"):
    id: str
    type: str
    data: dict[str, Any]
    in_edges: list[Edge]
    out_edges: list[Edge]


class LineageAnswer(msgspec.Struct):
    """The lineage graph in Marquez's shape; truncated when the node cap cut the walk."""

    graph: list[Node]
    truncated: bool


class PathAnswer(msgspec.Struct):
    """Every shortest path (node ids, from first to last) and the graph of the nodes on them."""

    paths: list[list[str]]
    graph: list[Node]
    truncated: bool
    # Whether the nodes are connected: false when no path exists at any depth, null when none was
    # found within the server's maximum depth (HEADWATER_MAX_LINEAGE_DEPTH) and the walk could go on.
    connected: bool | None
    # The least maxDepth that finds the shortest paths (also when it is more than the one asked).
    depth: int | None


def check_direction(direction: str) -> Direction:
    """UPSTREAM, DOWNSTREAM or BOTH (any case)."""
    value = direction.upper()
    if value not in _DIRECTIONS:
        raise InvalidRequestError(
            f"Unknown direction '{direction}': expected UPSTREAM, DOWNSTREAM or BOTH."
        )
    return value  # type: ignore[return-value]


def check_node_type(node_type: str | None) -> NodeType | None:
    """DATASET, JOB (any case) or nothing."""
    if node_type is None:
        return None
    value = node_type.upper()
    if value not in _NODE_TYPES:
        raise InvalidRequestError(f"Unknown node type '{node_type}': expected DATASET or JOB.")
    return value  # type: ignore[return-value]


def max_nodes(settings: Settings, asked: int | None) -> int:
    """The node cap of an answer: the server's (HEADWATER_MAX_LINEAGE_NODES), or less if asked."""
    limit: int = settings.max_lineage_nodes
    if asked is None:
        return limit
    if asked < 1:
        raise InvalidRequestError(f"maxNodes must be 1 or more, got {asked}.")
    return min(asked, limit)


def parse_as_of(as_of: str | None) -> dt.datetime | None:
    """An RFC 3339 time, in UTC (a time without offset is read as UTC)."""
    if as_of is None:
        return None
    try:
        return times.parse_instant(as_of)
    except ValueError as exc:
        raise InvalidRequestError(f"asOf '{as_of}' {exc}.") from None


class _WireEdge(msgspec.Struct, gc=False):
    origin: str
    destination: str


class _WireNode(msgspec.Struct, rename="camel", gc=False):
    id: str
    type: str
    data: msgspec.Raw
    in_edges: list[_WireEdge]
    out_edges: list[_WireEdge]


def encode_nodes(graph: LineageGraph) -> bytes:
    """The ``graph`` array of Marquez's shape, embedding the nodes' pre-encoded documents."""
    edges = {pair: _WireEdge(*pair) for pair in graph.edges}
    return _encoder.encode(
        [
            _WireNode(
                node.id,
                node.type,
                msgspec.Raw(node.data_json),
                [edges[p] for p in node.in_edges],
                [edges[p] for p in node.out_edges],
            )
            for node in graph.nodes
        ]
    )


def json_response(body: bytes) -> Response[bytes]:
    return Response(body, media_type="application/json")


def _flag(value: bool) -> bytes:
    return b"true" if value else b"false"


@get(
    "/api/v1/lineage",
    summary="Lineage graph around nodes",
    responses={
        200: ResponseSpec(LineageAnswer, description="The lineage graph", generate_examples=False)
    },
)
async def get_lineage(
    state: State,
    node_id: Annotated[
        list[str],
        QueryParameter(
            name="nodeId", description="dataset:NS:NAME or job:NS:NAME; repeat for several roots"
        ),
    ],
    depth: Annotated[
        int,
        Parameter(
            description="Jobs from the root to include (default 20, at most HEADWATER_MAX_LINEAGE_DEPTH)"
        ),
    ] = DEFAULT_DEPTH,
    direction: Annotated[str, Parameter(description="UPSTREAM, DOWNSTREAM or BOTH (default)")] = "BOTH",
    as_of: Annotated[
        str | None, QueryParameter(name="asOf", description="RFC 3339 time: the graph as it was then")
    ] = None,
    namespace: Annotated[
        list[str] | None,
        Parameter(description="Walk only through nodes in these namespaces (repeatable)"),
    ] = None,
    node_type: Annotated[
        str | None,
        QueryParameter(
            name="nodeType", description="DATASET or JOB: only those nodes, joined through the others"
        ),
    ] = None,
    max_nodes_asked: Annotated[
        int | None,
        QueryParameter(name="maxNodes", description="Node cap of the answer (at most the server's)"),
    ] = None,
) -> Response[bytes]:
    """The graph around the given nodes: only current edges unless asOf is given.

    Several nodeId give the union of their graphs. When the node cap is reached the answer says
    ``truncated: true`` and holds the nodes nearest to the roots.
    """
    settings = state.settings
    pool: asyncpg.Pool = state.pool
    depth = check_depth(depth, settings.max_lineage_depth)
    walk = check_direction(direction)
    when = parse_as_of(as_of)
    kept_type = check_node_type(node_type)
    cap = max_nodes(settings, max_nodes_asked)
    async with state.read_turns.turn():
        async with pool.acquire() as conn:
            graph = await fetch_lineage(
                conn,
                node_id,
                depth=depth,
                direction=walk,
                as_of=when,
                max_nodes=cap,
                namespaces=namespace,
                node_type=kept_type,
                cache=cache_for(state),
            )
        body = b'{"graph":%b,"truncated":%b}' % (encode_nodes(graph), _flag(graph.truncated))
    return json_response(body)


@get(
    "/api/v1/lineage/path",
    summary="Shortest lineage paths between two nodes",
    responses={200: ResponseSpec(PathAnswer, description="The shortest paths", generate_examples=False)},
)
async def get_lineage_path(
    state: State,
    from_id: Annotated[str, QueryParameter(name="from", description="dataset:NS:NAME or job:NS:NAME")],
    to_id: Annotated[str, QueryParameter(name="to", description="dataset:NS:NAME or job:NS:NAME")],
    direction: Annotated[
        str,
        Parameter(description="DOWNSTREAM (from feeds to), UPSTREAM (to feeds from) or BOTH (default)"),
    ] = "BOTH",
    max_depth: Annotated[
        int, QueryParameter(name="maxDepth", description="Most jobs a path may go through (default 20)")
    ] = DEFAULT_DEPTH,
    as_of: Annotated[
        str | None,
        QueryParameter(name="asOf", description="RFC 3339 time: paths in the graph as it was then"),
    ] = None,
) -> Response[bytes]:
    """Every shortest directed path between two nodes, as node-id lists, with the graph of their nodes.

    ``paths`` is empty when the nodes are not connected within maxDepth; then ``connected`` and
    ``depth`` tell whether they are further away (and the maxDepth that finds them) or not at all. A
    node that does not exist is a 404. With BOTH, paths in either direction count and the shorter
    ones win.
    """
    settings = state.settings
    pool: asyncpg.Pool = state.pool
    depth = check_depth(max_depth, settings.max_lineage_depth)
    walk = check_direction(direction)
    when = parse_as_of(as_of)
    async with state.read_turns.turn():
        async with pool.acquire() as conn:
            found = await fetch_paths(
                conn,
                from_id,
                to_id,
                direction=walk,
                max_depth=depth,
                search_depth=settings.max_lineage_depth,
                max_nodes=settings.max_lineage_nodes,
                as_of=when,
                cache=cache_for(state),
            )
        body = b'{"paths":%b,"graph":%b,"truncated":%b,"connected":%b,"depth":%b}' % (
            _encoder.encode(found.paths),
            encode_nodes(found.graph),
            _flag(found.truncated),
            _encoder.encode(found.connected),
            _encoder.encode(found.depth),
        )
    return json_response(body)
