"""lineageChanges over real websockets (graphql-transport-ws) against two server processes on one
database: events posted to one replica arrive at a subscriber of the other; resuming from a cursor
gets exactly what followed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from contextlib import asynccontextmanager

import httpx
import pytest
import websockets
from litestar.datastructures import State

from headwater.api.graphql.context import Context
from headwater.api.graphql.loaders import Loaders
from headwater.api.graphql.schema import schema
from headwater.feed.hub import ChangeFeed
from headwater.feed.scopes import LineageScopes
from headwater.ingest.validate import validate_event
from tests.factories import job_run, run_event
from tests.server import start_uvicorn, wait_ready
from tests.writes import ingest_events

pytestmark = [pytest.mark.db, pytest.mark.slow]

CHANGES = """subscription($after: String, $filter: LineageChangeFilter) {
  lineageChanges(after: $after, filter: $filter) { cursor kind nodeId nodeType namespace at details }
}"""


@pytest.fixture(scope="module")
async def replicas(database_url, pool, tmp_path_factory):
    """Two server processes on the test database, started on a clean model."""
    async with pool.acquire() as conn:
        await conn.execute(
            "TRUNCATE raw_events, change_log, column_lineage, lineage_edges, run_datasets, "
            "run_states, runs, job_versions, jobs, dataset_versions, dataset_fields, dataset_aliases, "
            "datasets, sources, namespaces, tags CASCADE"
        )
    logs = [tmp_path_factory.mktemp("replica") / "server.log" for _ in range(2)]
    servers = [
        start_uvicorn(database_url, log=log, env={"HEADWATER_POOL_MAX_SIZE": "4"}) for log in logs
    ]
    try:
        for (process, url), log in zip(servers, logs, strict=True):
            await asyncio.to_thread(wait_ready, process, url, log)
        yield [url for _, url in servers]
    finally:
        for process, _ in servers:
            process.terminate()
        for process, _ in servers:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


class Subscriber:
    """A graphql-transport-ws client of lineageChanges."""

    def __init__(self, ws):
        self.ws = ws

    async def next(self, timeout: float = 10.0) -> dict:
        while True:
            message = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
            if message["type"] == "ping":
                await self.ws.send(json.dumps({"type": "pong"}))
                continue
            if message["type"] == "next":
                payload = message["payload"]
                assert "errors" not in payload, payload
                return payload["data"]["lineageChanges"]
            raise AssertionError(message)

    async def take(self, n: int, timeout: float = 10.0) -> list[dict]:
        return [await self.next(timeout) for _ in range(n)]

    async def nothing_more(self, wait: float = 0.5) -> None:
        with pytest.raises(TimeoutError):
            await self.next(wait)


@asynccontextmanager
async def subscribe(url: str, after: str | None = None, change_filter: dict | None = None):
    ws_url = url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(ws_url, subprotocols=["graphql-transport-ws"]) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        await ws.send(
            json.dumps(
                {
                    "id": "1",
                    "type": "subscribe",
                    "payload": {
                        "query": CHANGES,
                        "variables": {"after": after, "filter": change_filter},
                    },
                }
            )
        )
        yield Subscriber(ws)


async def post_events(url: str, events: list[dict]) -> None:
    async with httpx.AsyncClient(base_url=url) as http:
        for event in events:
            response = await http.post("/api/v1/lineage", json=event)
            assert response.status_code == 201, response.text


async def latest_cursor(url: str) -> str:
    async with httpx.AsyncClient(base_url=url) as http:
        response = await http.post("/graphql", json={"query": "{ latestChangeCursor }"})
        return response.json()["data"]["latestChangeCursor"]


async def logged_after(pool, cursor: str) -> list[tuple[str, str, str]]:
    rows = await pool.fetch(
        "SELECT change_id, kind, node_id FROM change_log WHERE change_id > $1 ORDER BY change_id",
        int(cursor),
    )
    return [(str(r["change_id"]), r["kind"], r["node_id"]) for r in rows]


async def max_change_id(pool) -> str:
    return str(await pool.fetchval("SELECT coalesce(max(change_id), 0) FROM change_log"))


def seen(changes: list[dict]) -> list[tuple[str, str, str]]:
    return [(c["cursor"], c["kind"], c["nodeId"]) for c in changes]


async def test_changes_cross_replicas_and_resume_from_a_cursor(replicas, pool):
    writer, reader = replicas
    start = await latest_cursor(reader)
    async with subscribe(reader, after=start) as sub:
        await post_events(writer, job_run("extract", inputs=["orders_raw"], outputs=["orders"]))
        expected = await logged_after(pool, start)
        assert len(expected) >= 5
        first = await sub.take(len(expected))
        assert seen(first) == expected
        assert {c["kind"] for c in first} >= {
            "DATASET_CREATED",
            "JOB_CREATED",
            "RUN_STATE_CHANGED",
            "EDGES_ADDED",
            "JOB_VERSION_CHANGED",
        }
        edges = next(c for c in first if c["kind"] == "EDGES_ADDED")
        assert edges["nodeType"] == "JOB"
        assert edges["namespace"] == "pipelines"
        assert {"origin": "dataset:warehouse:orders_raw", "destination": "job:pipelines:extract"} in (
            edges["details"]["edges"]
        )
        await sub.nothing_more()
    last = first[-1]["cursor"]

    # While nobody listens, more happens (to the other replica, then to this one).
    await post_events(writer, job_run("transform", inputs=["orders"], outputs=["orders_daily"]))
    await post_events(reader, [run_event("transform", "FAIL", time=5)])
    missed = await logged_after(pool, last)

    async with subscribe(writer, after=last) as sub:
        assert seen(await sub.take(len(missed))) == missed
        await sub.nothing_more()
        live_start = missed[-1][0]
        await post_events(reader, job_run("load", inputs=["orders_daily"], outputs=["warehouse_report"]))
        live = await logged_after(pool, live_start)
        assert seen(await sub.take(len(live))) == live
        await sub.nothing_more()


async def test_upstream_filter_follows_the_graph_as_it_grows(replicas, pool):
    writer, reader = replicas
    start = await latest_cursor(reader)
    scope = {"upstreamOf": {"nodeId": "dataset:warehouse:kpis", "depth": 3}}
    async with subscribe(reader, after=start, change_filter=scope) as sub:
        await post_events(writer, [run_event("unrelated", inputs=["u1"], outputs=["u2"])])
        before = await max_change_id(pool)
        await post_events(writer, [run_event("build_kpis", inputs=["facts"], outputs=["kpis"])])
        build = await logged_after(pool, before)
        assert seen(await sub.take(len(build))) == build
        before = build[-1][0]
        # A job feeding an upstream dataset joins the scope once its edges exist.
        await post_events(writer, [run_event("load_facts", inputs=["source_system"], outputs=["facts"])])
        feed = await logged_after(pool, before)
        assert seen(await sub.take(len(feed))) == feed
        await post_events(writer, [run_event("unrelated", inputs=["u1"], outputs=["u3"])])
        await sub.nothing_more()


# Past a bigint, past Python's 4,300-digit limit on integer text, a digit that is no ASCII digit.
@pytest.mark.parametrize("after", ["yesterday", "9" * 20, "9" * 5000, "²"])
async def test_a_bad_cursor_is_an_error_with_its_code(replicas, after):
    async with subscribe(replicas[0], after=after) as sub:
        message = json.loads(await asyncio.wait_for(sub.ws.recv(), 10))
    assert message["type"] == "next"
    assert message["payload"]["errors"][0]["extensions"]["code"] == "invalid_cursor"


async def test_closing_a_subscription_frees_it(db, settings):
    feed = ChangeFeed(db)
    await feed.start()
    scopes = LineageScopes(db, feed)
    context = Context(
        state=State({"pool": db, "settings": settings, "feed": feed, "lineage_scopes": scopes}),
        loaders=Loaders(db),
    )
    variables = {"filter": {"upstreamOf": {"nodeId": "dataset:warehouse:x", "depth": 1}}}
    stream = await schema.subscribe(CHANGES, variable_values=variables, context_value=context)
    task = asyncio.create_task(anext(stream))
    await asyncio.sleep(0.1)
    assert feed.subscriber_count == 1
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await stream.aclose()
    assert feed.subscriber_count == 0
    assert scopes._scopes == {}
    await feed.close()


async def test_a_scope_past_its_cap_ends_the_subscription_with_an_error(db, settings):
    """Never a subscription that silently misses nodes: refused when it starts past the cap, ended
    with an error naming the node and the cap when the graph grows past it."""
    async with db.acquire() as conn:
        await ingest_events(conn, [validate_event(run_event("load", inputs=["a"], outputs=["b"]))])
    feed = ChangeFeed(db)
    await feed.start()
    scopes = LineageScopes(db, feed, max_nodes=3)
    context = Context(
        state=State({"pool": db, "settings": settings, "feed": feed, "lineage_scopes": scopes}),
        loaders=Loaders(db),
    )
    try:
        # Upstream of b: b, load, a. Within the cap: live changes arrive as ever.
        variables = {"filter": {"upstreamOf": {"nodeId": "dataset:warehouse:b", "depth": 5}}}
        stream = await schema.subscribe(CHANGES, variable_values=variables, context_value=context)
        first = asyncio.create_task(anext(stream))
        await asyncio.sleep(0.2)
        async with db.acquire() as conn:
            await ingest_events(conn, [validate_event(run_event("load", "FAIL", time=5))])
        await feed.pump()
        result = await asyncio.wait_for(first, 5)
        assert not result.errors, result.errors
        assert result.data["lineageChanges"]["nodeId"] == "job:pipelines:load"

        # Past the cap as the graph grows: the change that grew it ends the subscription.
        nxt = asyncio.create_task(anext(stream))
        async with db.acquire() as conn:
            await ingest_events(conn, [validate_event(run_event("feed_a", inputs=["z"], outputs=["a"]))])
        await feed.pump()
        result = await asyncio.wait_for(nxt, 5)
        assert result.errors, result
        error = result.errors[0]
        assert error.extensions["code"] == "lineage_scope_too_large"
        assert "dataset:warehouse:b" in error.message
        assert "more than 3 nodes" in error.message
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(anext(stream), 5)
        await stream.aclose()
        assert feed.subscriber_count == 0
        assert scopes._scopes == {}

        # Past the cap when it starts: refused at once, before any change.
        stream = await schema.subscribe(CHANGES, variable_values=variables, context_value=context)
        result = await asyncio.wait_for(anext(stream), 5)
        assert result.errors[0].extensions["code"] == "lineage_scope_too_large"
        await stream.aclose()
        assert feed.subscriber_count == 0
        assert scopes._scopes == {}
    finally:
        await scopes.close()
        await feed.close()
