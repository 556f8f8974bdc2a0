"""Bad input gets a 4xx naming the JSON path of every error; nothing is stored; gzip, batches,
auth and outages."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from headwater.app import create_app
from headwater.ingest.validate import MAX_ERRORS
from headwater.settings import Settings
from tests.factories import run_event

pytestmark = pytest.mark.db


def without(key: str) -> dict[str, Any]:
    event = run_event("job")
    del event[key]
    return event


def with_value(path: list[str | int], value: Any) -> dict[str, Any]:
    event: Any = run_event("job", inputs=["a"])
    target = event
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return event


BAD_EVENTS = [
    ("not an object", 42, "$", "Expected `object`, got `number`"),
    ("a string", "hello", "$", "Expected `object`, got `str`"),
    ("missing run", without("run"), "$", "Object missing required field `run`"),
    ("missing job", without("job"), "$", "Object missing required field `job`"),
    ("missing eventTime", without("eventTime"), "$", "Object missing required field `eventTime`"),
    ("missing eventType", without("eventType"), "$", "Object missing required field `eventType`"),
    (
        "unknown eventType",
        with_value(["eventType"], "FINISHED"),
        "$.eventType",
        "Invalid enum value 'FINISHED'",
    ),
    (
        "unparseable time",
        with_value(["eventTime"], "yesterday"),
        "$.eventTime",
        "Invalid RFC3339 encoded datetime",
    ),
    ("runId not a string", with_value(["run", "runId"], 7), "$.run.runId", "Expected `str`, got `int`"),
    ("job name wrong type", with_value(["job", "name"], 7), "$.job.name", "Expected `str`, got `int`"),
    (
        "inputs not a list",
        with_value(["inputs"], {"a": 1}),
        "$.inputs",
        "Expected `array | null`, got `object`",
    ),
    (
        "dataset without name",
        with_value(["inputs", 0], {"namespace": "x"}),
        "$.inputs[0]",
        "Object missing required field `name`",
    ),
    ("empty job name", with_value(["job", "name"], " "), "$.job.name", "must not be empty"),
    (
        "facets not an object",
        with_value(["run", "facets"], [1]),
        "$.run.facets",
        "Expected `object | null`, got `array`",
    ),
]


@pytest.mark.parametrize(
    ("body", "path", "message"), [b[1:] for b in BAD_EVENTS], ids=[b[0] for b in BAD_EVENTS]
)
async def test_bad_event_is_400_with_path(client, conn, body, path, message):
    response = await client.post("/api/v1/lineage", json=body)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["errors"][0]["path"] == path
    assert problem["errors"][0]["message"].startswith(message)
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 0


@pytest.mark.parametrize(
    ("content", "headers", "status", "code"),
    [
        (b"{not json", {}, 400, "invalid_request"),
        (b"", {}, 400, "invalid_request"),
        (b"not gzip", {"content-encoding": "gzip"}, 400, "invalid_request"),
        (b"{}", {"content-encoding": "br"}, 415, "unsupported_content_encoding"),
    ],
    ids=["not json", "empty", "bad gzip", "unknown encoding"],
)
async def test_unreadable_body(client, content, headers, status, code):
    response = await client.post(
        "/api/v1/lineage", content=content, headers={"content-type": "application/json", **headers}
    )
    assert (response.status_code, response.json()["code"]) == (status, code)


async def test_gzip_body_is_accepted(client, conn):
    body = gzip.compress(json.dumps(run_event("job", outputs=["b"])).encode())
    response = await client.post(
        "/api/v1/lineage",
        content=body,
        headers={"content-type": "application/json", "content-encoding": "gzip"},
    )
    assert response.status_code == 201
    assert await conn.fetchval("SELECT name FROM datasets") == "b"


async def test_a_gzip_body_of_several_members_is_read_whole(client, conn):
    # RFC 1952 allows members one after the other (`cat a.gz b.gz`, pigz): all are read.
    first, second = run_event("a", outputs=["x"]), run_event("b", outputs=["y"])
    encoded = json.dumps([first, second]).encode()
    middle = encoded.index(b"},") + 2
    body = gzip.compress(encoded[:middle]) + gzip.compress(encoded[middle:])
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    response = await client.post("/api/v1/lineage/batch", content=body, headers=headers)
    assert response.status_code == 200, response.text
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 2
    # Anything after a member that is not one is refused, not dropped.
    response = await client.post(
        "/api/v1/lineage", content=gzip.compress(json.dumps(first).encode()) + b"junk", headers=headers
    )
    assert response.status_code == 400
    assert "is not valid gzip at byte " in response.json()["detail"]


async def test_array_is_all_or_nothing(client, conn):
    good, bad = run_event("a"), with_value(["eventTime"], "nope")
    response = await client.post("/api/v1/lineage", json=[good, bad, good])
    assert response.status_code == 400
    assert [e["path"] for e in response.json()["errors"]] == ["$[1].eventTime"]
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 0
    response = await client.post("/api/v1/lineage", json=[good, run_event("b")])
    assert response.status_code == 201
    assert [r["status"] for r in response.json()["results"]] == ["created", "created"]


async def test_batch_endpoint_reports_per_event(client, conn):
    events = [run_event("a"), with_value(["run", "runId"], 7), run_event("b")]
    response = await client.post("/api/v1/lineage/batch", json=events)
    assert response.status_code == 200
    assert response.json() == {
        "status": "partial_success",
        "summary": {"received": 3, "successful": 2, "failed": 1, "retriable": 0, "non_retriable": 1},
        "failed_events": [
            {
                "index": 1,
                "reason": "$[1].run.runId: Expected `str`, got `int`",
                "retriable": False,
                "errors": [{"path": "$[1].run.runId", "message": "Expected `str`, got `int`"}],
            }
        ],
    }
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 2


def many_errors() -> dict[str, Any]:
    """An event wrong in five places, at three depths, in both dataset arrays."""
    event: Any = run_event("job", inputs=["a", "b", "c"], outputs=["d"])
    event["run"]["runId"] = 7
    del event["eventTime"]
    event["job"]["name"] = ""
    del event["inputs"][0]["name"]
    event["inputs"][2]["facets"] = "none"
    event["outputs"][0]["namespace"] = 7
    return event


MANY_ERRORS = [
    ("$", "Object missing required field `eventTime`"),
    ("$.run.runId", "Expected `str`, got `int`"),
    ("$.job.name", "must not be empty"),
    ("$.inputs[0]", "Object missing required field `name`"),
    ("$.inputs[2].facets", "Expected `object | null`, got `str`"),
    ("$.outputs[0].namespace", "Expected `str`, got `int`"),
]


def errors_of(problem: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["path"], e["message"]) for e in problem["errors"]]


async def test_every_error_of_an_event_is_reported_at_once(client, conn):
    response = await client.post("/api/v1/lineage", json=many_errors())
    assert response.status_code == 400
    problem = response.json()
    assert sorted(errors_of(problem)) == sorted(MANY_ERRORS)
    assert problem["detail"] == "Invalid RunEvent: 6 errors"
    assert "errorsOmitted" not in problem
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 0


async def test_empty_names_are_all_reported_when_nothing_else_is_wrong(client):
    event: Any = run_event("job", inputs=["a"], outputs=["b"])
    event["job"]["namespace"] = " "
    event["outputs"][0]["name"] = ""
    response = await client.post("/api/v1/lineage", json=event)
    assert response.status_code == 400
    assert errors_of(response.json()) == [
        ("$.job.namespace", "must not be empty"),
        ("$.outputs[0].name", "must not be empty"),
    ]


async def test_array_lists_the_errors_of_every_invalid_event(client, conn):
    response = await client.post(
        "/api/v1/lineage", json=[run_event("a"), many_errors(), run_event("b"), without("job")]
    )
    assert response.status_code == 400
    problem = response.json()
    assert problem["detail"] == "2 of 4 events are invalid; none was stored."
    assert sorted(errors_of(problem)) == sorted(
        [(f"$[1]{path[1:]}", message) for path, message in MANY_ERRORS]
        + [("$[3]", "Object missing required field `job`")]
    )
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 0


def nameless_inputs(count: int) -> dict[str, Any]:
    event: Any = run_event("job")
    event["inputs"] = [{"namespace": "warehouse"} for _ in range(count)]
    return event


async def test_errors_are_listed_up_to_the_limit_and_the_rest_counted(client):
    response = await client.post("/api/v1/lineage", json=nameless_inputs(MAX_ERRORS + 50))
    assert response.status_code == 400
    problem = response.json()
    assert len(problem["errors"]) == MAX_ERRORS
    assert problem["errors"][-1]["path"] == f"$.inputs[{MAX_ERRORS - 1}]"
    assert problem["errorsOmitted"] == 50
    assert problem["detail"] == f"Invalid RunEvent: {MAX_ERRORS + 50} errors"

    # The limit is for the whole request: once it is reached, nothing can be stored and the rest
    # of the array is not even checked.
    response = await client.post("/api/v1/lineage", json=[nameless_inputs(60)] * 3)
    problem = response.json()
    assert len(problem["errors"]) == MAX_ERRORS
    assert problem["errorsOmitted"] == 2 * 60 - MAX_ERRORS
    assert problem["detail"] == "2 of 3 events are invalid, 1 more not checked; none was stored."


async def test_batch_lists_each_invalid_event_with_its_errors_within_the_limit(client, conn):
    events = [nameless_inputs(60), run_event("a"), many_errors(), nameless_inputs(60), 42]
    response = await client.post("/api/v1/lineage/batch", json=events)
    assert response.status_code == 200
    body = response.json()
    assert body["summary"]["failed"] == 4
    first, second, third, fourth = body["failed_events"]
    assert (first["index"], len(first["errors"]), "errorsOmitted" in first) == (0, 60, False)
    assert second["index"] == 2
    assert sorted((e["path"], e["message"]) for e in second["errors"]) == sorted(
        (f"$[2]{path[1:]}", message) for path, message in MANY_ERRORS
    )
    assert second["reason"].startswith("$[2]")
    listed = MAX_ERRORS - 60 - len(MANY_ERRORS)
    assert (third["index"], len(third["errors"]), third["errorsOmitted"]) == (3, listed, 60 - listed)
    assert third["reason"].endswith(f"; {60 - listed} more errors not listed")
    # Past the limit, an invalid event is still listed, with a count of its errors.
    assert fourth == {
        "index": 4,
        "reason": "1 error not listed",
        "retriable": False,
        "errors": [],
        "errorsOmitted": 1,
    }
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 1


async def test_api_key_is_required_when_configured(db, database_url):
    settings = Settings(database_url=database_url, api_key="s3cret", pool_min_size=0, pool_max_size=2)
    async with AsyncTestClient(app=create_app(settings)) as client:
        assert (await client.post("/api/v1/lineage", json=run_event("a"))).status_code == 401
        wrong = await client.post(
            "/api/v1/lineage", json=run_event("a"), headers={"authorization": "Bearer x"}
        )
        assert wrong.status_code == 401
        ok = await client.post(
            "/api/v1/lineage", json=run_event("a"), headers={"authorization": "Bearer s3cret"}
        )
        assert ok.status_code == 201


async def test_unavailable_database_is_503(unused_tcp_port):
    settings = Settings(
        database_url=f"postgresql://postgres@127.0.0.1:{unused_tcp_port}/none",
        pool_min_size=0,
        pool_max_size=1,
    )
    async with AsyncTestClient(app=create_app(settings)) as client:
        response = await client.post("/api/v1/lineage", json=run_event("a"))
        assert response.status_code == 503
        assert response.json()["code"] == "database_unavailable"
        assert (await client.get("/readyz")).status_code == 503
        assert (await client.get("/healthz")).status_code == 200


async def test_metrics_count_ingest_outcomes(client):
    event = run_event("a")
    await client.post("/api/v1/lineage", json=event)
    await client.post("/api/v1/lineage", json=event)
    await client.post("/api/v1/lineage", json={"eventType": "START"})
    text = (await client.get("/metrics")).text
    counts = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in text.splitlines()
        if line.startswith("headwater_events_total{")
    }
    assert counts['headwater_events_total{kind="RUN",status="created"}'] >= 1
    assert counts['headwater_events_total{kind="RUN",status="duplicate"}'] >= 1
    assert counts['headwater_events_total{kind="UNKNOWN",status="invalid"}'] >= 1
    assert "headwater_requests_total" in text


def _samples(text: str, name: str) -> dict[str, float]:
    """The samples of ``name`` by the text before their value: its labelled ones, and its unlabelled
    one under ``name`` itself."""
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith((name + "{", name + " "))
    }


async def test_metrics_show_each_ingest_transaction_and_its_turn(client):
    """Every ingest transaction counts its events, its wait for the turn and how long it held it."""
    names = (
        "headwater_ingest_transaction_events_count",
        "headwater_ingest_transaction_events_sum",
        "headwater_ingest_turn_wait_seconds_count",
        "headwater_ingest_turn_held_seconds_count",
        "headwater_ingest_turn_held_seconds_sum",
    )

    async def figures() -> dict[str, float]:
        text = (await client.get("/metrics")).text
        return {key: value for name in names for key, value in _samples(text, name).items()}

    before = await figures()
    for name in ("turn_a", "turn_b"):
        assert (await client.post("/api/v1/lineage", json=run_event(name))).status_code == 201
    array = [run_event(f"turn_array_{i}") for i in range(5)]
    assert (await client.post("/api/v1/lineage", json=array)).status_code == 201
    after = await figures()
    grew = {name: after[name] - before.get(name, 0) for name in names}
    # One transaction per request here (each is answered before the next is sent).
    assert grew["headwater_ingest_transaction_events_count"] == 3
    assert grew["headwater_ingest_transaction_events_sum"] == 7
    assert grew["headwater_ingest_turn_wait_seconds_count"] == 3
    assert grew["headwater_ingest_turn_held_seconds_count"] == 3
    assert grew["headwater_ingest_turn_held_seconds_sum"] > 0


async def test_request_metrics_count_each_route_and_status(client):
    """The request metrics, by method, route (its template), status and app_name; not probes."""
    before = _samples((await client.get("/metrics")).text, "headwater_requests_total")
    created = 'headwater_requests_total{app_name="headwater",method="POST",path="/api/v1/lineage",status_code="201"}'
    refused = 'headwater_requests_total{app_name="headwater",method="POST",path="/api/v1/lineage",status_code="400"}'
    missing = (
        'headwater_requests_total{app_name="headwater",method="GET",'
        'path="/api/v1/namespaces/{namespace}",status_code="404"}'
    )
    assert (await client.post("/api/v1/lineage", json=run_event("metered"))).status_code == 201
    assert (await client.post("/api/v1/lineage", json={"eventType": "START"})).status_code == 400
    for name in ("nowhere", "nothing"):
        assert (await client.get(f"/api/v1/namespaces/{name}")).status_code == 404
    await client.get("/healthz")
    text = (await client.get("/metrics")).text
    counts = _samples(text, "headwater_requests_total")
    assert counts[created] - before.get(created, 0) == 1
    assert counts[refused] - before.get(refused, 0) == 1
    assert counts[missing] - before.get(missing, 0) == 2
    assert not any('path="/healthz"' in key or 'path="/metrics"' in key for key in counts)
    durations = _samples(text, "headwater_request_duration_seconds_count")
    assert (
        durations[
            created.replace("headwater_requests_total", "headwater_request_duration_seconds_count")
        ]
        >= 1
    )
    assert all(v == 0 for v in _samples(text, "headwater_requests_in_progress").values())
