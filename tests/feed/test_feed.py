"""The change feed against real commits: order, gaps, replay, slow subscribers, reconnects."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import pytest

from headwater.feed.hub import ChangeFeed
from headwater.feed.listener import ChangeListener
from headwater.feed.log import ChangeRecord
from headwater.store.changes import Change, insert_changes

pytestmark = pytest.mark.db

AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def change(node: str, kind: str = "DATASET_CREATED") -> Change:
    return Change(kind, f"dataset:warehouse:{node}", "warehouse", AT)


async def commit(pool: asyncpg.Pool, *nodes: str) -> list[int]:
    async with pool.acquire() as conn, conn.transaction():
        return await insert_changes(conn, [change(n) for n in nodes])


@asynccontextmanager
async def running_feed(
    pool: asyncpg.Pool, database_url: str, **kwargs: float
) -> AsyncIterator[ChangeFeed]:
    feed = ChangeFeed(pool, **kwargs)  # type: ignore[arg-type]
    await feed.start()
    listener = ChangeListener(database_url, feed.notify)
    await listener.start()
    feed.listener = listener  # type: ignore[attr-defined]
    try:
        yield feed
    finally:
        await listener.close()
        await feed.close()


async def take(stream: AsyncIterator[ChangeRecord], n: int, timeout: float = 5.0) -> list[str]:
    """The dataset names of the next n changes of a subscription's stream."""

    async def collect() -> list[str]:
        return [(await anext(stream)).node_id.rsplit(":", 1)[1] for _ in range(n)]

    return await asyncio.wait_for(collect(), timeout)


async def test_subscribers_get_committed_changes_in_order(db: asyncpg.Pool, database_url: str) -> None:
    async with running_feed(db, database_url) as feed:
        a, b = feed.subscribe().changes(), feed.subscribe().changes()
        await commit(db, "one", "two")
        await commit(db, "three")
        assert await take(a, 3) == ["one", "two", "three"]
        assert await take(b, 3) == ["one", "two", "three"]


async def test_later_id_waits_for_an_earlier_one_still_committing(
    db: asyncpg.Pool, database_url: str
) -> None:
    async with running_feed(db, database_url) as feed:
        sub = feed.subscribe()
        stream = sub.changes()
        slow = await db.acquire()
        try:
            tx = slow.transaction()
            await tx.start()
            await slow.execute(
                "SELECT pg_current_xact_id()"
            )  # the transaction has an xid, as ingest's do
            await insert_changes(slow, [change("first")])  # id 1, not committed yet
            await commit(db, "second")  # id 2, committed
            await asyncio.sleep(0.3)
            assert feed.position == 0
            assert sub.queue == type(sub.queue)()
            await tx.commit()
        finally:
            await db.release(slow)
        assert await take(stream, 2) == ["first", "second"]


async def test_rolled_back_id_is_skipped_quickly(db: asyncpg.Pool, database_url: str) -> None:
    async with running_feed(db, database_url) as feed:
        sub = feed.subscribe().changes()
        async with db.acquire() as conn:
            tx = conn.transaction()
            await tx.start()
            await conn.execute("SELECT pg_current_xact_id()")
            await insert_changes(conn, [change("rolled-back")])
            await commit(db, "kept")
            await tx.rollback()
        started = asyncio.get_running_loop().time()
        assert await take(sub, 1) == ["kept"]
        assert asyncio.get_running_loop().time() - started < 2


async def test_replay_after_cursor_then_live_without_gap_or_repeat(
    db: asyncpg.Pool, database_url: str
) -> None:
    ids = await commit(db, "a", "b", "c")
    async with running_feed(db, database_url) as feed:
        sub = feed.subscribe(after=ids[0]).changes()
        await commit(db, "d")
        assert await take(sub, 3) == ["b", "c", "d"]
        await commit(db, "e")
        assert await take(sub, 1) == ["e"]


async def test_slow_subscriber_rereads_from_the_log_and_others_keep_pace(
    db: asyncpg.Pool, database_url: str
) -> None:
    async with running_feed(db, database_url, queue_size=3, page_size=4) as feed:
        slow_sub = feed.subscribe()
        slow, fast = slow_sub.changes(), feed.subscribe().changes()
        names = [f"n{i}" for i in range(20)]
        fast_got: list[str] = []
        fast_task = asyncio.create_task(take(fast, 20))
        for name in names:
            await commit(db, name)
        fast_got = await fast_task
        assert fast_got == names
        assert slow_sub.overflows >= 1
        assert await take(slow, 20) == names


async def test_listener_reconnects_and_nothing_is_lost(db: asyncpg.Pool, database_url: str) -> None:
    async with running_feed(db, database_url) as feed:
        listener: ChangeListener = feed.listener  # type: ignore[attr-defined]
        sub = feed.subscribe().changes()
        assert listener.connection is not None
        pid = listener.connection.get_server_pid()
        async with db.acquire() as conn:
            await conn.execute("SELECT pg_terminate_backend($1)", pid)
        await commit(db, "while-away")
        assert await take(sub, 1) == ["while-away"]

        async def reconnected() -> None:
            # The change may reach the subscriber by the log's catch-up before the listener has
            # noticed its connection gone (it was still marked connected): wait for the new one.
            while listener.connects < 2:
                await asyncio.sleep(0.01)
            await listener.wait_connected()

        await asyncio.wait_for(reconnected(), 5)
        await commit(db, "after")
        assert await take(sub, 1) == ["after"]


async def test_closed_stream_unsubscribes(db: asyncpg.Pool, database_url: str) -> None:
    async with running_feed(db, database_url) as feed:
        sub = feed.subscribe()
        stream = sub.changes()
        await commit(db, "x")
        assert (await asyncio.wait_for(anext(stream), 5)).node_id.endswith("x")
        assert feed.subscriber_count == 1
        await stream.aclose()
        assert feed.subscriber_count == 0


async def test_a_subscription_to_some_kinds_is_never_offered_the_others(
    db: asyncpg.Pool, database_url: str
) -> None:
    async with running_feed(db, database_url) as feed:
        sub = feed.subscribe(kinds=frozenset({"TAG_CHANGED"}))
        stream = sub.changes()
        [last] = await commit(db, "ignored")
        while feed.position < last:
            await asyncio.sleep(0.01)
        assert not sub.queue
        async with db.acquire() as conn, conn.transaction():
            await insert_changes(conn, [change("tagged", "TAG_CHANGED")])
        assert await take(stream, 1) == ["tagged"]
        await stream.aclose()
