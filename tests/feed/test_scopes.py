"""Lineage scopes judged as the feed offers changes: edges far from a scope cost no wake-up,
edges that reach into it bring the new nodes in."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from headwater.errors import NodeNotFoundError
from headwater.feed.filters import ChangeFilter, ChangeMatcher
from headwater.feed.hub import ChangeFeed
from headwater.feed.log import ChangeRecord
from headwater.feed.scopes import LineageScopes, ScopeSpec, ScopeTooLargeError
from headwater.ingest.validate import validate_event
from headwater.lineage.graph import fetch_lineage, walk_hops
from tests.factories import run_event
from tests.writes import ingest_events

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
    # Walked when acquired; until then it judges every change: either way, this one reaches it.
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


async def warmed(scopes: LineageScopes) -> None:
    """Wait for the walks of the scopes acquired so far."""
    await asyncio.gather(*scopes._warming.values())


async def test_the_lean_walk_finds_the_nodes_and_hops_of_fetch_lineage(db):
    # Two paths of different lengths from a to d, a cycle, a branch, a closed edge and a deleted node.
    await ingest(
        db,
        run_event("load", inputs=["a", "old"], outputs=["b"]),
        run_event("load", inputs=["a"], outputs=["b"]),  # closes old -> load
        run_event("clean", inputs=["b"], outputs=["c"]),
        run_event("join", inputs=["c", "a"], outputs=["d"]),
        run_event("loop", inputs=["d"], outputs=["b"]),
        run_event("branch", inputs=["b"], outputs=["e", "gone"]),
        run_event("after_gone", inputs=["gone"], outputs=["f"]),
    )
    async with db.acquire() as conn:
        await conn.execute("UPDATE datasets SET deleted_at = now() WHERE name = 'gone'")
        roots = [
            "dataset:warehouse:a",
            "dataset:warehouse:b",
            "dataset:warehouse:d",
            "job:pipelines:clean",
        ]
        compared = 0
        for root in roots:
            for direction in ("DOWNSTREAM", "UPSTREAM", "BOTH"):
                for depth in (0, 1, 2, 5):
                    full = await fetch_lineage(conn, [root], depth=depth, direction=direction)
                    lean = await walk_hops(conn, [root], depth=depth, direction=direction)
                    assert lean.hops == {n.id: n.hops for n in full.nodes}, (root, direction, depth)
                    assert lean.truncated == full.truncated
                    compared += len(lean.hops)
        assert compared > 100
        # The cap cuts both alike.
        full = await fetch_lineage(conn, ["dataset:warehouse:a"], depth=5, direction="BOTH", max_nodes=3)
        lean = await walk_hops(conn, ["dataset:warehouse:a"], depth=5, direction="BOTH", max_nodes=3)
        assert lean.truncated
        assert full.truncated
        assert lean.hops == {n.id: n.hops for n in full.nodes}
        for walk in (fetch_lineage, walk_hops):
            with pytest.raises(NodeNotFoundError):
                await walk(conn, ["dataset:warehouse:nowhere"], depth=1, direction="DOWNSTREAM")


async def test_a_scope_is_walked_when_acquired_not_when_its_first_change_comes(db, feed):
    await ingest(db, run_event("load", inputs=["a"], outputs=["b"]))
    await settle(feed)
    scopes = LineageScopes(db, feed)
    spec = ScopeSpec(ROOT, 5, "DOWNSTREAM")
    matcher = ChangeMatcher(ChangeFilter(downstream_of=spec), scopes)
    sub = feed.subscribe(refuses=matcher.refuses, scopes=[spec])
    stream = sub.changes()
    await warmed(scopes)
    assert scopes.walks == 1
    walked_at = scopes._scopes[spec].computed_at
    assert scopes._scopes[spec].hops == {ROOT: 0, "job:pipelines:load": 1, "dataset:warehouse:b": 2}

    # Elsewhere: judged by no scope, so not even offered.
    await ingest(db, run_event("elsewhere", inputs=["x"], outputs=["y"]))
    await settle(feed)
    assert not sub.queue
    # Inside: delivered, judged against the scope walked before it, plus the edges it brought.
    await ingest(db, run_event("first", inputs=["b"], outputs=["c"]))
    await settle(feed)
    delivered: list[str] = []
    while "dataset:warehouse:c" not in delivered:
        change = await asyncio.wait_for(anext(stream), 5)
        if await matcher.matches(change):
            delivered.append(change.node_id)
    assert scopes._scopes[spec].computed_at == walked_at  # never walked from its root again
    assert scopes._scopes[spec].hops["dataset:warehouse:c"] == 4
    await stream.aclose()
    matcher.close()
    assert scopes._scopes == {}
    assert not scopes._warming


async def test_edges_changed_during_the_first_walk_are_applied_on_top_of_it(db, feed):
    await ingest(
        db,
        run_event("load", inputs=["a"], outputs=["b"]),
        run_event("copy", inputs=["b"], outputs=["x"]),
    )
    await settle(feed)
    scopes = LineageScopes(db, feed, max_walks=1)
    spec = ScopeSpec(ROOT, 5, "DOWNSTREAM")
    await scopes._walking.acquire()  # another walk is under way: this one waits, its scope locked
    scopes.acquire(spec)
    await asyncio.sleep(0.05)
    scope = scopes._scopes[spec]
    assert scope.lock.locked()
    assert scope.computed_at >= 0
    # Emitted while it waits: kept, and applied once it is walked.
    await ingest(db, run_event("more", inputs=["b"], outputs=["c"]))
    await settle(feed)
    assert scope.pending
    scopes._walking.release()
    await warmed(scopes)
    assert not scope.pending
    assert not scope.stale
    assert {"job:pipelines:more", "dataset:warehouse:c", "dataset:warehouse:x"} <= scope.hops.keys()

    # A removed edge that touches the scope while it is walked again makes it stale: walked anew.
    scopes.release(spec)
    await scopes._walking.acquire()
    scopes.acquire(spec)
    await asyncio.sleep(0.05)
    scope = scopes._scopes[spec]
    await ingest(db, run_event("copy", inputs=["a"], outputs=["y"]))  # closes b -> copy
    await settle(feed)
    scopes._walking.release()
    await warmed(scopes)
    assert scope.stale or not scope.pending
    change = (await feed.read_between(0, feed.position))[-1]
    hops = await scopes.nodes(spec, change)
    assert "dataset:warehouse:y" in hops
    assert "dataset:warehouse:x" in hops
    assert hops["dataset:warehouse:x"] == 2
    scopes.release(spec)


async def test_a_scope_released_before_its_walk_is_not_walked(db, feed):
    await ingest(db, run_event("load", inputs=["a"], outputs=["b"]))
    await settle(feed)
    scopes = LineageScopes(db, feed, max_walks=1)
    spec = ScopeSpec(ROOT, 5, "DOWNSTREAM")
    await scopes._walking.acquire()
    scopes.acquire(spec)
    task = scopes._warming[spec]
    await asyncio.sleep(0.01)
    scopes.release(spec)
    scopes._walking.release()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert scopes.walks == 0
    assert scopes._scopes == {}
    assert not scopes._warming


async def test_a_scope_past_its_cap_is_refused_never_cut(db, feed):
    await ingest(db, run_event("load", inputs=["a"], outputs=["b"]))
    await settle(feed)
    spec = ScopeSpec(ROOT, 5, "DOWNSTREAM")

    # Within the cap: the nodes and hops of the walk with the API's cap, as ever.
    scopes = LineageScopes(db, feed, max_nodes=4)
    matcher = ChangeMatcher(ChangeFilter(downstream_of=spec), scopes)
    await scopes.ready(spec)
    async with db.acquire() as conn:
        walked = await walk_hops(conn, [ROOT], depth=5, direction="DOWNSTREAM")
    assert scopes._scopes[spec].hops == walked.hops
    assert len(walked.hops) == 3
    assert not walked.truncated

    # An edge that brings it past the cap: judging the change raises, naming the node and the cap.
    sub = feed.subscribe(refuses=matcher.refuses, scopes=[spec])
    stream = sub.changes()
    await ingest(db, run_event("more", inputs=["b"], outputs=["c"]))
    await settle(feed)

    async def judge_until_refused() -> None:
        while True:
            await matcher.matches(await asyncio.wait_for(anext(stream), 5))

    with pytest.raises(ScopeTooLargeError) as raised:
        await judge_until_refused()
    assert raised.value.code == "lineage_scope_too_large"
    assert ROOT in raised.value.message
    assert "more than 4 nodes" in raised.value.message
    assert scopes._scopes[spec].hops == {}  # let go, never judged against cut
    with pytest.raises(ScopeTooLargeError):
        await scopes.ready(spec)
    # Every change is offered to its subscribers, so that they hear of it at once.
    await ingest(db, run_event("elsewhere", inputs=["x"], outputs=["y"]))
    await settle(feed)
    assert sub.queue
    last = sub.queue[-1]
    await stream.aclose()
    matcher.close()
    assert scopes._scopes == {}

    # Acquired anew: walked anew, past the cap at once; refused whatever a change touches.
    matcher = ChangeMatcher(ChangeFilter(downstream_of=spec), scopes)
    with pytest.raises(ScopeTooLargeError, match="more than 4 nodes"):
        await scopes.ready(spec)
    with pytest.raises(ScopeTooLargeError):
        await scopes.nodes(spec, last)
    assert scopes.judging(last) == [spec]
    assert scopes.current(spec, last) is None
    matcher.close()

    # The default cap follows it whole.
    normal = LineageScopes(db, feed)
    matcher = ChangeMatcher(ChangeFilter(downstream_of=spec), normal)
    await normal.ready(spec)
    hops = await normal.nodes(spec, last)
    assert {"job:pipelines:more", "dataset:warehouse:c"} <= hops.keys()
    matcher.close()


async def test_a_scope_grown_past_its_cap_by_the_walk_on_from_a_joining_node_is_refused(db, feed):
    await ingest(
        db,
        run_event("load", inputs=["a"], outputs=["b"]),
        run_event("far", inputs=["c"], outputs=["d", "e", "f"]),
    )
    await settle(feed)
    spec = ScopeSpec(ROOT, 5, "DOWNSTREAM")
    scopes = LineageScopes(db, feed, max_nodes=5)
    matcher = ChangeMatcher(ChangeFilter(downstream_of=spec), scopes)
    await scopes.ready(spec)
    walks = scopes.walks
    # b -> join -> c brings join and c in (5 nodes); the walk on from join finds 6 nodes, cut at the
    # cap: the scope is walked again from its root, which finds 9, past the cap.
    await ingest(db, run_event("join", inputs=["b"], outputs=["c"]))
    await settle(feed)
    change = (await feed.read_between(0, feed.position))[-1]
    with pytest.raises(ScopeTooLargeError, match="more than 5 nodes"):
        await matcher.matches(change)
    assert scopes.walks == walks + 2
    matcher.close()
