"""Open subscriptions are limited per websocket and per server process, and websockets per server
process, over a real `headwater serve`: past a limit a subscription or a websocket is refused with
an error naming it, and the others go on."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

import httpx
import pytest
import websockets

from tests.factories import run_event
from tests.server import server_of_its_own

pytestmark = pytest.mark.db

server = server_of_its_own(
    "headwater_subscription_limits",
    secured=False,
    env={
        "HEADWATER_MAX_SUBSCRIPTIONS": "5",
        "HEADWATER_MAX_SUBSCRIPTIONS_PER_CONNECTION": "3",
        "HEADWATER_MAX_WEBSOCKETS": "3",
        # A burst of 103 messages (3 subscriptions and 100), then 20 a second.
        "HEADWATER_WEBSOCKET_MESSAGES_PER_S": "20",
    },
)

# The default limits, but for subscriptions per websocket: more than the 100 a library took as its own.
many_per_connection = server_of_its_own(
    "headwater_subscriptions_per_connection",
    secured=False,
    env={"HEADWATER_MAX_SUBSCRIPTIONS_PER_CONNECTION": "150"},
)

CHANGES = "subscription { lineageChanges { cursor nodeId } }"


async def connect(url: str) -> Any:
    ws = await websockets.connect(
        url.replace("http://", "ws://") + "/graphql", subprotocols=["graphql-transport-ws"]
    )
    await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
    assert json.loads(await ws.recv())["type"] == "connection_ack"
    return ws


async def subscribe(ws: Any, *ids: str) -> None:
    for op in ids:
        await ws.send(json.dumps({"id": op, "type": "subscribe", "payload": {"query": CHANGES}}))


async def messages(ws: Any, until: int, timeout: float = 10) -> list[dict[str, Any]]:
    return [json.loads(await asyncio.wait_for(ws.recv(), timeout)) for _ in range(until)]


async def receivers(ws: Any, quiet: float = 1.0) -> set[str]:
    """The operations that got a change, of what arrives until nothing has for ``quiet`` seconds
    (an event makes several changes)."""
    ids = set()
    while True:
        try:
            message = json.loads(await asyncio.wait_for(ws.recv(), quiet))
        except TimeoutError:
            return ids
        assert message["type"] == "next", message
        assert message["payload"]["data"]["lineageChanges"]["nodeId"], message
        ids.add(message["id"])


async def post(url: str, name: str) -> None:
    async with httpx.AsyncClient(base_url=url) as http:
        assert (await http.post("/api/v1/lineage", json=run_event(name))).status_code == 201


def refusals(received: list[dict[str, Any]]) -> dict[str, str]:
    """Operation id -> the error a refused subscription got."""
    refused = {}
    for m in received:
        errors = m.get("payload", {}).get("errors") if m["type"] == "next" else None
        if errors:
            assert errors[0]["extensions"]["code"] == "too_many_subscriptions"
            refused[m["id"]] = errors[0]["message"]
    return refused


async def test_past_a_limit_a_subscription_is_refused_and_the_others_go_on(server):
    first, second = await connect(server.url), await connect(server.url)
    try:
        # Four on one connection: the fourth is past the connection's limit of 3.
        await subscribe(first, "a1", "a2", "a3", "a4")
        refused = refusals(await messages(first, 2))  # the refusal, then its completion
        assert refused == {
            "a4": "This connection has 3 subscriptions open, its limit "
            "(HEADWATER_MAX_SUBSCRIPTIONS_PER_CONNECTION); complete some first, or ask for "
            "several nodes in one subscription (filter nodeIds, namespaces, upstreamOf)."
        }
        # Three more on another: the server's limit of 5 leaves room for two.
        await subscribe(second, "b1", "b2", "b3")
        refused = refusals(await messages(second, 2))
        assert refused == {
            "b3": "This server has 5 subscriptions open, its limit (HEADWATER_MAX_SUBSCRIPTIONS);"
            " retry later or on another server."
        }
        # The five open ones each get the change; the refused ones get nothing more.
        await post(server.url, "after the limits")
        assert await receivers(first) == {"a1", "a2", "a3"}
        assert await receivers(second) == {"b1", "b2"}
        # Completing one makes room again, on its connection and on the server.
        await first.send(json.dumps({"id": "a1", "type": "complete"}))
        await asyncio.sleep(0.3)
        await subscribe(first, "a5")
        await post(server.url, "room again")
        assert await receivers(first) == {"a2", "a3", "a5"}
    finally:
        await first.close()
        await second.close()
    # Connections closed, their subscriptions are gone: a new client gets all it may hold.
    third = await connect(server.url)
    try:
        await subscribe(third, "c1", "c2", "c3")
        await asyncio.sleep(0.3)
        await post(server.url, "after closing")
        assert await receivers(third) == {"c1", "c2", "c3"}
    finally:
        await third.close()


async def test_past_the_most_websockets_a_new_one_is_refused_at_its_handshake(server):
    held = [await connect(server.url) for _ in range(3)]
    try:
        with pytest.raises(websockets.InvalidStatus) as refused:
            await connect(server.url)
        response = refused.value.response
        assert response.status_code == 503
        assert response.headers["Retry-After"] == "1"
        problem = json.loads(response.body)
        assert problem["code"] == "too_many_websockets"
        assert problem["detail"] == (
            "This server has 3 websockets open, the most it holds (HEADWATER_MAX_WEBSOCKETS). "
            "Retry later."
        )
        # The open ones go on, and so does HTTP.
        await subscribe(held[0], "still")
        await asyncio.sleep(0.3)
        await post(server.url, "while full")
        assert await receivers(held[0]) == {"still"}
        # One closed, a new one is let in.
        await held.pop().close()
        await asyncio.sleep(0.3)
        held.append(await connect(server.url))
    finally:
        for ws in held:
            await ws.close()


async def test_a_client_sending_faster_than_its_pace_is_read_at_that_pace(server):
    ws = await connect(server.url)  # its connection_init takes one message of the burst
    try:
        started = time.monotonic()
        await subscribe(ws, *(f"f{i}" for i in range(400)))
        answered, slowest_health = 0, 0.0
        async with httpx.AsyncClient(base_url=server.url) as http:
            while (elapsed := time.monotonic() - started) < 3:
                try:
                    message = json.loads(await asyncio.wait_for(ws.recv(), 0.05))
                    answered += message["type"] == "complete"  # a refused subscription's end
                except TimeoutError:
                    asked = time.monotonic()
                    assert (await http.get("/healthz")).status_code == 200
                    slowest_health = max(slowest_health, time.monotonic() - asked)
    finally:
        await ws.close()
    # The burst (102 subscribe messages, 3 of them taken), then 20 a second: 99 refusals at once
    # and 60 more over the 3 seconds, not the 397 a client sending this fast would otherwise get.
    assert 99 <= answered <= 99 + 20 * elapsed + 1
    assert answered >= 99 + 20 * (elapsed - 1.5)
    assert slowest_health < 1


async def test_a_large_message_counts_as_one_for_each_16_kib_it_holds(server):
    ws = await connect(server.url)  # its connection_init takes one message of the burst
    padding = "x" * 200_000  # each message then counts as 13
    body = {"type": "subscribe", "payload": {"query": CHANGES, "variables": {"padding": padding}}}
    try:
        started = time.monotonic()
        for i in range(30):
            await ws.send(json.dumps({**body, "id": f"big{i}"}))
        answered = 0
        while (elapsed := time.monotonic() - started) < 3:
            with contextlib.suppress(TimeoutError):
                message = json.loads(await asyncio.wait_for(ws.recv(), 0.05))
                answered += message["type"] == "complete"  # a refused subscription's end
    finally:
        await ws.close()
    # The burst of 103 holds seven (three subscriptions taken, four refused), then one every 13/20
    # of a second: not the 27 refusals reading them at once would give.
    assert 4 <= answered <= 4 + 20 * elapsed / 13 + 1


async def test_a_message_larger_than_a_graphql_body_closes_the_websocket(server):
    ws = await connect(server.url)
    body = {"type": "subscribe", "payload": {"query": CHANGES, "variables": {"x": "x" * 5_000_000}}}
    try:
        await ws.send(json.dumps({**body, "id": "huge"}))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
    finally:
        await ws.close()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1009  # message too big: 4 MiB at most, as over HTTP
    async with httpx.AsyncClient(base_url=server.url) as http:
        assert (await http.get("/healthz")).status_code == 200


async def test_a_connection_holds_as_many_subscriptions_as_its_limit(many_per_connection):
    ws = await connect(many_per_connection.url)
    try:
        await subscribe(ws, *(f"s{i}" for i in range(151)))
        refused = refusals(await messages(ws, 2))  # the refusal, then its completion
    finally:
        await ws.close()
    assert list(refused) == ["s150"]
    assert refused["s150"].startswith("This connection has 150 subscriptions open, its limit")
