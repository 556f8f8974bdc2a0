"""POST /api/v1/integrations/trino: Trino's HTTP event listener, stored as OpenLineage runs."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
import threading
from pathlib import Path

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from headwater.api.rest import trino as trino_route
from headwater.api.rest.ingest import OFF_LOOP_EVENTS
from headwater.app import create_app
from headwater.settings import Settings
from tests.integrations.trino.events import TRINO, http_example, ol_examples, query_completed
from tests.pg import REFUSE_POISON

pytestmark = pytest.mark.db

URL = "/api/v1/integrations/trino"
QUERY_ID = "20250601_101500_00042_abcde"


async def column_edges(conn, *, include_superseded=False):
    rows = await conn.fetch(
        "SELECT o.name || '.' || c.output_field AS output, i.name || '.' || c.input_field AS input,"
        " coalesce(c.transformation_type, '') AS type, c.derived FROM column_lineage c"
        " JOIN datasets o ON o.dataset_uuid = c.output_dataset_uuid"
        " JOIN datasets i ON i.dataset_uuid = c.input_dataset_uuid"
        " WHERE c.valid_to IS NULL"
        + ("" if include_superseded else " AND NOT c.superseded")
        + " ORDER BY 1, 2, 3"
    )
    return [tuple(r) for r in rows]


async def table_edges(conn):
    rows = await conn.fetch(
        "SELECT j.namespace || ':' || j.name AS job, d.namespace || ':' || d.name AS dataset, e.edge_type"
        " FROM lineage_edges e JOIN jobs j USING (job_uuid) JOIN datasets d USING (dataset_uuid)"
        " WHERE e.valid_to IS NULL ORDER BY 1, 2, 3"
    )
    return [tuple(r) for r in rows]


async def test_query_completed_event_is_stored_as_a_run(client, conn):
    response = await client.post(URL, json=http_example())
    assert response.status_code == 201, response.text
    body = response.json()
    run_id = body["runId"]
    assert body == {
        "kind": "QueryCompletedEvent",
        "queryId": QUERY_ID,
        "queryState": "FINISHED",
        "job": {"namespace": TRINO, "name": QUERY_ID},
        "runId": run_id,
        "events": [
            {"eventType": "START", "status": "created"},
            {"eventType": "COMPLETE", "status": "created"},
        ],
    }
    run = await conn.fetchrow(
        "SELECT r.current_state, r.started_at, r.ended_at, r.facets, j.namespace, j.name, j.job_type"
        " FROM runs r JOIN jobs j USING (job_uuid) WHERE r.run_uuid = $1::uuid",
        run_id,
    )
    assert (run["current_state"], run["namespace"], run["name"], run["job_type"]) == (
        "COMPLETE",
        TRINO,
        QUERY_ID,
        "QUERY",
    )
    assert run["started_at"].isoformat() == "2025-06-01T10:15:00.123000+00:00"
    assert run["ended_at"].isoformat() == "2025-06-01T10:15:03.027000+00:00"
    assert await table_edges(conn) == [
        (f"{TRINO}:{QUERY_ID}", f"{TRINO}:hive.sales.daily_revenue", "WRITE"),
        (f"{TRINO}:{QUERY_ID}", f"{TRINO}:tpch.tiny.customer", "READ"),
        (f"{TRINO}:{QUERY_ID}", f"{TRINO}:tpch.tiny.orders", "READ"),
    ]
    reported = [e for e in await column_edges(conn) if not e[3]]
    assert reported == [
        ("hive.sales.daily_revenue.mktsegment", "tpch.tiny.customer.mktsegment", "", False),
        ("hive.sales.daily_revenue.orderdate", "tpch.tiny.orders.orderdate", "", False),
        ("hive.sales.daily_revenue.revenue", "tpch.tiny.orders.totalprice", "", False),
    ]
    fields = await conn.fetch(
        "SELECT f.name, f.type FROM dataset_fields f JOIN datasets d USING (dataset_uuid)"
        " WHERE d.name = 'hive.sales.daily_revenue' ORDER BY f.position"
    )
    assert [tuple(f) for f in fields] == [
        ("orderdate", "date"),
        ("mktsegment", "varchar(10)"),
        ("revenue", "double"),
    ]


async def test_a_resent_event_is_a_duplicate(client, conn):
    assert (await client.post(URL, json=http_example())).status_code == 201
    again = await client.post(URL, json=http_example())
    assert again.status_code == 201
    assert [e["status"] for e in again.json()["events"]] == ["duplicate", "duplicate"]
    assert await conn.fetchval("SELECT count(*) FROM runs") == 1
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 2


async def test_lineage_api_shows_the_query_between_its_tables(client):
    assert (await client.post(URL, json=http_example())).status_code == 201
    response = await client.get(
        "/api/v1/lineage",
        params={"nodeId": f"dataset:{TRINO}:hive.sales.daily_revenue", "direction": "UPSTREAM"},
    )
    assert response.status_code == 200, response.text
    assert sorted(n["id"] for n in response.json()["graph"]) == sorted(
        [
            f"dataset:{TRINO}:hive.sales.daily_revenue",
            f"job:{TRINO}:{QUERY_ID}",
            f"dataset:{TRINO}:tpch.tiny.orders",
            f"dataset:{TRINO}:tpch.tiny.customer",
        ]
    )


async def test_failed_query_is_a_failed_run(client, conn):
    event = query_completed(
        "INSERT INTO hive.sales.t SELECT a FROM hive.sales.s",
        inputs={"hive.sales.s": ["a"]},
        output="hive.sales.t",
        columns=[("a", "bigint", ["hive.sales.s.a"])],
        failure="Cannot write to non-managed Hive table",
    )
    response = await client.post(URL, json=event)
    assert response.status_code == 201, response.text
    assert response.json()["queryState"] == "FAILED"
    assert [e["eventType"] for e in response.json()["events"]] == ["START", "FAIL"]
    run = await conn.fetchrow("SELECT current_state, error_message FROM runs")
    assert tuple(run) == ("FAIL", "Cannot write to non-managed Hive table")


async def test_without_trino_column_lineage_it_is_derived_from_the_sql(client, conn):
    event = query_completed(
        "INSERT INTO hive.mart.totals SELECT c.id, sum(o.amount) AS total"
        " FROM hive.sales.orders o JOIN hive.sales.customers c ON o.customer_id = c.id GROUP BY c.id",
        inputs={"hive.sales.orders": ["amount", "customer_id"], "hive.sales.customers": ["id"]},
        output="hive.mart.totals",
    )
    event["ioMetadata"]["output"]["jsonLengthLimitExceeded"] = True
    assert (await client.post(URL, json=event)).status_code == 201
    direct = [e for e in await column_edges(conn) if e[2] != "INDIRECT"]
    assert direct == [
        ("hive.mart.totals.id", "hive.sales.customers.id", "DIRECT", True),
        ("hive.mart.totals.total", "hive.sales.orders.amount", "DIRECT", True),
    ]


async def test_unqualified_sql_names_are_in_the_sessions_catalog_and_schema(client, conn):
    # Trino's metadata cut short (jsonLengthLimitExceeded) names only the output: what the SQL
    # names without a catalog or schema is in the session's, hive.sales (the context of the event),
    # not elsewhere, and never a bare name.
    event = query_completed(
        "INSERT INTO hive.mart.totals SELECT r.region, sum(o.amount) AS total"
        " FROM orders o JOIN region_map r ON o.region_id = r.id"
        " JOIN staging.extras x ON x.id = o.id GROUP BY r.region",
        output="hive.mart.totals",
    )
    event["ioMetadata"]["output"]["jsonLengthLimitExceeded"] = True
    assert (event["context"]["catalog"], event["context"]["schema"]) == ("hive", "sales")
    assert (await client.post(URL, json=event)).status_code == 201
    reads = {d for _, d, kind in await table_edges(conn) if kind == "READ"}
    assert reads == {
        f"{TRINO}:hive.sales.orders",
        f"{TRINO}:hive.sales.region_map",
        f"{TRINO}:hive.staging.extras",
    }


async def test_array_of_events(client, conn):
    first = query_completed(
        "INSERT INTO hive.s.b SELECT x FROM hive.s.a",
        query_id="q_1",
        inputs={"hive.s.a": ["x"]},
        output="hive.s.b",
        columns=[("x", "int", ["hive.s.a.x"])],
    )
    second = query_completed(
        "INSERT INTO hive.s.c SELECT x FROM hive.s.b",
        query_id="q_2",
        create_time=1748773000.0,
        inputs={"hive.s.b": ["x"]},
        output="hive.s.c",
        columns=[("x", "int", ["hive.s.b.x"])],
    )
    select = query_completed(
        "SELECT * FROM hive.s.c", query_id="q_3", inputs={"hive.s.c": ["x"]}, query_type="SELECT"
    )
    response = await client.post(URL, json=[first, second, select])
    assert response.status_code == 201, response.text
    results = response.json()["results"]
    assert [r["queryId"] for r in results] == ["q_1", "q_2", "q_3"]
    assert "skipped" in results[2]
    assert "events" not in results[2]
    assert await conn.fetchval("SELECT count(*) FROM runs") == 2
    assert await column_edges(conn) == [
        ("hive.s.b.x", "hive.s.a.x", "", False),
        ("hive.s.c.x", "hive.s.b.x", "", False),
    ]


async def test_an_array_larger_than_a_group_is_committed_in_parts(db, database_url):
    """As a /batch is: other requests are not held back while a long array is written."""
    queries = [
        query_completed(
            f"INSERT INTO hive.s.out{i} SELECT x FROM hive.s.a",
            query_id=f"q_{i}",
            inputs={"hive.s.a": ["x"]},
            output=f"hive.s.out{i}",
            columns=[("x", "int", ["hive.s.a.x"])],
        )
        for i in range(5)
    ]
    settings = Settings(
        database_url=database_url, pool_min_size=0, pool_max_size=2, ingest_group_events=2
    )
    async with AsyncTestClient(app=create_app(settings)) as client:
        response = await client.post(URL, json=queries)
    assert response.status_code == 201, response.text
    assert [r["queryId"] for r in response.json()["results"]] == [f"q_{i}" for i in range(5)]
    async with db.acquire() as conn:
        transactions = await conn.fetchval("SELECT count(DISTINCT xmin::text) FROM raw_events")
        runs = await conn.fetchval("SELECT count(*) FROM runs")
    assert runs == 5
    # Each query is a run's START and COMPLETE: ten events, two to a part.
    assert transactions == 5


async def test_a_query_the_database_refuses_fails_alone(make_database):
    """An array is stored as a /batch is: a query whose events the database refuses fails alone."""
    queries = [
        query_completed(
            f"INSERT INTO hive.s.{name} SELECT x FROM hive.s.a",
            query_id=f"q_{name}",
            inputs={"hive.s.a": ["x"]},
            output=f"hive.s.{name}",
        )
        for name in ("out0", "poison", "out2")
    ]
    async with make_database() as url:
        conn = await asyncpg.connect(url)
        try:
            # Only the database can refuse these events: a trigger of this test database.
            await conn.execute(REFUSE_POISON)
            settings = Settings(database_url=url, pool_min_size=0, pool_max_size=2)
            async with AsyncTestClient(app=create_app(settings)) as client:
                response = await client.post(URL, json=queries)
            runs = await conn.fetchval("SELECT count(*) FROM runs")
        finally:
            await conn.close()
    assert response.status_code == 201, response.text
    results = response.json()["results"]
    assert [[e["status"] for e in r["events"]] for r in results] == [
        ["created", "created"],
        ["failed", "failed"],
        ["created", "created"],
    ]
    reason = "The database refused the event: q_poison refused (SQLSTATE P0001)."
    assert [e["reason"] for e in results[1]["events"]] == [reason, reason]
    assert runs == 2


async def test_only_skipped_events_answer_200(client, conn):
    select = query_completed("SELECT 1", inputs={}, query_type="SELECT")
    response = await client.post(URL, json=select)
    assert response.status_code == 200
    assert response.json()["skipped"].startswith("query type SELECT is not reported")
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 0
    everything = await client.post(URL, params={"queryTypes": "ALL"}, json=select)
    assert everything.status_code == 201


async def test_gzip_body(client, conn):
    body = gzip.compress(json.dumps(http_example()).encode())
    response = await client.post(
        URL, content=body, headers={"content-type": "application/json", "content-encoding": "gzip"}
    )
    assert response.status_code == 201, response.text
    assert await conn.fetchval("SELECT count(*) FROM runs") == 1


async def test_naming_from_query_parameters(client, conn):
    response = await client.post(
        URL,
        params={
            "trinoUri": "http://trino.prod:8080",
            "namespace": "analytics",
            "jobNameFormat": "$USER-$QUERY_ID",
        },
        json=http_example(),
    )
    assert response.status_code == 201, response.text
    assert response.json()["job"] == {"namespace": "analytics", "name": f"alice-{QUERY_ID}"}
    names = await conn.fetch("SELECT namespace, name FROM datasets ORDER BY name")
    assert {r["namespace"] for r in names} == {"trino://trino.prod:8080"}


async def test_naming_from_the_environment(client, conn, monkeypatch):
    monkeypatch.setenv("HEADWATER_TRINO_URI", "trino://trino.env:8080")
    response = await client.post(URL, json=http_example())
    assert response.status_code == 201, response.text
    assert response.json()["job"]["namespace"] == "trino://trino.env:8080"


BAD = [
    ("a number", 3, "$", "Expected `object`, got `number`"),
    (
        "an OpenLineage event",
        lambda: ol_examples()[0],
        "$",
        "an OpenLineage event; post it to /api/v1/lineage",
    ),
    (
        "missing metadata",
        {"createTime": 1, "endTime": 2, "ioMetadata": {}},
        "$",
        "Object missing required field `metadata`",
    ),
    (
        "queryId not a string",
        lambda: {**http_example(), "metadata": {**http_example()["metadata"], "queryId": 1}},
        "$.metadata.queryId",
        "Expected `str`, got `int`",
    ),
    (
        "createTime NaN",
        lambda: {**http_example(), "createTime": "NaN"},
        "$.createTime",
        "Expected epoch seconds or an RFC 3339 time",
    ),
    (
        "createTime before year 1 in UTC",
        lambda: {**http_example(), "createTime": "0001-01-01T00:00:00+14:00"},
        "$.createTime",
        "must be, in UTC, after 0001-01-01T00:00:00Z and before 9999-12-31T23:59:59.999999Z",
    ),
    (
        "endTime at the first instant in epoch seconds",
        lambda: {**http_example(), "endTime": -62135596800},
        "$.endTime",
        "must be, in UTC, after 0001-01-01T00:00:00Z and before 9999-12-31T23:59:59.999999Z",
    ),
    (
        "metadata.uri with an unbalanced bracket",
        lambda: {
            **http_example(),
            "metadata": {**http_example()["metadata"], "uri": "http://[trino:8080/"},
        },
        "$.metadata.uri",
        "not a URI: 'http://[trino:8080/' (Invalid IPv6 URL)",
    ),
    (
        "serverAddress with an unbalanced bracket",
        lambda: {
            **http_example(),
            "metadata": {k: v for k, v in http_example()["metadata"].items() if k != "uri"},
            "context": {**http_example()["context"], "serverAddress": "[::1"},
        },
        "$.context.serverAddress",
        "Not a Trino coordinator URI: '[::1' (expected e.g. http://trino:8080)",
    ),
    (
        "inputs not a list",
        lambda: {**http_example(), "ioMetadata": {"inputs": {}, "output": None}},
        "$.ioMetadata.inputs",
        "Expected `array | null`, got `object`",
    ),
]


@pytest.mark.parametrize(("body", "path", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
async def test_not_a_query_completed_event_is_400_with_the_path(client, conn, body, path, message):
    # Bodies built from the shared example are built here, so a missing corpus skips only them.
    response = await client.post(URL, json=body() if callable(body) else body)
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "invalid_trino_event"
    assert {"path": path, "message": message} in problem["errors"]
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 0


async def test_an_offset_past_what_postgresql_reads_is_the_same_instant_in_utc(client, conn):
    event = {**http_example(), "endTime": "2025-06-01T23:00:00-23:59"}
    response = await client.post(URL, json=event)
    assert response.status_code == 201, response.text
    stored = await conn.fetchval("SELECT max(event_time) FROM raw_events")
    assert stored == dt.datetime(2025, 6, 2, 22, 59, tzinfo=dt.UTC)


async def test_one_bad_event_in_an_array_stores_nothing(client, conn):
    bad = http_example()
    bad["endTime"] = "never"
    response = await client.post(URL, json=[http_example(), bad])
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "$[1].endTime"
    assert "1 of 2 Trino events are invalid" in response.json()["detail"]
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 0


async def test_empty_array_and_bad_trino_uri_are_400(client):
    assert (await client.post(URL, json=[])).status_code == 400
    response = await client.post(URL, params={"trinoUri": "http://"}, json=http_example())
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "trinoUri"


async def test_api_key_is_required_when_configured(db, database_url):
    settings = Settings(database_url=database_url, api_key="s3cret", pool_min_size=0, pool_max_size=2)
    async with AsyncTestClient(app=create_app(settings)) as client:
        assert (await client.post(URL, json=http_example())).status_code == 401
        wrong = await client.post(URL, json=http_example(), headers={"authorization": "Bearer nope"})
        assert wrong.status_code == 401
        # The HTTP event listener sends it from connect-http-headers=Authorization:Bearer s3cret
        ok = await client.post(URL, json=http_example(), headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 201


async def test_both_listeners_name_the_same_job_and_datasets(client, conn):
    """The OpenLineage listener's events and the HTTP listener's event of one query meet in one graph."""
    for event in ol_examples():
        assert (await client.post("/api/v1/lineage", json=event)).status_code == 201
    before = await table_edges(conn)
    datasets = await conn.fetchval("SELECT count(*) FROM datasets")
    assert (await client.post(URL, json=http_example())).status_code == 201
    assert await table_edges(conn) == before
    assert await conn.fetchval("SELECT count(*) FROM datasets") == datasets
    assert await conn.fetchval("SELECT count(*) FROM jobs") == 1


async def test_ingest_uri_as_written_in_the_properties_file(client, conn):
    """connect-ingest-uri carries trinoUri unencoded, as in http-event-listener.properties."""
    response = await client.post(f"{URL}?trinoUri=http://trino.prod:8080", json=http_example())
    assert response.status_code == 201, response.text
    assert response.json()["job"]["namespace"] == "trino://trino.prod:8080"


async def test_the_readme_example_body_is_stored_with_its_column_lineage(client, conn):
    readme = (Path(__file__).resolve().parents[3] / "integrations" / "trino" / "README.md").read_text()
    example = re.search(
        r"curl -s -X POST '(localhost:5000)?(?P<url>[^']+)'.*?-d '(?P<body>.*?)'\n", readme, re.S
    )
    assert example is not None, "the README has a curl example of the bridge"
    response = await client.post(
        example["url"], content=example["body"], headers={"content-type": "application/json"}
    )
    assert response.status_code == 201, response.text
    assert [e["status"] for e in response.json()["events"]] == ["created", "created"]
    assert await column_edges(conn) == [
        ("hive.sales.daily_revenue.orderdate", "tpch.tiny.orders.orderdate", "", False),
        ("hive.sales.daily_revenue.revenue", "tpch.tiny.orders.totalprice", "", False),
    ]


def _queries(count: int) -> list[dict]:
    return [
        query_completed(
            f"INSERT INTO hive.s.out{i} SELECT x FROM hive.s.a",
            query_id=f"q_{i}",
            inputs={"hive.s.a": ["x"]},
            output=f"hive.s.out{i}",
        )
        for i in range(count)
    ]


async def test_an_invalid_run_event_is_located_under_the_array_element_it_was_made_of(client, conn):
    queries = _queries(OFF_LOOP_EVENTS + 8)
    for i in (3, len(queries) - 1):
        queries[i]["ioMetadata"]["output"]["catalogName"] = "c" * 2000
    response = await client.post(URL, json=queries)
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "invalid_trino_event"
    assert problem["detail"] == f"2 of {len(queries)} Trino events are invalid; none was stored."
    assert [e["path"] for e in problem["errors"]] == [
        "$[3].converted[1].outputs[0].name",
        f"$[{len(queries) - 1}].converted[1].outputs[0].name",
    ]
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 0


async def test_a_long_array_is_converted_and_validated_off_the_event_loop(client, conn, monkeypatch):
    # About 0.4 ms an event: on the event loop, an array of 10,000 held /healthz 4.3 s.
    threads: dict[str, set[int]] = {"loop": set(), "work": set()}

    def recording(function, where):
        def wrapped(*args, **kwargs):
            threads[where].add(threading.get_ident())
            return function(*args, **kwargs)

        return wrapped

    # The request's options are read on the event loop, before its events are converted.
    monkeypatch.setattr(trino_route, "bridge_options", recording(trino_route.bridge_options, "loop"))
    monkeypatch.setattr(trino_route, "convert", recording(trino_route.convert, "work"))
    monkeypatch.setattr(trino_route, "validate_event", recording(trino_route.validate_event, "work"))
    response = await client.post(URL, json=_queries(OFF_LOOP_EVENTS + 1))
    assert response.status_code == 201, response.text
    assert len(threads["loop"]) == 1
    assert threads["work"]
    assert not threads["work"] & threads["loop"]
    assert await conn.fetchval("SELECT count(*) FROM runs") == OFF_LOOP_EVENTS + 1


@pytest.mark.parametrize("types", [",,,", " , "])
async def test_query_types_that_name_none_are_400(client, conn, types):
    response = await client.post(URL, params={"queryTypes": types}, json=http_example())
    assert response.status_code == 400, response.text
    assert response.json()["errors"] == [
        {
            "path": "queryTypes",
            "message": "names no query type: expected query types separated by commas, or ALL",
        }
    ]
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 0
