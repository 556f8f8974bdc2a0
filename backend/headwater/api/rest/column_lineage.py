"""GET /api/v1/column-lineage: Marquez-compatible column lineage graph around fields or datasets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import msgspec
from litestar import Response, get
from litestar.datastructures import State
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Parameter, QueryParameter

from headwater.api.rest.lineage import (
    DEFAULT_DEPTH,
    check_direction,
    json_response,
    max_nodes,
    parse_as_of,
)
from headwater.lineage.columns import ColumnGraph, Edge, FieldData, fetch_column_lineage
from headwater.lineage.graph import check_depth

if TYPE_CHECKING:
    import asyncpg


_encoder = msgspec.json.Encoder()


class FieldNode(msgspec.Struct, rename="camel", gc=False):
    id: str
    type: str
    data: FieldData
    in_edges: list[Edge]
    out_edges: list[Edge]


class ColumnLineageAnswer(msgspec.Struct):
    """The column lineage graph in Marquez's shape; truncated when the node cap cut the walk."""

    graph: list[FieldNode]
    truncated: bool


def encode_column_graph(graph: ColumnGraph) -> bytes:
    """Marquez's shape: DATASET_FIELD nodes sharing the graph's data and edge objects."""
    nodes = [FieldNode(n.id, "DATASET_FIELD", n.data, n.in_edges, n.out_edges) for n in graph.nodes]
    return _encoder.encode(ColumnLineageAnswer(nodes, graph.truncated))


@get(
    "/api/v1/column-lineage",
    summary="Column lineage graph around dataset fields",
    responses={
        200: ResponseSpec(
            ColumnLineageAnswer, description="The column lineage graph", generate_examples=False
        )
    },
)
async def get_column_lineage(
    state: State,
    node_id: Annotated[
        list[str],
        QueryParameter(
            name="nodeId",
            description="datasetField:NS:DATASET:FIELD, or dataset:NS:NAME for all its fields; repeatable",
        ),
    ],
    depth: Annotated[
        int,
        Parameter(description="Column hops (one per job) to include (default 20, at most the server's)"),
    ] = DEFAULT_DEPTH,
    direction: Annotated[str, Parameter(description="UPSTREAM, DOWNSTREAM or BOTH (default)")] = "BOTH",
    as_of: Annotated[
        str | None,
        QueryParameter(name="asOf", description="RFC 3339 time: the column graph as it was then"),
    ] = None,
    max_nodes_asked: Annotated[
        int | None,
        QueryParameter(name="maxNodes", description="Node cap of the answer (at most the server's)"),
    ] = None,
) -> Response[bytes]:
    """The column lineage of the given fields: only current column edges unless asOf is given."""
    settings = state.settings
    pool: asyncpg.Pool = state.pool
    depth = check_depth(depth, settings.max_lineage_depth)
    walk = check_direction(direction)
    when = parse_as_of(as_of)
    cap = max_nodes(settings, max_nodes_asked)
    async with state.read_turns.turn():
        async with pool.acquire() as conn:
            graph = await fetch_column_lineage(
                conn, node_id, depth=depth, direction=walk, as_of=when, max_nodes=cap
            )
        body = encode_column_graph(graph)
    return json_response(body)
