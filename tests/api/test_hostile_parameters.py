"""Parameters of reads and writes a careless or hostile client sends (NUL characters, numbers past
what PostgreSQL takes, absurd time zones): a 4xx naming the parameter, never a 500."""

from __future__ import annotations

import base64
import json
import time

import pytest

from headwater.api.rest.catalog.routing import MAX_OFFSET
from tests.client import execute, post_all
from tests.factories import job_run

pytestmark = pytest.mark.db

NUL_PATHS = [
    ("GET", "/api/v1/namespaces/a%00b", "path.namespace"),
    ("GET", "/api/v1/namespaces/warehouse/datasets/a%00b", "path.dataset"),
    ("DELETE", "/api/v1/namespaces/warehouse/datasets/a%00b", "path.dataset"),
    ("DELETE", "/api/v1/namespaces/pipelines/jobs/lo%00ad", "path.job"),
    ("GET", "/api/v1/namespaces/pipelines/jobs/a%00b/versions", "path.job"),
    ("GET", "/api/v1/namespaces/warehouse/datasets/orders/versions/a%00b", "path.version"),
    ("GET", "/api/v1/lineage?nodeId=job:a%00:b", "query.nodeId"),
    ("GET", "/api/v1/column-lineage?nodeId=datasetField:a:b:c%00", "query.nodeId"),
    ("GET", "/api/v1/search?q=or%00ders", "query.q"),
    ("GET", "/api/v1/governance/violations?namespace=%00", "query.namespace"),
    ("GET", "/api/v1/governance/classifications?namespace=%00&name=x", "query.namespace"),
]


@pytest.mark.parametrize(("method", "url", "where"), NUL_PATHS)
async def test_a_nul_in_a_parameter_is_a_400_naming_it(client, method, url, where):
    await post_all(client, job_run("load", inputs=["orders"], outputs=["totals"]))
    response = await client.request(method, url)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "invalid_request"
    assert [e["path"] for e in body["errors"]] == [where]
    assert "U+0000" in body["detail"]


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/jobs?offset={}",
        "/api/v1/events/lineage?offset={}",
        "/api/v1/namespaces/warehouse/datasets?offset={}",
        "/api/v1/namespaces/pipelines/jobs/load/runs?offset={}",
    ],
)
async def test_offsets_go_up_to_what_every_json_client_holds_exactly(client, url):
    await post_all(client, job_run("load", inputs=["orders"], outputs=["totals"]))
    largest = MAX_OFFSET
    assert (await client.get(url.format(largest))).status_code == 200
    assert (await client.get(url.format(2**63))).status_code == 400
    response = await client.get(url.format(largest + 1))
    assert response.status_code == 400, response.text
    assert response.json()["errors"][0]["path"] == "query.offset"


# Past a bigint, past Python's 4,300-digit limit on integer text, no ASCII digit, negative.
VIOLATION_IDS_NOT = ["99999999999999999999999", "9" * 5000, "²", "-1"]


@pytest.mark.parametrize("after", VIOLATION_IDS_NOT)
async def test_a_violation_cursor_past_any_id_is_a_400(client, after):
    response = await client.get("/api/v1/governance/violations", params={"after": after})
    assert response.status_code == 400, response.text
    detail = response.json()["detail"]
    body = await execute(client, "query($a: String) { policyViolations(after: $a) { rule } }", a=after)
    [error] = body["errors"]
    assert error["extensions"]["code"] == "invalid_request", error
    # The same message both ways, quoting at most 100 characters of what was sent, a cut marked.
    assert error["message"] == detail
    assert (
        detail
        == f"after must be a violation id, got '{after if len(after) <= 100 else after[:100] + '…'}'."
    )


async def test_a_time_zone_too_long_for_a_file_name_is_a_400_not_a_503(client):
    response = await client.get("/api/v1/stats/lineage-events", params={"timezone": "a" * 300})
    assert response.status_code == 400, response.text
    assert response.json()["detail"].startswith("Unknown time zone")


