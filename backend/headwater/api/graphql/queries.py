"""The Query root: catalog reads, lineage and search."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import strawberry

from headwater import times
from headwater.api.graphql.context import Info
from headwater.api.graphql.governance import GovernanceQuery
from headwater.api.graphql.types import node
from headwater.api.graphql.types.change import LineageChange, SuspectChanges
from headwater.api.graphql.types.column_lineage import ColumnLineageGraph
from headwater.api.graphql.types.common import (
    DepthTooLarge,
    InvalidInput,
    LineageDirection,
    NotFound,
    problem_from_error,
)
from headwater.api.graphql.types.dataset import Dataset, DatasetConnection
from headwater.api.graphql.types.job import Job, JobConnection
from headwater.api.graphql.types.lineage import LineageGraph
from headwater.api.graphql.types.namespace import Namespace
from headwater.api.graphql.types.paging import CatalogOrder, check_page_size
from headwater.api.graphql.types.run import Run
from headwater.api.graphql.types.search import FindKind, FindResult, FoundNode, SearchHit, SearchResult
from headwater.api.graphql.types.tag import Tag
from headwater.api.rest.lineage import max_nodes
from headwater.errors import InvalidRequestError, NotFoundError
from headwater.feed.log import ChangeRecord
from headwater.lineage.columns import fetch_column_lineage
from headwater.lineage.graph import check_depth, fetch_lineage
from headwater.store import catalog, tags
from headwater.store.questions import FoundKind, fetch_suspect_changes, find_nodes

DEFAULT_DEPTH = 20
# A root cause asks about an upstream graph's nodes: the default node cap of a lineage answer.
MAX_SUSPECT_NODES = 10_000

# The search store spells UPDATED_AT as Marquez does.
_SEARCH_SORTS: dict[CatalogOrder, catalog.SearchSort] = {
    CatalogOrder.NAME: "NAME",
    CatalogOrder.HEAT: "HEAT",
    CatalogOrder.UPDATED_AT: "UPDATE_AT",
}
MaxNodes = Annotated[
    int | None,
    strawberry.argument(
        description="The answer's node cap: the server's (HEADWATER_MAX_LINEAGE_NODES, 10,000 by "
        "default) when null, never more. The operation's cost counts every list of the answer as "
        "this many objects, so ask for what you need when you select node fields."
    ),
]
AsOf = Annotated[
    dt.datetime | None,
    strawberry.argument(description="The graph as it was at this time; the current graph when null."),
]

ColumnLineageResult = Annotated[
    ColumnLineageGraph | NotFound | DepthTooLarge | InvalidInput,
    strawberry.union("ColumnLineageResult", description="The column graph, or why there is none."),
]
LineageResult = Annotated[
    LineageGraph | NotFound | DepthTooLarge | InvalidInput,
    strawberry.union("LineageResult", description="The graph, or why there is none."),
]


def check_walk(depth: int, maximum: int, as_of: dt.datetime | None) -> dt.datetime | None:
    """Check a lineage depth against the server's maximum and ``asOf``; the time in UTC (a time
    without offset is read as UTC)."""
    check_depth(depth, maximum)
    return None if as_of is None else instant("asOf", as_of)


def instant(argument: str, value: dt.datetime) -> dt.datetime:
    """A time argument in UTC (one without offset is read as UTC), or an error naming its range."""
    try:
        return times.instant(value)
    except ValueError as exc:
        raise InvalidRequestError(f"{argument} {value.isoformat()} {exc}.") from None


async def walk_or_problem(
    info: Info,
    fetch: Callable[..., Awaitable[Any]],
    node_id: str,
    depth: int,
    direction: LineageDirection,
    as_of: dt.datetime | None,
    max_nodes_asked: int | None,
    build: Callable[[Any, dt.datetime | None], Any],
) -> Any:
    """Walk table or column lineage from one root, or return the expected error as a union member."""
    settings = info.context.settings
    maximum = settings.max_lineage_depth
    try:
        when = check_walk(depth, maximum, as_of)
        cap = max_nodes(settings, max_nodes_asked)
        async with info.context.state.read_turns.turn(), info.context.pool.acquire() as conn:
            graph = await fetch(
                conn, [node_id], depth=depth, direction=direction.value, as_of=when, max_nodes=cap
            )
    except (NotFoundError, InvalidRequestError) as exc:
        return problem_from_error(exc, maximum)
    return build(graph, when)


def parse_run_id(run_id: str) -> uuid.UUID:
    """A run id (a UUID) or an invalid_request error naming it."""
    try:
        return uuid.UUID(run_id)
    except ValueError:
        raise InvalidRequestError(f"Invalid run id '{run_id}': expected a UUID.") from None


@strawberry.type
class Query(GovernanceQuery):
    @strawberry.field(description="Every namespace, by name.")
    async def namespaces(self, info: Info) -> list[Namespace]:
        async with info.context.pool.acquire() as conn:
            return [Namespace.from_record(r) for r in await catalog.list_namespaces(conn)]

    @strawberry.field(description="A namespace by name, null if unknown.")
    async def namespace(self, info: Info, name: str) -> Namespace | None:
        record = await info.context.loaders.namespace.load(name)
        return Namespace.from_record(record) if record else None

    # Strawberry wants each field declared on its type, where the schema lists it; what the fields of
    # datasets and of jobs do is one definition each (types/node.py).
    datasets = node.nodes_field(DatasetConnection, "Datasets")
    dataset = node.node_field(
        Dataset, "A dataset by namespace and name (or an alias of it), null if unknown."
    )
    jobs = node.nodes_field(JobConnection, "Jobs")
    job = node.node_field(Job, "A job by namespace and name, null if unknown.")

    @strawberry.field(description="A run by its runId, null if unknown.")
    async def run(self, info: Info, id: strawberry.ID) -> Run | None:
        record = await info.context.loaders.run.load(parse_run_id(id))
        return Run.from_record(record) if record else None

    @strawberry.field(description="The lineage graph around a node, as GET /api/v1/lineage answers it.")
    async def lineage(
        self,
        info: Info,
        node_id: Annotated[
            strawberry.ID,
            strawberry.argument(description="dataset:NAMESPACE:NAME or job:NAMESPACE:NAME"),
        ],
        depth: Annotated[
            int,
            strawberry.argument(
                description=f"Jobs away from the root to include: default {DEFAULT_DEPTH}, at most the server's "
                "limit (HEADWATER_MAX_LINEAGE_DEPTH, 100 by default)."
            ),
        ] = DEFAULT_DEPTH,
        direction: LineageDirection = LineageDirection.BOTH,
        as_of: AsOf = None,
        max_nodes: MaxNodes = None,
    ) -> LineageResult:
        return await walk_or_problem(
            info, fetch_lineage, node_id, depth, direction, as_of, max_nodes, LineageGraph.from_graph
        )

    @strawberry.field(
        description="The column lineage around a field, or around every field of a dataset."
    )
    async def column_lineage(
        self,
        info: Info,
        node_id: Annotated[
            strawberry.ID,
            strawberry.argument(
                description="datasetField:NAMESPACE:DATASET:FIELD, or dataset:NAMESPACE:NAME for all its fields"
            ),
        ],
        depth: Annotated[
            int,
            strawberry.argument(
                description=f"Column hops (one per job) from the root: default {DEFAULT_DEPTH}, at most the "
                "server's limit (HEADWATER_MAX_LINEAGE_DEPTH, 100 by default)."
            ),
        ] = DEFAULT_DEPTH,
        direction: LineageDirection = LineageDirection.BOTH,
        as_of: AsOf = None,
        max_nodes: MaxNodes = None,
    ) -> ColumnLineageResult:
        return await walk_or_problem(
            info,
            fetch_column_lineage,
            node_id,
            depth,
            direction,
            as_of,
            max_nodes,
            lambda graph, _when: ColumnLineageGraph.from_graph(graph),
        )

    @strawberry.field(description="Datasets and jobs whose name contains the text (any case).")
    async def search(
        self,
        info: Info,
        query: str,
        namespace: str | None = None,
        first: int = 20,
        order_by: Annotated[
            CatalogOrder | None,
            strawberry.argument(
                description="By relevance when null: exact names, then prefixes, then shorter names."
            ),
        ] = None,
    ) -> SearchResult:
        check_page_size(first, 100)
        if not query.strip():
            raise InvalidRequestError("The search text is empty.")
        sort = _SEARCH_SORTS[order_by] if order_by else "RELEVANCE"
        async with info.context.pool.acquire() as conn:
            hits = await catalog.search_nodes(conn, query, namespace=namespace, sort=sort, limit=first)
            total = await catalog.count_search_nodes(conn, query, namespace=namespace)
        return SearchResult(total_count=total, hits=[SearchHit.from_record(h) for h in hits])

    @strawberry.field(
        description="Datasets, jobs and columns whose name contains the text (any case), hottest first "
        "(a column has its dataset's heat), then exact names, prefixes and shorter names (first: "
        "default 20, at most 100)."
    )
    async def find(
        self,
        info: Info,
        query: str,
        kinds: Annotated[
            list[FindKind] | None,
            strawberry.argument(description="What to look for; every kind when null, none when empty."),
        ] = None,
        namespace: str | None = None,
        tag: Annotated[
            str | None,
            strawberry.argument(description="Only tagged so (a column: its field or its dataset)."),
        ] = None,
        first: int = 20,
        offset: int = 0,
    ) -> FindResult:
        check_page_size(first, 100)
        if not query.strip():
            raise InvalidRequestError("The search text is empty.")
        if offset < 0:
            raise InvalidRequestError(f"`offset` must not be negative, got {offset}.")
        if kinds is None:
            kinds = list(FindKind)
        elif not kinds:
            return FindResult(total_count=0, hits=[])
        wanted: list[FoundKind] = [FindKind(k).value for k in dict.fromkeys(kinds)]
        async with info.context.pool.acquire() as conn:
            found, total = await find_nodes(
                conn, query, kinds=wanted, namespace=namespace, tag=tag, limit=first, offset=offset
            )
        return FindResult(total_count=total, hits=[FoundNode.from_record(f) for f in found])

    @strawberry.field(
        description="What may explain a wrong dataset: among the given nodes (e.g. the ids of an "
        "upstream lineage answer), failed or aborted runs, replaced job versions and schema changes "
        f"at or after `since`, newest first (first: default 50, at most 500; at most "
        f"{MAX_SUSPECT_NODES} node ids)."
    )
    async def suspect_changes(
        self,
        info: Info,
        node_ids: list[strawberry.ID],
        since: dt.datetime,
        first: int = 50,
        offset: int = 0,
    ) -> SuspectChanges:
        check_page_size(first, 500)
        if offset < 0:
            raise InvalidRequestError(f"`offset` must not be negative, got {offset}.")
        if len(node_ids) > MAX_SUSPECT_NODES:
            raise InvalidRequestError(
                f"At most {MAX_SUSPECT_NODES} node ids can be asked about, got {len(node_ids)}."
            )
        when = instant("since", since)
        async with info.context.pool.acquire() as conn:
            changes, total = await fetch_suspect_changes(
                conn, [str(n) for n in node_ids], when, limit=first, offset=offset
            )
        return SuspectChanges(
            total_count=total,
            changes=[
                LineageChange.from_record(
                    ChangeRecord(
                        c.change_id, c.kind, c.node_id, c.namespace, c.at, c.details, c.recorded_at
                    )
                )
                for c in changes
            ],
        )

    @strawberry.field(description="Every tag, by name.")
    async def tags(self, info: Info) -> list[Tag]:
        async with info.context.pool.acquire() as conn:
            return [Tag.from_record(t) for t in await tags.list_tags(conn)]

    @strawberry.field(description="A cursor for now: subscribe `after` it to miss nothing from here on.")
    def latest_change_cursor(self, info: Info) -> str:
        # The feed's position, not max(change_id): an id below the max may still be committing.
        return str(info.context.feed.position)
