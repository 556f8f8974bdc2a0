"""The context of a GraphQL operation: the pool, settings, change feed and per-operation loaders."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import strawberry
from litestar.datastructures import State
from strawberry.extensions import SchemaExtension
from strawberry.litestar import BaseContext

from headwater.api.auth import SCOPES_STATE
from headwater.api.graphql.loaders import Loaders

if TYPE_CHECKING:
    from collections.abc import Iterator

    import asyncpg

    from headwater.feed.hub import ChangeFeed
    from headwater.feed.scopes import LineageScopes
    from headwater.settings import Settings


class Context(BaseContext, kw_only=True):
    """What resolvers get as ``info.context``."""

    state: Any
    loaders: Any = None
    # What a websocket's connection_init carried (strawberry sets it): where a browser's key comes.
    connection_params: Any = None
    # Subscriptions open on this websocket (a context lives as long as its connection).
    open_subscriptions: int = 0

    @property
    def scopes(self) -> frozenset[str]:
        """The scopes the request's key was granted (every scope while the server is open)."""
        connection = self.request or self.websocket
        return frozenset() if connection is None else connection.state.get(SCOPES_STATE, frozenset())

    @property
    def pool(self) -> asyncpg.Pool:
        return self.state.pool

    @property
    def settings(self) -> Settings:
        return cast("Settings", self.state.settings)

    @property
    def feed(self) -> ChangeFeed:
        return cast("ChangeFeed", self.state.feed)

    @property
    def lineage_scopes(self) -> LineageScopes:
        return cast("LineageScopes", self.state.lineage_scopes)


async def context_getter(state: State) -> Context:
    """Litestar dependency: one context per HTTP request or websocket connection."""
    return Context(state=state, loaders=Loaders(state.pool))


class LoadersPerOperation(SchemaExtension):
    """Fresh DataLoaders for each operation, also for the many operations of one websocket."""

    def on_operation(self) -> Iterator[None]:
        context = self.execution_context.context
        if isinstance(context, Context):
            context.loaders = Loaders(context.pool)
        yield


Info = strawberry.Info[Context, None]