async def test_graphql_refuses_a_nul_in_a_variable_or_a_string_naming_where(client):
    body = await execute(
        client,
        'query($ids: [ID!]!) { suspectChanges(nodeIds: $ids, since: "2020-01-01T00:00:00Z") '
        "{ __typename } }",
        ids=["dataset:a:b", "dataset:a\x00:b"],
    )
    [error] = body["errors"]
    assert error["extensions"]["code"] == "invalid_request"
    assert "$ids[1]" in error["message"]

    body = await execute(client, '{ dataset(namespace: "a\\u0000", name: "b") { name } }')
    [error] = body["errors"]
    assert error["extensions"]["code"] == "invalid_request"
    assert "a string on line 1" in error["message"]

    for query, variables in [
        ("query($n: String!) { namespace(name: $n) { name } }", {"n": "a\x00"}),
        ("query($n: String) { datasets(nameContains: $n) { nodes { name } } }", {"n": "\x00"}),
        ("query($n: String!) { job(namespace: $n, name: $n) { name } }", {"n": "\x00"}),
    ]:
        [error] = (await execute(client, query, **variables))["errors"]
        assert error["extensions"]["code"] == "invalid_request", error


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/v1/tags/pii", {"description": "a\x00"}, "description"),
        ("/api/v1/governance/classifications", {"namespace": "a\x00", "name": "x"}, "namespace"),
        (
            "/api/v1/governance/classifications",
            {"namespace": "warehouse", "name": "orders", "tags": ["pii", "\x00"]},
            "tags",
        ),
    ],
)
async def test_a_nul_in_a_request_body_is_a_400_naming_the_field(client, url, body, field):
    response = await client.put(url, json=body)
    assert response.status_code == 400, response.text
    [error] = response.json()["errors"]
    assert error["message"] == f"{field} holds U+0000 (NUL), which no text stored here can contain"


@pytest.mark.parametrize(
    "query",
    [
        "query($a: String) { datasets(first: 5, after: $a) { __typename } }",
        "query($a: String) { jobs(first: 5, after: $a) { __typename } }",
        "query($a: String) { policyViolations(first: 5, after: $a) { __typename } }",
    ],
)
async def test_a_graphql_cursor_of_nested_json_is_refused_in_a_line(client, query):
    # A cursor is base64 of a JSON list: this one decodes to JSON deeper than any decoder goes.
    cursor = base64.urlsafe_b64encode(b"[" * 100_000).decode()
    response = await client.post("/graphql", json={"query": query, "variables": {"a": cursor}})
    [error] = response.json()["errors"]
    assert error["extensions"]["code"] in ("invalid_cursor", "invalid_request"), error
    assert len(error["message"]) < 300


# Each a valid RFC 3339 time PostgreSQL cannot read: an offset past 15:59, or an instant outside
# years 1 to 9999 once in UTC.
OUT_OF_RANGE_TIMES = ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"]


@pytest.mark.parametrize("time", OUT_OF_RANGE_TIMES)
@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/lineage?nodeId=dataset:warehouse:totals&asOf={}",
        "/api/v1/column-lineage?nodeId=dataset:warehouse:totals&asOf={}",
        "/api/v1/events/lineage?before={}",
        "/api/v1/events/lineage?after={}",
    ],
)
async def test_a_time_outside_what_postgresql_holds_is_a_400_naming_the_range(client, url, time):
    await post_all(client, job_run("load", inputs=["orders"], outputs=["totals"]))
    response = await client.get(url.format(time.replace("+", "%2B")))
    assert response.status_code == 400, response.text
    assert "must be, in UTC, after 0001-01-01T00:00:00Z" in response.json()["detail"]


async def test_an_offset_past_what_postgresql_reads_is_the_same_instant_in_utc(client):
    await post_all(client, job_run("load", inputs=["orders"], outputs=["totals"]))
    response = await client.get(
        "/api/v1/lineage",
        params={"nodeId": "dataset:warehouse:totals", "asOf": "2099-01-01T00:00:00-23:59"},
    )
    assert response.status_code == 200, response.text
    assert any(n["id"] == "dataset:warehouse:totals" for n in response.json()["graph"])


