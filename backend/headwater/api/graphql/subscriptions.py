"""The Subscription root: lineage changes, replayed from a cursor and then live."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Annotated

import strawberry

from headwater.api.graphql.context import Info
from headwater.api.graphql.types.change import LineageChange, LineageChangeFilter, LineageScopeInput
from headwater.api.graphql.types.paging import InvalidCursorError
from headwater.errors import InvalidRequestError, LineageDepthTooLargeError
from headwater.feed.filters import ChangeFilter, ChangeMatcher
from headwater.feed.scopes import ScopeSpec
from headwater.lineage.graph import Direction
from headwater.lineage.node_ids import parse_node_id


def parse_change_cursor(cursor: str) -> int:
    """A change cursor: the id of the last change seen."""
    if not cursor.isdigit():
        raise InvalidCursorError(cursor)
    return int(cursor)


def _scope(scope: LineageScopeInput | None, direction: Direction, maximum: int) -> ScopeSpec | None:
    if scope is None:
        return None
    parse_node_id(scope.node_id)
    if scope.depth < 0:
        raise InvalidRequestError(f"Lineage depth must be 0 or more, got {scope.depth}.")
    if scope.depth > maximum:
        raise LineageDepthTooLargeError(scope.depth, maximum)
    return ScopeSpec(scope.node_id, scope.depth, direction)


def change_filter(f: LineageChangeFilter | None, max_depth: int) -> ChangeFilter:
    """The feed's filter for the GraphQL input (node ids and depths checked)."""
    if f is None:
        return ChangeFilter()
    for node_id in f.node_ids or []:
        parse_node_id(node_id)
    return ChangeFilter(
        kinds=frozenset(f.kinds) if f.kinds is not None else None,
        namespaces=frozenset(f.namespaces) if f.namespaces is not None else None,
        node_ids=frozenset(f.node_ids) if f.node_ids is not None else None,
        upstream_of=_scope(f.upstream_of, "UPSTREAM", max_depth),
        downstream_of=_scope(f.downstream_of, "DOWNSTREAM", max_depth),
    )


@strawberry.type
class Subscription:
    @strawberry.subscription(
        description="Changes to datasets, jobs and lineage, in change-log order. With `after`, every change "
        "since that cursor is replayed first, then live changes follow: no gap, no repeat. Without it, "
        "changes from now on (use Query.latestChangeCursor first to be exact)."
    )
    async def lineage_changes(
        self,
        info: Info,
        after: Annotated[str | None, strawberry.argument(description="A LineageChange cursor.")] = None,
        filter: LineageChangeFilter | None = None,
    ) -> AsyncGenerator[LineageChange, None]:
        start = None if after is None else parse_change_cursor(after)
        wanted = change_filter(filter, info.context.settings.max_lineage_depth)
        matcher = ChangeMatcher(wanted, info.context.lineage_scopes)
        subscription = info.context.feed.subscribe(start, refuses=matcher.refuses, kinds=wanted.kinds)
        try:
            async with contextlib.aclosing(subscription.changes()) as changes:
                async for change in changes:
                    if await matcher.matches(change):
                        yield LineageChange.from_record(change)
        finally:
            subscription.close()
            matcher.close()
