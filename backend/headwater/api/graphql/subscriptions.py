"""The Subscription root: lineage changes, replayed from a cursor and then live."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, Callable, Hashable
from typing import Annotated, Any

import strawberry
from graphql import ExecutionResult, print_ast
from graphql.pyutils import AwaitableOrValue
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from headwater.api.graphql.context import Info
from headwater.api.graphql.types.change import LineageChange, LineageChangeFilter, LineageScopeInput
from headwater.api.graphql.types.paging import InvalidCursorError
from headwater.api.parameters import bigint_id
from headwater.errors import InvalidRequestError, LineageDepthTooLargeError, TooManySubscriptionsError
from headwater.feed.filters import ChangeFilter, ChangeMatcher
from headwater.feed.scopes import ScopeSpec
from headwater.lineage.graph import Direction
from headwater.lineage.node_ids import parse_node_id
from headwater.settings import Settings
from headwater.store.changes import check_change_cursor


def parse_change_cursor(cursor: str) -> int:
    """A change cursor: the id of the last change seen."""
    change_id = bigint_id(cursor)
    if change_id is None:
        raise InvalidCursorError(cursor)
    return change_id


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
        context, state = info.context, info.context.state
        _check_room(context.settings, state.get(_OPEN, 0), context.open_subscriptions)
        # Counted before the first wait, so that a burst of subscribe messages is judged one by one.
        state[_OPEN] = state.get(_OPEN, 0) + 1
        context.open_subscriptions += 1
        try:
            # Closed with this generator, not when it is collected: its own finally frees the
            # feed's subscription.
            async with contextlib.aclosing(_changes(info, after, filter)) as changes:
                async for change in changes:
                    yield change
        finally:
            state[_OPEN] -= 1
            context.open_subscriptions -= 1


# In the app's state: the subscriptions open in this process.
_OPEN = "open_subscriptions"


def _check_room(settings: Settings, open_here: int, open_on_connection: int) -> None:
    """Refuse a subscription past the process's or the connection's limit."""
    if open_here >= settings.max_subscriptions:
        raise TooManySubscriptionsError(
            f"This server has {open_here:,} subscriptions open, its limit "
            f"(HEADWATER_MAX_SUBSCRIPTIONS); retry later or on another server."
        )
    if open_on_connection >= settings.max_subscriptions_per_connection:
        raise TooManySubscriptionsError(
            f"This connection has {open_on_connection:,} subscriptions open, its limit "
            f"(HEADWATER_MAX_SUBSCRIPTIONS_PER_CONNECTION); complete some first, or ask for "
            "several nodes in one subscription (filter nodeIds, namespaces, upstreamOf)."
        )


async def _changes(
    info: Info, after: str | None, filter: LineageChangeFilter | None
) -> AsyncGenerator[LineageChange, None]:
    """The changes of one lineageChanges subscription."""
    start = None if after is None else parse_change_cursor(after)
    if start is not None:
        async with info.context.pool.acquire() as conn:
            await check_change_cursor(conn, start)
    wanted = change_filter(filter, info.context.settings.max_lineage_depth)
    matcher = ChangeMatcher(wanted, info.context.lineage_scopes)
    refuses = None if wanted.kinds_only else matcher.refuses
    subscription = info.context.feed.subscribe(
        start, refuses=refuses, kinds=wanted.kinds, scopes=wanted.scopes
    )
    try:
        # A lineage scope too large to follow whole is refused now, not cut (feed/scopes.py).
        for spec in wanted.scopes:
            await info.context.lineage_scopes.ready(spec)
        async with contextlib.aclosing(subscription.changes()) as changes:
            async for change in changes:
                if await matcher.matches(change):
                    yield LineageChange.from_record(change)
    finally:
        subscription.close()
        matcher.close()


class SharedRenderingExecutor(StrawberryGraphQLCoreExecutionContext):
    """Executes a change's selection once for every subscriber asking the same of it.

    graphql-core executes a subscription's selection on each of its events, one subscription at a
    time: with many subscribers of one selection, the same work many times over (some 3 ms for a
    change that lists 20 edges), on the event loop that also serves ingest. The feed offers one
    ChangeRecord to every subscription, so the result is kept on it (``ChangeRecord.renders``) by
    selection: the document, the operation's name and the variables. A LineageChange's fields
    depend on the change alone (no context, no loaders), so equal selections give equal results,
    and one encoding of it serves them all (``encode_message``). Other operations, and events that
    are not live changes, execute as usual.
    """

    _selection: tuple[str, str | None, str] | None = None

    def build_per_event_executor(self, payload: Any) -> Any:
        if self._selection is None:  # once per subscription: its event executors are copies
            self._selection = _selection_of(self)
        renders = _renders(payload)
        if renders is not None and self._selection in renders:
            return _Rendered(renders[self._selection])
        return super().build_per_event_executor(payload)

    def execute_operation(self, serially: bool | None = None) -> AwaitableOrValue[Any]:
        result = super().execute_operation(serially)
        renders = _renders(self.root_value)
        if renders is None or self._selection is None or self.is_awaitable(result):
            return result  # none of LineageChange's fields waits: kept simple should one
        assert isinstance(result, ExecutionResult)
        result.data = _RenderedData(result.data) if result.data is not None else None
        renders[self._selection] = result
        return result


class _Rendered:
    """An event executor for a change already rendered for the same selection."""

    def __init__(self, result: ExecutionResult) -> None:
        self.result = result

    def execute_operation(self, _serially: bool | None = None) -> ExecutionResult:
        return self.result


class _RenderedData(dict[str, Any]):
    """A shared rendering's data, with its JSON encoded once for every subscriber sent it."""

    encoded: str | None = None


def _renders(event: Any) -> dict[Hashable, Any] | None:
    return event.record.renders if isinstance(event, LineageChange) and event.record else None


def _selection_of(executor: StrawberryGraphQLCoreExecutionContext) -> tuple[str, str | None, str]:
    operation = executor.operation
    if operation.loc is not None:
        document = operation.loc.source.body
    else:  # parsed without locations: the operation and its fragments as printed
        fragments = sorted(executor.fragment_definitions.items())
        document = "\n".join([print_ast(operation), *(print_ast(f) for _, f in fragments)])
    name = operation.name.value if operation.name else None
    variables = json.dumps(executor.variable_values.coerced, sort_keys=True, default=repr)
    return document, name, variables


def encode_message(message: object, encode_json: Callable[[object], str | bytes]) -> str | bytes:
    """A message as JSON: the data of a change shared by its subscribers is encoded once."""
    if not isinstance(message, dict) or message.get("type") != "next":
        return encode_json(message)
    payload = message.get("payload")
    if not isinstance(payload, dict) or payload.keys() != {"data"}:
        return encode_json(message)
    data = payload["data"]
    if not isinstance(data, _RenderedData):
        return encode_json(message)
    if data.encoded is None:
        encoded = encode_json(data)
        data.encoded = encoded.decode() if isinstance(encoded, bytes) else encoded
    return f'{{"id":{json.dumps(message["id"])},"type":"next","payload":{{"data":{data.encoded}}}}}'