@pytest.mark.parametrize("time", OUT_OF_RANGE_TIMES)
async def test_graphql_times_outside_what_postgresql_holds_name_the_range(client, time):
    body = await execute(
        client,
        'query($t: DateTime) { lineage(nodeId: "dataset:warehouse:totals", asOf: $t) '
        "{ __typename ... on InvalidInputError { message } } }",
        t=time,
    )
    assert body["data"]["lineage"]["__typename"] == "InvalidInputError"
    assert "must be, in UTC" in body["data"]["lineage"]["message"]
    body = await execute(
        client,
        'query($t: DateTime!) { suspectChanges(nodeIds: ["dataset:a:b"], since: $t) { totalCount } }',
        t=time,
    )
    [error] = body["errors"]
    assert error["extensions"]["code"] == "invalid_request", error
    assert error["message"].startswith(f"since {time} must be, in UTC")


@pytest.mark.parametrize(
    "keyset",
    [
        ["0001-01-01T00:00:00+14:00", "5f0e2c1e-8d8b-4a63-9a57-1f6c1b5f0d11"],
        ["yesterday", "5f0e2c1e-8d8b-4a63-9a57-1f6c1b5f0d11"],
        ["2026-01-01T00:00:00Z", "not a uuid"],
        [5, None],
    ],
)
async def test_a_made_up_cursor_of_a_jobs_runs_is_an_invalid_cursor(client, keyset):
    await post_all(client, job_run("load", inputs=["orders"], outputs=["totals"]))
    cursor = base64.urlsafe_b64encode(json.dumps(keyset).encode()).decode()
    body = await execute(
        client,
        'query($a: String) { job(namespace: "pipelines", name: "load") '
        "{ runs(first: 1, after: $a) { nodes { id } } } }",
        a=cursor,
    )
    [error] = body["errors"]
    assert error["extensions"]["code"] == "invalid_cursor", error


async def test_a_parameter_of_the_wrong_kind_is_named_as_the_api_names_it(client):
    response = await client.get("/api/v1/events/lineage", params={"sortDirection": "sideways"})
    assert response.status_code == 400, response.text
    body = response.json()
    [error] = body["errors"]
    assert error["path"] == "query.sortDirection"
    assert error["message"].endswith("; expected one of: asc, desc")
    assert body["detail"].startswith("Invalid parameters: query.sortDirection: ")
    response = await client.get("/api/v1/jobs", params={"lastRunStates": "BOGUS"})
    assert response.status_code == 400, response.text
    [error] = response.json()["errors"]
    assert error["path"] == "query.lastRunStates"
    assert "expected one of: " in error["message"]


@pytest.mark.parametrize(
    ("url", "part"),
    [
        ("/api/v1/namespaces/%ff%fe", "path"),
        ("/api/v1/search?q=%ff%fe", "query"),
        ("/api/v1/search?q=%ED%A0%80", "query"),  # an encoded surrogate
        ("/api/v1/lineage?nodeId=dataset:a:%ED%A0%80", "query"),
        ("/api/v1/search?q=x&%ff=1", "query"),
    ],
)
async def test_a_url_that_is_not_utf8_once_decoded_is_a_400(client, url, part):
    response = await client.get(url)
    assert response.status_code == 400, response.text
    [error] = response.json()["errors"]
    assert error["path"] == part
    assert error["message"].startswith("not UTF-8 once percent-decoded (byte 0x")
    assert (await client.get("/api/v1/search?q=%C3%A9t%C3%A9")).status_code == 200


