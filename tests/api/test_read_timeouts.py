"""A read PostgreSQL ends at the statement timeout is a 503 saying so (`query_timeout`), not a
database said to be down: the question may be too large for the time allowed, and asking for less
is what helps."""

from __future__ import annotations

import asyncio
import dataclasses

import asyncpg
import pytest
from litestar.testing import AsyncTestClient, TestClient

from headwater.app import create_app
from tests.client import post_all
from tests.factories import job_run

pytestmark = pytest.mark.db

LINEAGE = "/api/v1/lineage?nodeId=dataset:warehouse:orders&depth=3"
QUERY = (
    '{ lineage(nodeId: "dataset:warehouse:orders", depth: 3) { ... on LineageGraph { nodes { id } } } }'
)


async def test_a_read_past_the_statement_timeout_is_a_query_timeout(make_database, settings):
    async with make_database() as url:
        app = create_app(dataclasses.replace(settings, database_url=url, statement_timeout_ms=300))
        async with AsyncTestClient(app=app) as client:
            await post_all(client, job_run("load", inputs=["orders"], outputs=["totals"]))
            assert (await client.get(LINEAGE)).status_code == 200
            holder = await asyncpg.connect(url)
            try:
                # The read waits on the lock until PostgreSQL cancels it.
                async with holder.transaction():
                    await holder.execute("LOCK TABLE lineage_edges IN ACCESS EXCLUSIVE MODE")
                    rest, graphql = await asyncio.gather(
                        client.get(LINEAGE), client.post("/graphql", json={"query": QUERY})
                    )
            finally:
                await holder.close()
            after = await client.get(LINEAGE)
    assert rest.status_code == 503, rest.text
    assert rest.json()["code"] == "query_timeout"
    assert rest.json()["detail"].startswith(
        "The query ran past the server's statement timeout (HEADWATER_STATEMENT_TIMEOUT_MS)"
    )
    assert rest.headers["retry-after"]
    assert graphql.json()["errors"][0]["extensions"]["code"] == "query_timeout"
    assert after.status_code == 200


async def test_lineage_reads_take_turns_and_one_waiting_too_long_is_busy(make_database, settings):
    # One read at a time: the first waits on a lock, the second waits for its turn past the pool's
    # acquire timeout and is answered busy; other requests go through meanwhile. Requests from
    # threads of their own, which the app serves concurrently.
    turns = dataclasses.replace(
        settings, lineage_reads_at_once=1, pool_acquire_timeout_ms=300, statement_timeout_ms=5_000
    )
    async with make_database() as url:
        with TestClient(app=create_app(dataclasses.replace(turns, database_url=url))) as client:
            for event in job_run("load", inputs=["orders"], outputs=["totals"]):
                assert client.post("/api/v1/lineage", json=event).status_code == 201
            holder = await asyncpg.connect(url)
            try:
                async with holder.transaction():
                    await holder.execute("LOCK TABLE lineage_edges IN ACCESS EXCLUSIVE MODE")
                    first = asyncio.ensure_future(asyncio.to_thread(client.get, LINEAGE))
                    await asyncio.sleep(0.2)
                    second = await asyncio.to_thread(
                        client.get, "/api/v1/column-lineage?nodeId=dataset:warehouse:orders"
                    )
                    healthy = await asyncio.to_thread(client.get, "/healthz")
                    assert not first.done()
            finally:
                await holder.close()
            first_answer = await first
    assert second.status_code == 503, second.text
    assert second.json()["code"] == "database_busy"
    assert second.json()["detail"] == (
        "The server is busy: its 1 lineage reads at a time stayed taken for 0.3 s. Retry later."
    )
    assert healthy.status_code == 200
    assert first_answer.status_code == 200, first_answer.text
