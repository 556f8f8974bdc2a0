"""Group commit: concurrent requests share transactions, yet each is answered as if alone."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import asyncpg
import pytest
from litestar.testing import TestClient

from headwater.app import create_app
from headwater.db.pool import register_codecs
from headwater.ingest.queue import IngestQueue
from headwater.ingest.validate import validate_event
from headwater.settings import Settings
from headwater.store.events import begin_ingest_writes
from tests.db.test_batched_ingest import applications, ingest
from tests.factories import run_event
from tests.pg import REFUSE_POISON
from tests.snapshot import model_snapshot, stored_payloads

pytestmark = pytest.mark.db


@contextmanager
def server(settings: Settings, url: str, **changes: Any) -> Iterator[TestClient[Any]]:
    app = create_app(dataclasses.replace(settings, database_url=url, **changes))
    with TestClient(app=app) as client:
        yield client


def post(client: TestClient[Any], body: Any) -> Awaitable[Any]:
    """A request from its own thread: the app serves requests of several threads concurrently."""
    return asyncio.to_thread(client.post, "/api/v1/lineage", json=body)


async def post_all(client: TestClient[Any], bodies: list[Any]) -> list[Any]:
    return await asyncio.gather(*(post(client, b) for b in bodies))


async def test_grouped_requests_each_get_their_own_answer(make_database, settings):
    stored = run_event("stored", run_id="00000000-0000-4000-8000-000000000001")
    a, b = run_event("a", outputs=["t1"]), run_event("b", inputs=["t1"])
    array = [run_event("c", "START"), run_event("c", "COMPLETE")]
    invalid = {**run_event("d"), "eventTime": "yesterday"}
    async with make_database() as url:
        # A long gathering window: the requests below surely land in one group.
        with server(settings, url, ingest_group_wait_ms=300) as client:
            assert client.post("/api/v1/lineage", json=stored).status_code == 201
            answers = await post_all(client, [a, stored, b, invalid, array])
        conn = await asyncpg.connect(url)
        try:
            transactions = await conn.fetch(
                "SELECT job_name, xmin::text AS tx FROM raw_events WHERE job_name <> 'stored'"
            )
        finally:
            await conn.close()
    assert [r.status_code for r in answers] == [201, 201, 201, 400, 201]
    assert answers[0].json()["status"] == "created"
    assert answers[1].json() == {
        "status": "duplicate",
        "kind": "RUN",
        "runId": "00000000-0000-4000-8000-000000000001",
    }
    assert answers[2].json()["status"] == "created"
    assert answers[3].json()["errors"][0]["path"] == "$.eventTime"
    assert [r["status"] for r in answers[4].json()["results"]] == ["created", "created"]
    assert sorted(r["job_name"] for r in transactions) == ["a", "b", "c", "c"]
    assert len({r["tx"] for r in transactions}) == 1  # one transaction for the four events


async def test_requests_arriving_while_another_writer_has_the_turn_join_one_group(
    make_database, settings
):
    """A writer takes its group once its turn has come (another server worker, a consumer or an
    import may hold it), not before: what arrived meanwhile is written with it, not after it."""
    async with make_database() as url:
        with server(settings, url) as client:
            other_writer = await asyncpg.connect(url)
            try:
                turn = other_writer.transaction()
                await turn.start()
                await begin_ingest_writes(other_writer)
                first = asyncio.ensure_future(post(client, run_event("first")))
                await asyncio.sleep(0.3)  # the writer now waits for its turn
                later = asyncio.ensure_future(post_all(client, [run_event("b"), run_event("c")]))
                await asyncio.sleep(0.3)
                await turn.rollback()
                answers = [await first, *await later]
                transactions = await other_writer.fetch("SELECT xmin::text AS tx FROM raw_events")
            finally:
                await other_writer.close()
    assert [r.status_code for r in answers] == [201, 201, 201]
    assert len(transactions) == 3
    assert len({r["tx"] for r in transactions}) == 1


async def test_a_large_batch_is_written_in_parts_that_other_requests_join(make_database, settings):
    """A /batch of 40 events with groups of 10: parts of 10, one per transaction, and an event
    posted meanwhile is written beside the next part, not after the whole batch."""
    batch = [run_event(f"batch{i:02}") for i in range(40)]
    async with make_database() as url:
        with server(settings, url, ingest_group_events=10) as client:
            other_writer = await asyncpg.connect(url)
            try:
                turn = other_writer.transaction()
                await turn.start()
                await begin_ingest_writes(other_writer)  # the writer waits for its turn
                posted = asyncio.ensure_future(
                    asyncio.to_thread(client.post, "/api/v1/lineage/batch", json=batch)
                )
                queue: IngestQueue = client.app.state.ingest_queue
                while queue.pending_events < 40:
                    await asyncio.sleep(0.01)
                alone = asyncio.ensure_future(post(client, run_event("alone")))
                while queue.pending_events < 41:
                    await asyncio.sleep(0.01)
                await turn.rollback()
                answers = await posted, await alone
                rows = await other_writer.fetch(
                    "SELECT job_name, xmin::text::bigint AS tx FROM raw_events ORDER BY tx, job_name"
                )
            finally:
                await other_writer.close()
    assert [a.status_code for a in answers] == [200, 201]
    assert answers[0].json()["summary"]["successful"] == 40
    transactions: dict[int, list[str]] = {}
    for r in rows:
        transactions.setdefault(r["tx"], []).append(r["job_name"])
    # The batch's events in order, 10 to a transaction; the lone event in the first one.
    assert list(transactions.values()) == [
        ["alone", *[f"batch{i:02}" for i in range(10)]],
        *[[f"batch{i:02}" for i in range(p, p + 10)] for p in range(10, 40, 10)],
    ]


async def test_an_array_stored_all_or_none_holds_at_most_a_group(make_database, settings):
    async with make_database() as url:
        with server(settings, url, ingest_group_events=10) as client:
            refused = client.post("/api/v1/lineage", json=[run_event(f"e{i}") for i in range(11)])
            taken = client.post("/api/v1/lineage", json=[run_event(f"e{i}") for i in range(10)])
    assert refused.status_code == 413
    assert refused.json()["detail"] == (
        "An array posted here is stored all or none, in one transaction, which holds at most 10 "
        "events (HEADWATER_INGEST_GROUP_EVENTS); this one has 11. Post it in smaller arrays, or to "
        "/api/v1/lineage/batch, which stores it in parts with a result for each event."
    )
    assert taken.status_code == 201


async def test_an_event_failing_in_the_database_does_not_fail_its_group(make_database, settings):
    async with make_database() as url:
        conn = await asyncpg.connect(url)
        try:
            # Only the database can refuse this event: a trigger of this test database.
            await conn.execute(REFUSE_POISON)
            neighbours = [run_event(f"good{i}", outputs=[f"t{i}"]) for i in range(3)]
            with server(settings, url, ingest_group_wait_ms=300) as client:
                answers = await post_all(
                    client, [neighbours[0], run_event("poison"), neighbours[1], [neighbours[2]]]
                )
                array = client.post("/api/v1/lineage", json=[run_event("ok"), run_event("poison2")])
            stored = await conn.fetch("SELECT job_name FROM raw_events ORDER BY job_name")
            runs = await conn.fetchval("SELECT count(*) FROM runs")
        finally:
            await conn.close()
    # Sending the refused event again would be refused again: a 4xx with the reason, not a 5xx.
    assert [r.status_code for r in answers] == [201, 422, 201, 201]
    assert answers[1].json()["code"] == "event_refused"
    assert answers[1].json()["detail"] == (
        "The database refused the event: poison refused (SQLSTATE P0001)."
    )
    # An array is stored all or none.
    assert array.status_code == 422
    assert array.json()["detail"] == (
        "The database refused an event of the array: poison2 refused (SQLSTATE P0001); none of its "
        "2 events was stored. Post them to /api/v1/lineage/batch for a result per event."
    )
    assert [r["job_name"] for r in stored] == ["good0", "good1", "good2"]
    assert runs == 3


async def test_events_of_a_batch_the_database_refuses_fail_alone(make_database, settings):
    # Parts of 4: the refused events are in the first and the third part, the third also holding
    # an invalid event; every other event is stored, and each refused one names its reason.
    batch: list[Any] = [run_event(f"good{i}", outputs=[f"t{i}"]) for i in range(11)]
    batch[1] = run_event("poison1")
    batch[9] = run_event("poison9")
    batch[10] = {**batch[10], "eventTime": "yesterday"}
    async with make_database() as url:
        conn = await asyncpg.connect(url)
        try:
            # Only the database can refuse these events: a trigger of this test database.
            await conn.execute(REFUSE_POISON)
            with server(settings, url, ingest_group_events=4) as client:
                answer = client.post("/api/v1/lineage/batch", json=batch)
                again = client.post("/api/v1/lineage/batch", json=batch)
                alone = client.post("/api/v1/lineage/batch", json=[run_event("poison alone")])
            stored = await conn.fetch("SELECT job_name FROM raw_events ORDER BY job_name")
            runs = await conn.fetchval("SELECT count(*) FROM runs")
        finally:
            await conn.close()
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "partial_success"
    assert body["summary"] == {
        "received": 11,
        "successful": 8,
        "failed": 3,
        "retriable": 0,
        "non_retriable": 3,
    }
    failed = body["failed_events"]
    assert [f["index"] for f in failed] == [1, 9, 10]
    assert failed[0] == {
        "index": 1,
        "reason": "The database refused the event: poison1 refused (SQLSTATE P0001).",
        "retriable": False,
        "errors": [],
    }
    assert failed[1]["reason"] == "The database refused the event: poison9 refused (SQLSTATE P0001)."
    assert failed[2]["errors"][0]["path"] == "$[10].eventTime"
    # Sent again, the stored events are duplicates and the refused ones are refused again.
    assert again.json()["summary"] == body["summary"]
    # A batch of one refused event answers the same way, not with a 500.
    assert alone.status_code == 200, alone.text
    assert alone.json()["failed_events"] == [
        {
            "index": 0,
            "reason": "The database refused the event: poison alone refused (SQLSTATE P0001).",
            "retriable": False,
            "errors": [],
        }
    ]
    assert [r["job_name"] for r in stored] == [f"good{i}" for i in (0, 2, 3, 4, 5, 6, 7, 8)]
    assert runs == 8


async def test_a_database_that_cannot_take_a_batch_fails_it_whole_with_a_503(make_database, settings):
    # Not the events' fault: no event is reported failed, which a client would not send again.
    batch = [run_event(f"good{i}") for i in range(3)]
    async with make_database() as url:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute("ALTER TABLE run_states RENAME TO run_states_elsewhere")
            with server(settings, url, ingest_group_events=2) as client:
                answer = client.post("/api/v1/lineage/batch", json=batch)
            stored = await conn.fetchval("SELECT count(*) FROM raw_events")
        finally:
            await conn.close()
    assert answer.status_code == 503, answer.text
    assert answer.json()["code"] == "database_unavailable"
    assert answer.headers["retry-after"] == "1"
    assert stored == 0


async def test_grouped_ingest_builds_what_one_event_at_a_time_builds(make_database, settings):
    events = applications(apps=12, tables=10)
    async with make_database() as serial, make_database() as grouped:
        pool = await asyncpg.create_pool(grouped, min_size=1, max_size=2, init=register_codecs)
        queue = IngestQueue(pool, [], dataclasses.replace(settings, ingest_group_events=20))
        await queue.start()
        try:
            # Requests of one or a few events, all at once: the queue writes them in groups of 20.
            requests = [[validate_event(e)] for e in events[:40]]
            requests += [
                [validate_event(e) for e in events[i : i + 3]] for i in range(40, len(events), 3)
            ]
            results = await asyncio.gather(*(queue.submit(r) for r in requests))
        finally:
            await queue.stop()
            await pool.close()
        assert [len(r) for r in results] == [len(r) for r in requests]
        assert all(x.status == "created" for r in results for x in r)
        # Concurrent requests have no order of their own (each is prepared in a thread and queued
        # when ready): the events one at a time, in the order the groups wrote them.
        conn = await asyncpg.connect(grouped)
        try:
            order = await stored_payloads(conn)
        finally:
            await conn.close()
        assert len(order) == len(events)
        await ingest(serial, [json.loads(payload) for payload in order], batch=1)
        one_by_one, in_groups = await model_snapshot(serial), await model_snapshot(grouped)
    assert in_groups == one_by_one


@asynccontextmanager
async def frozen(url: str) -> AsyncIterator[None]:
    """raw_events locked by another session: every ingest statement waits."""
    conn = await asyncpg.connect(url)
    try:
        async with conn.transaction():
            await conn.execute("LOCK TABLE raw_events IN ACCESS EXCLUSIVE MODE")
            yield
    finally:
        await conn.close()


async def test_a_full_queue_answers_503_with_retry_after_and_holds_no_more(make_database, settings):
    async with make_database() as url:
        with server(settings, url, ingest_queue_events=4, ingest_timeout_ms=20_000) as client:
            queue: IngestQueue = client.app.state.ingest_queue
            async with frozen(url):
                held = [asyncio.ensure_future(post(client, run_event(f"held{i}"))) for i in range(4)]
                while queue.pending_events < 4:
                    await asyncio.sleep(0.01)
                started = time.monotonic()
                refused = await post_all(client, [run_event(f"more{i}") for i in range(50)])
                refused_in = time.monotonic() - started
                assert queue.pending_events == 4
            assert [r.status_code for r in await asyncio.gather(*held)] == [201] * 4
        assert {r.status_code for r in refused} == {503}
        assert {r.headers["retry-after"] for r in refused} == {"1"}
        assert refused[0].json()["code"] == "ingest_overloaded"
        assert refused_in < 5
        assert queue.pending_events == 0


async def test_a_frozen_database_answers_503_within_the_timeout(make_database, settings):
    event = run_event("frozen")
    async with make_database() as url:
        with server(settings, url, ingest_timeout_ms=1_500, statement_timeout_ms=2_000) as client:
            async with frozen(url):
                started = time.monotonic()
                answer = await post(client, event)
                waited = time.monotonic() - started
            assert answer.status_code == 503
            assert answer.headers["retry-after"] == "1"
            assert waited < 3
            # Once the database answers again, the client's retry is stored (or was, meanwhile).
            assert client.post("/api/v1/lineage", json=event).status_code == 201


async def test_readers_holding_every_connection_leave_ingest_keys_and_readiness_alone(
    make_database, settings
):
    """Reads wait for the shared pool and are answered busy when it stays full; posts write through
    the ingest pool, and key checks and readiness through their own, so none of them waits."""
    async with make_database() as url:
        with server(
            settings, url, pool_min_size=1, pool_max_size=1, pool_acquire_timeout_ms=500
        ) as client:
            pool = client.app.state.pool
            release = threading.Event()

            async def hold() -> None:  # the only connection, held in the app's event loop
                async with pool.acquire():
                    await anyio.to_thread.run_sync(release.wait)

            holding = client.blocking_portal.start_task_soon(hold)
            try:
                while pool.get_idle_size():
                    await asyncio.sleep(0.01)
                started = time.monotonic()
                posted = await post(client, run_event("posted while reads wait"))
                posted_in = time.monotonic() - started
                ready = await asyncio.to_thread(client.get, "/readyz")
                started = time.monotonic()
                read = await asyncio.to_thread(client.get, "/api/v1/namespaces")
                read_in = time.monotonic() - started
                graphql = await asyncio.to_thread(
                    client.post, "/graphql", json={"query": "{ namespaces { name } }"}
                )
            finally:
                release.set()
                holding.result()
            # Once a connection is free again, the read is answered.
            assert client.get("/api/v1/namespaces").status_code == 200
    assert posted.status_code == 201
    assert posted_in < 0.4
    assert ready.status_code == 200
    assert read.status_code == 503
    assert read.headers["retry-after"] == "1"
    assert read.json()["code"] == "database_busy"
    assert read.json()["detail"] == (
        "The server is busy: all 1 database connections of this server stayed in use for 0.5 s."
        " Retry later."
    )
    assert 0.5 <= read_in < 2
    assert graphql.json()["errors"][0]["extensions"]["code"] == "database_busy"


async def test_small_requests_are_prepared_on_the_loop_large_ones_and_sql_in_a_thread(
    make_database, settings, monkeypatch
):
    """Preparing a small event costs less than handing it to a worker thread and back; an event
    with SQL to parse, or a large one, would hold up every other request on the loop."""
    import headwater.ingest.queue as queue_module

    on_loop: dict[str, bool] = {}
    prepare = queue_module.prepare_events

    def spied(events, rules):
        for e in events:
            on_loop[e.model.job.name] = threading.current_thread() is threading.main_thread()
        return prepare(events, rules)

    monkeypatch.setattr(queue_module, "prepare_events", spied)
    fields = [{"name": f"column_{i:05}", "type": "string"} for i in range(1_000)]
    large = run_event(
        "large",
        outputs=[
            {
                "namespace": "warehouse",
                "name": "wide",
                "facets": {"schema": {"_producer": "p", "_schemaURL": "s", "fields": fields}},
            }
        ],
    )
    sql = {"sql": {"_producer": "p", "_schemaURL": "s", "query": "INSERT INTO t SELECT a FROM u"}}
    async with make_database() as url:
        pool = await asyncpg.create_pool(url, min_size=1, max_size=2, init=register_codecs)
        queue = IngestQueue(pool, [], dataclasses.replace(settings, database_url=url))
        await queue.start()
        try:
            events = [run_event("small"), large, run_event("with_sql", job_facets=sql)]
            for e in events:
                assert [r.status for r in await queue.submit([validate_event(e)])] == ["created"]
        finally:
            await queue.stop()
            await pool.close()
    assert validate_event(large).size > 32 * 1024
    assert on_loop == {"small": True, "large": False, "with_sql": False}