async def test_a_write_a_page_of_another_site_makes_a_browser_send_is_refused(client, conn):
    # A form or a text/plain body from another site is sent without asking the server first;
    # browsers mark it. Clients that are not browsers send no such header.
    event = job_run("load", inputs=["orders"], outputs=["totals"])[0]
    cross_site = {"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}
    response = await client.post("/api/v1/lineage", content=json.dumps(event), headers=cross_site)
    assert response.status_code == 403, response.text
    assert "Sec-Fetch-Site: cross-site" in response.json()["detail"]
    response = await client.post(
        "/api/v1/namespaces/warehouse/datasets/orders/tags/pii", headers=cross_site
    )
    assert response.status_code == 403
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 0
    assert (await client.get("/api/v1/namespaces", headers=cross_site)).status_code == 200
    same_origin = {"Sec-Fetch-Site": "same-origin"}
    assert (await client.post("/api/v1/lineage", json=event, headers=same_origin)).status_code == 201
    again = job_run("again", inputs=["a"], outputs=["b"])[0]
    assert (await client.post("/api/v1/lineage", json=again)).status_code == 201


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/lineage?depth=1&nodeId=job:" + "a:" * 16_000 + "b",
        "/api/v1/lineage/path?to=job:a:b&from=dataset:" + "a:" * 16_000 + "b",
        "/api/v1/column-lineage?depth=1&nodeId=datasetField:" + "a:" * 800 + "b",
    ],
)
async def test_a_node_id_of_thousands_of_colons_is_a_400_at_once(client, url):
    # Each colon was a split to look up (each pair of them, in a field id): seconds and gigabytes.
    await post_all(client, job_run("load", inputs=["orders"], outputs=["totals"]))
    started = time.perf_counter()
    response = await client.get(url)
    assert time.perf_counter() - started < 1
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid_node_id"
    assert "characters)" in response.json()["detail"]


async def test_head_is_answered_as_get_without_the_body(client):
    await post_all(client, job_run("load", inputs=["orders"], outputs=["totals"]))
    for path in ("/healthz", "/api/v1/namespaces", "/console/static/console.css", "/"):
        got, head = await client.get(path), await client.head(path)
        assert head.status_code == got.status_code == 200, path
        assert head.content == b""
        assert head.headers["content-length"] == str(len(got.content))
        assert head.headers["content-type"] == got.headers["content-type"]


async def test_a_method_a_path_does_not_take_is_a_405_naming_those_it_does(client):
    response = await client.post("/healthz")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD, OPTIONS"
    assert response.json()["detail"] == "POST is not allowed on /healthz; it takes GET, HEAD, OPTIONS."


async def test_options_names_every_method_of_its_path(client):
    # Litestar named only the methods of the handler registered first: POST on /api/v1/lineage,
    # GET on /graphql, where the path takes both.
    for path, methods in [
        ("/api/v1/lineage", "GET, HEAD, OPTIONS, POST"),
        ("/graphql", "GET, HEAD, OPTIONS, POST"),
        ("/api/v1/lineage/batch", "OPTIONS, POST"),
        ("/healthz", "GET, HEAD, OPTIONS"),
        ("/api/v1/namespaces/", "GET, HEAD, OPTIONS"),
    ]:
        response = await client.options(path)
        assert response.status_code == 204, path
        assert response.headers["allow"] == methods, path
        assert (await client.delete(path)).headers["allow"] == methods, path
    assert (await client.options("/no/such/path")).status_code == 404


async def test_allowed_values_are_named_as_the_parameter_takes_them(client):
    # filter and lastRunStates take upper case only; sort takes either case, named once.
    answers = [
        await client.get(url)
        for url in (
            "/api/v1/search?q=or&filter=dataset",
            "/api/v1/jobs?lastRunStates=completed",
            "/api/v1/search?q=or&sort=sideways",
        )
    ]
    assert [a.json()["errors"][0]["message"].partition("; ")[2] for a in answers] == [
        "expected one of: DATASET, JOB",
        "expected one of: NEW, RUNNING, COMPLETED, FAILED, ABORTED",
        "expected one of: NAME, UPDATE_AT, HEAT",
    ]
    assert (await client.get("/api/v1/search?q=or&sort=name")).status_code == 200
