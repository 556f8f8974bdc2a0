"""Subscribers asking the same of a change share one execution of their selection and one JSON
encoding of it: through the real schema, over a real feed on the test database."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from litestar.datastructures import State

from headwater.api.graphql.context import Context
from headwater.api.graphql.loaders import Loaders
from headwater.api.graphql.schema import schema
from headwater.api.graphql.subscriptions import encode_message
from headwater.feed.hub import ChangeFeed
from headwater.feed.scopes import LineageScopes
from headwater.settings import Settings
from headwater.store.changes import Change, insert_changes

pytestmark = pytest.mark.db

SELECTION = """subscription($filter: LineageChangeFilter) {
  lineageChanges(filter: $filter) { cursor kind nodeId details }
}"""
OTHER = "subscription { lineageChanges { cursor kind } }"
AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
DETAILS = {"fields": [{"name": f"c{i}", "type": "int"} for i in range(20)]}


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


@pytest.fixture
async def feed(db: asyncpg.Pool) -> AsyncIterator[ChangeFeed]:
    running = ChangeFeed(db)
    await running.start()
    try:
        yield running
    finally:
        await running.close()


async def test_subscribers_asking_the_same_share_one_rendering(
    db: asyncpg.Pool, settings: Settings, feed: ChangeFeed
) -> None:
    scopes = LineageScopes(db, feed)

    async def subscribe(query: str, variables: dict[str, Any] | None = None) -> Any:
        # A context of its own, as each websocket connection has.
        state = State({"pool": db, "settings": settings, "feed": feed, "lineage_scopes": scopes})
        context = Context(state=state, loaders=Loaders(db))
        return await schema.subscribe(query, variable_values=variables, context_value=context)

    everything = {"filter": None}
    created = {"filter": {"kinds": ["DATASET_CREATED"]}}
    streams = [
        *[await subscribe(SELECTION, everything) for _ in range(3)],
        await subscribe(SELECTION, created),
        await subscribe(OTHER),
    ]
    pending = [asyncio.create_task(anext(stream)) for stream in streams]
    await asyncio.sleep(0.2)
    assert feed.subscriber_count == len(streams)
    async with db.acquire() as conn, conn.transaction():
        [change_id] = await insert_changes(
            conn, [Change("DATASET_CREATED", "dataset:warehouse:orders", "warehouse", AT, DETAILS)]
        )
    await feed.pump()
    *same, filtered, other = await asyncio.wait_for(asyncio.gather(*pending), 10)
    for stream in streams:
        await stream.aclose()

    expected = {
        "lineageChanges": {
            "cursor": str(change_id),
            "kind": "DATASET_CREATED",
            "nodeId": "dataset:warehouse:orders",
            "details": DETAILS,
        }
    }
    assert [r.errors for r in [*same, filtered, other]] == [None] * 5
    assert [r.data for r in same] == [expected] * 3
    # Executed once for the three that ask the same.
    assert same[1].data is same[0].data
    assert same[2].data is same[0].data
    # Other variables or another selection: a rendering of their own.
    assert filtered.data == expected
    assert filtered.data is not same[0].data
    assert other.data == {"lineageChanges": {"cursor": str(change_id), "kind": "DATASET_CREATED"}}

    # Sent as the plain encoding would send it, the shared data encoded once.
    encodings: list[object] = []

    def encode(value: object) -> str:
        encodings.append(value)
        return compact(value)

    for subscription_id, result in zip(["1", 'a"b', "3"], same, strict=True):
        message = {"id": subscription_id, "type": "next", "payload": {"data": result.data}}
        assert json.loads(encode_message(message, encode)) == json.loads(compact(message))
    assert encodings == [expected]
    # Anything else is encoded as it comes.
    for message in (
        {"id": "4", "type": "next", "payload": {"data": filtered.data, "errors": [{"message": "x"}]}},
        {"id": "5", "type": "next", "payload": {"data": dict(expected)}},
        {"type": "ping"},
        {"data": expected},
    ):
        assert encode_message(message, compact) == compact(message)


async def test_a_change_read_back_from_the_log_is_rendered_for_its_reader(
    db: asyncpg.Pool, settings: Settings, feed: ChangeFeed
) -> None:
    async with db.acquire() as conn, conn.transaction():
        [change_id] = await insert_changes(
            conn, [Change("DATASET_CREATED", "dataset:warehouse:old", "warehouse", AT, DETAILS)]
        )
    await feed.pump()
    state = State(
        {"pool": db, "settings": settings, "feed": feed, "lineage_scopes": LineageScopes(db, feed)}
    )
    after = {"after": str(change_id - 1)}
    query = "subscription($after: String) { lineageChanges(after: $after) { cursor nodeId } }"
    readers = [
        await schema.subscribe(
            query, variable_values=after, context_value=Context(state=state, loaders=Loaders(db))
        )
        for _ in range(2)
    ]
    results = await asyncio.wait_for(asyncio.gather(*(anext(r) for r in readers)), 10)
    for reader in readers:
        await reader.aclose()
    expected = {"lineageChanges": {"cursor": str(change_id), "nodeId": "dataset:warehouse:old"}}
    assert [r.data for r in results] == [expected, expected]
