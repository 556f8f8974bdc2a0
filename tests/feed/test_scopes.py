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


async def test_changes_outside_every_scope_are_not_even_offered(db, feed):
    await ingest(db, run_event("load", inputs=["a"], outputs=["b"]))
    await settle(feed)
    scopes = LineageScopes(db, feed)
    spec = ScopeSpec(ROOT, 5, "DOWNSTREAM")
    matcher = ChangeMatcher(ChangeFilter(downstream_of=spec), scopes)
    sub = feed.subscribe(refuses=matcher.refuses, scopes=[spec])
    stream = sub.changes()

    async def delivered_until(*node_ids: str) -> list[str]:
        out: list[str] = []
        while not set(node_ids) <= set(out):
            change = await asyncio.wait_for(anext(stream), 5)
            if await matcher.matches(change):
                out.append(change.node_id)
        return out

    offered: list[tuple[ChangeRecord, list[ScopeSpec]]] = []
    judging = scopes.judging

    def recorded(change: ChangeRecord) -> list[ScopeSpec]:
        offered.append((change, judging(change)))
        return offered[-1][1]

    feed.scopes_judging = recorded
    # Before its first walk the scope judges every change.
    await ingest(db, run_event("first", inputs=["b"], outputs=["c"]))
    await settle(feed)
    assert offered
    assert all(specs == [spec] for _, specs in offered)
    await delivered_until("dataset:warehouse:c")

    # Walked: lineage elsewhere is judged by no scope, so not offered to the subscription at all.
    offered.clear()
    await ingest(db, run_event("elsewhere", inputs=["x"], outputs=["y"]))
    await settle(feed)
    assert offered
    assert all(specs == [] for _, specs in offered), offered
    assert not [c.node_id for c in sub.queue if c.node_id.endswith((":x", ":y", "elsewhere"))]

    # An edge out of the scope brings its far end in as the feed emits it; the change arrives.
    offered.clear()
    await ingest(db, run_event("near", inputs=["c"], outputs=["d"]))
    await settle(feed)
    assert any(specs == [spec] for _, specs in offered)
    delivered = await delivered_until("dataset:warehouse:d", "job:pipelines:near")
    assert not any(n.endswith((":x", ":y", "elsewhere")) for n in delivered)
    hops = scopes.current(spec, offered[-1][0])
    assert hops is not None
    assert {"job:pipelines:near", "dataset:warehouse:d"} <= hops.keys()

    await stream.aclose()
    matcher.close()
    assert feed.subscriber_count == 0
    assert not feed._by_scope
    assert scopes._scopes == {}
