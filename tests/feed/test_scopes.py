"""Lineage scopes judged as the feed offers changes: edges far from a scope cost no wake-up,
edges that reach into it bring the new nodes in."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from headwater.feed.filters import ChangeFilter, ChangeMatcher
from headwater.feed.hub import ChangeFeed
from headwater.feed.log import ChangeRecord
from headwater.feed.scopes import LineageScopes, ScopeSpec
from headwater.ingest.service import ingest_events
from headwater.ingest.validate import validate_event
from tests.factories import run_event

pytestmark = pytest.mark.db

ROOT = "dataset:warehouse:a"


async def ingest(pool: asyncpg.Pool, *events: dict) -> None:
    async with pool.acquire() as conn:
        await ingest_events(conn, [validate_event(e) for e in events])


async def settle(feed: ChangeFeed) -> None:
    """Read every committed change, as a notification would make the feed do."""
    await feed.pump()


@pytest.fixture
async def feed(db: asyncpg.Pool) -> AsyncIterator[ChangeFeed]:
    feed = ChangeFeed(db)
    await feed.start()
    try:
        yield feed
    finally:
        await feed.close()


async def test_far_edges_are_refused_without_waking_and_near_ones_arrive(db, feed):
    await ingest(db, run_event("load", inputs=["a"], outputs=["b"]))
    await settle(feed)
    scopes = LineageScopes(db, feed)
    matcher = ChangeMatcher(ChangeFilter(downstream_of=ScopeSpec(ROOT, 5, "DOWNSTREAM")), scopes)
    sub = feed.subscribe(refuses=matcher.refuses)
    stream = sub.changes()
    # The scope is walked when its first change is judged.
    await ingest(db, run_event("first", inputs=["b"], outputs=["c"]))
    await settle(feed)
    first: list[ChangeRecord] = []
    while not any(c.node_id == "dataset:warehouse:c" for c in first):
        change = await asyncio.wait_for(anext(stream), 5)
        if await matcher.matches(change):
            first.append(change)

    # Lineage elsewhere in the graph: judged at once, never queued.
    await ingest(db, run_event("elsewhere", inputs=["x"], outputs=["y"]))
    await settle(feed)
    assert not [c.node_id for c in sub.queue if c.node_id.endswith((":x", ":y", "elsewhere"))]

    # An edge out of a node of the scope brings its far end in: that change is delivered.
    await ingest(db, run_event("near", inputs=["c"], outputs=["d"]))
    await settle(feed)
    delivered: list[str] = []
    while "dataset:warehouse:d" not in delivered:
        change = await asyncio.wait_for(anext(stream), 5)
        if await matcher.matches(change):
            delivered.append(change.node_id)
    assert not any(n.endswith((":x", ":y", "elsewhere")) for n in delivered)
    await stream.aclose()
    matcher.close()
