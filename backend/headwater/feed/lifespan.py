"""Start the change feed with the app (after the pool) and stop it before the pool closes."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from headwater.feed.hub import ChangeFeed
from headwater.feed.listener import ChangeListener
from headwater.feed.scopes import LineageScopes

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from litestar import Litestar


@asynccontextmanager
async def change_feed(app: Litestar) -> AsyncIterator[None]:
    """app.state.feed (the reader) and app.state.lineage_scopes (for subscription filters)."""
    feed = ChangeFeed(app.state.pool)
    await feed.start()
    listener = ChangeListener(app.state.settings.database_url, feed.notify)
    await listener.start()
    app.state.feed = feed
    app.state.lineage_scopes = LineageScopes(app.state.pool, feed)
    try:
        yield
    finally:
        await listener.close()
        await app.state.lineage_scopes.close()
        await feed.close()
