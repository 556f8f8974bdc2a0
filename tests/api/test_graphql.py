"""GraphQL queries: catalog reads, paging, lineage with REST's semantics, search, errors and limits."""

from __future__ import annotations

import uuid

import pytest

from headwater.store import catalog
from tests.client import execute, gql, post_all
from tests.factories import dataset, job_run, parent_facet, run_event

pytestmark = pytest.mark.db


async def test_graphiql_is_served_on_get(client):
    response = await client.get("/graphql", headers={"accept": "text/html"})
    assert response.status_code == 200
    assert "graphiql" in response.text.lower()


async def test_a_subscription_over_http_says_to_use_websockets(client):
    body = await execute(client, "subscription { lineageChanges { cursor } }")
    assert body["data"] is None
    [error] = body["errors"]
    assert error["extensions"]["code"] == "subscription_needs_websocket"
    assert "graphql-transport-ws" in error["message"]
    # Queries and mutations on the same path are unaffected.
    assert (await gql(client, "{ namespaces { name } }")) == {"namespaces": []}


async def test_dataset_with_fields_facets_tags_versions_and_writers(client):
    run_id = uuid.uuid4()
    await post_all(
        client,
        job_run(
            "load",
            inputs=["raw"],
            run_id=run_id,
            outputs=[
                dataset(
                    "orders",
                    fields=[("id", "int"), ("total", "decimal")],
                    documentation={"description": "All orders"},
                )
            ],
        ),
    )
    data = await gql(
        client,
        """{
      dataset(namespace: "warehouse", name: "orders") {
        id namespace name deleted facets
        fields { name type tags { name } }
        tags { name }
        currentVersion { fields { name type } createdByRun { id } }
        versions { version }
        runs { id state job { id } }
      }
    }""",
    )
    ds = data["dataset"]
    assert ds["id"] == "dataset:warehouse:orders"
    assert ds["deleted"] is False
    assert set(ds["facets"]) >= {"schema", "documentation"}
    assert ds["fields"] == [
        {"name": "id", "type": "int", "tags": []},
        {"name": "total", "type": "decimal", "tags": []},
    ]
    assert ds["tags"] == []
    assert ds["currentVersion"] == {
        "fields": [{"name": "id", "type": "int"}, {"name": "total", "type": "decimal"}],
        "createdByRun": {"id": str(run_id)},
    }
    assert len(ds["versions"]) == 1
    assert ds["runs"] == [{"id": str(run_id), "state": "COMPLETE", "job": {"id": "job:pipelines:load"}}]


async def test_unknown_dataset_job_and_run_are_null(client):
    data = await gql(
        client,
        """{
      dataset(namespace: "warehouse", name: "nope") { id }
      job(namespace: "pipelines", name: "nope") { id }
      run(id: "00000000-0000-0000-0000-000000000000") { id }
      namespace(name: "nope") { name }
    }""",
    )
    assert data == {"dataset": None, "job": None, "run": None, "namespace": None}


async def test_job_with_parent_versions_and_runs(client):
    parent_run = uuid.uuid4()
    await post_all(client, [run_event("dag", "START", run_id=parent_run)])
    first, second = uuid.uuid4(), uuid.uuid4()
    await post_all(
        client,
        job_run(
            "dag.task",
            inputs=["a"],
            outputs=["b"],
            run_id=first,
            run_facets=parent_facet(parent_run, "dag"),
        ),
    )
    await post_all(
        client,
        job_run(
            "dag.task",
            inputs=["a", "c"],
            outputs=["b"],
            run_id=second,
            start=10,
            end=11,
            run_facets=parent_facet(parent_run, "dag"),
        ),
    )
    data = await gql(
        client,
        """{
      job(namespace: "pipelines", name: "dag.task") {
        id manual deleted
        parent { id children { id } }
        currentVersion { inputs { name } outputs { name } }
        versions { inputs { name } }
        latestRun { id }
        runs(first: 1) { nodes { id state parentRun { id } states { state } inputs { dataset { name } }
                                 outputs { dataset { name } version { version } } }
                         pageInfo { hasNextPage endCursor } }
      }
    }""",
    )
    job = data["job"]
    assert job["parent"] == {"id": "job:pipelines:dag", "children": [{"id": "job:pipelines:dag.task"}]}
    assert job["currentVersion"]["inputs"] == [{"name": "a"}, {"name": "c"}]
    assert [v["inputs"] for v in job["versions"]] == [[{"name": "a"}, {"name": "c"}], [{"name": "a"}]]
    assert job["latestRun"] == {"id": str(second)}
    run = job["runs"]["nodes"][0]
    assert run["id"] == str(second)
    assert run["parentRun"] == {"id": str(parent_run)}
    assert [s["state"] for s in run["states"]] == ["START", "COMPLETE"]
    assert sorted(i["dataset"]["name"] for i in run["inputs"]) == ["a", "c"]
    assert run["outputs"][0]["dataset"]["name"] == "b"
    assert run["outputs"][0]["version"] is not None
    assert job["runs"]["pageInfo"]["hasNextPage"] is True
    more = await gql(
        client,
        """query($after: String) { job(namespace: "pipelines", name: "dag.task") {
        runs(first: 5, after: $after) { nodes { id } pageInfo { hasNextPage } } } }""",
        after=job["runs"]["pageInfo"]["endCursor"],
    )
    assert more["job"]["runs"] == {"nodes": [{"id": str(first)}], "pageInfo": {"hasNextPage": False}}


async def test_datasets_page_by_cursor_with_filters(client):
    await post_all(
        client, [run_event("w", outputs=[dataset(f"t{i:02d}") for i in range(7)] + ["other"])]
    )
    query = """query($after: String) {
      datasets(namespace: "warehouse", nameContains: "T0", first: 3, after: $after) {
        totalCount nodes { name } pageInfo { hasNextPage endCursor } } }"""
    names, after, pages = [], None, 0
    while True:
        page = (await gql(client, query, after=after))["datasets"]
        assert page["totalCount"] == 7
        names += [n["name"] for n in page["nodes"]]
        pages += 1
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert names == [f"t{i:02d}" for i in range(7)]
    assert pages == 3


async def test_name_filter_matches_wildcards_literally(client):
    await post_all(client, [run_event("w", outputs=["a_b", "axb", "a%b"])])
    data = await gql(client, '{ datasets(nameContains: "a_") { nodes { name } } }')
    assert data["datasets"]["nodes"] == [{"name": "a_b"}]


async def test_deleted_datasets_are_listed_only_when_asked(client):
    await post_all(client, [run_event("w", outputs=["kept", "gone"])])
    await gql(client, 'mutation { deleteDataset(namespace: "warehouse", name: "gone") { __typename } }')
    data = await gql(
        client,
        """{ visible: datasets { nodes { name } }
                                  all: datasets(includeDeleted: true) { nodes { name deleted } } }""",
    )
    assert data["visible"]["nodes"] == [{"name": "kept"}]
    assert data["all"]["nodes"] == [
        {"name": "gone", "deleted": True},
        {"name": "kept", "deleted": False},
    ]


async def test_namespaces_list_their_datasets_and_jobs(client):
    await post_all(client, job_run("etl", inputs=["a"], outputs=["b"]))
    data = await gql(
        client, "{ namespaces { name datasets { nodes { name } } jobs { nodes { name } } } }"
    )
    assert data["namespaces"] == [
        {"name": "pipelines", "datasets": {"nodes": []}, "jobs": {"nodes": [{"name": "etl"}]}},
        {
            "name": "warehouse",
            "datasets": {"nodes": [{"name": "a"}, {"name": "b"}]},
            "jobs": {"nodes": []},
        },
    ]


async def test_search_ranks_exact_then_prefix_then_shorter(client):
    await post_all(
        client, job_run("orders_job", inputs=["big_orders"], outputs=["orders", "orders_daily"])
    )
    data = await gql(client, '{ search(query: "orders") { totalCount hits { nodeId type } } }')
    assert data["search"]["totalCount"] == 4
    assert [h["nodeId"] for h in data["search"]["hits"]] == [
        "dataset:warehouse:orders",
        "job:pipelines:orders_job",
        "dataset:warehouse:orders_daily",
        "dataset:warehouse:big_orders",
    ]


async def rest_graph(client, node_id, **params):
    response = await client.get("/api/v1/lineage", params={"nodeId": node_id, **params})
    assert response.status_code == 200, response.text
    graph = response.json()["graph"]
    edges = sorted(
        {(e["origin"], e["destination"]) for n in graph for e in n["inEdges"] + n["outEdges"]}
    )
    return sorted(n["id"] for n in graph), edges


LINEAGE = """query($id: ID!, $depth: Int!, $direction: LineageDirection!, $asOf: DateTime) {
  lineage(nodeId: $id, depth: $depth, direction: $direction, asOf: $asOf) {
    __typename
    ... on LineageGraph { nodes { id type hops } edges { origin destination manual } truncated }
    ... on Problem { code message }
  }
}"""


@pytest.mark.parametrize(
    ("node", "depth", "direction"),
    [
        ("dataset:warehouse:mart", 1, "UPSTREAM"),
        ("dataset:warehouse:mart", 5, "UPSTREAM"),
        ("dataset:warehouse:staged", 1, "DOWNSTREAM"),
        ("dataset:warehouse:staged", 2, "BOTH"),
        ("job:pipelines:transform", 0, "DOWNSTREAM"),
        ("job:pipelines:transform", 1, "BOTH"),
    ],
)
async def test_lineage_has_the_rest_semantics(client, node, depth, direction):
    await post_all(client, job_run("ingest", inputs=["raw"], outputs=["staged"]))
    await post_all(client, job_run("transform", inputs=["staged"], outputs=["mart"]))
    await post_all(client, job_run("report", inputs=["mart"], outputs=["dashboard"]))
    await post_all(client, job_run("loop", inputs=["dashboard"], outputs=["raw"]))  # a cycle
    await post_all(client, job_run("side", inputs=["staged"], outputs=["mart"]))  # a diamond
    data = (await gql(client, LINEAGE, id=node, depth=depth, direction=direction))["lineage"]
    assert data["__typename"] == "LineageGraph"
    nodes = sorted(n["id"] for n in data["nodes"])
    edges = sorted((e["origin"], e["destination"]) for e in data["edges"])
    assert (nodes, edges) == await rest_graph(client, node, depth=depth, direction=direction)
    assert [n["hops"] for n in data["nodes"] if n["id"] == node] == [0]


async def test_lineage_as_of_shows_the_past_graph(client):
    await post_all(client, job_run("etl", inputs=["old_source"], outputs=["target"], start=0, end=1))
    await post_all(client, job_run("etl", inputs=["new_source"], outputs=["target"], start=10, end=11))
    past = (
        await gql(
            client,
            LINEAGE,
            id="dataset:warehouse:target",
            depth=1,
            direction="UPSTREAM",
            asOf="2026-01-01T12:05:00Z",
        )
    )["lineage"]
    now = (await gql(client, LINEAGE, id="dataset:warehouse:target", depth=1, direction="UPSTREAM"))[
        "lineage"
    ]
    assert "dataset:warehouse:old_source" in {n["id"] for n in past["nodes"]}
    assert "dataset:warehouse:old_source" not in {n["id"] for n in now["nodes"]}
    assert "dataset:warehouse:new_source" in {n["id"] for n in now["nodes"]}


async def test_lineage_failures_are_union_members(client, settings):
    await post_all(client, [run_event("w", outputs=["a"])])
    missing = (await gql(client, LINEAGE, id="dataset:warehouse:nope", depth=1, direction="BOTH"))[
        "lineage"
    ]
    too_deep = (await gql(client, LINEAGE, id="dataset:warehouse:a", depth=10_000, direction="BOTH"))[
        "lineage"
    ]
    invalid = (await gql(client, LINEAGE, id="nope", depth=1, direction="BOTH"))["lineage"]
    assert missing == {
        "__typename": "NotFoundError",
        "code": "node_not_found",
        "message": "Node 'dataset:warehouse:nope' not found.",
    }
    assert too_deep["__typename"] == "DepthTooLargeError"
    assert too_deep["code"] == "lineage_depth_too_large"
    maximum = await gql(
        client,
        '{ lineage(nodeId: "dataset:warehouse:a", depth: 10000) '
        "{ ... on DepthTooLargeError { maximum } } }",
    )
    assert maximum["lineage"]["maximum"] == settings.max_lineage_depth
    assert invalid["__typename"] == "InvalidInputError"
    assert invalid["code"] == "invalid_node_id"


async def test_errors_carry_the_rest_codes(client):
    body = await execute(client, '{ run(id: "not-a-uuid") { id } datasets(first: 0) { totalCount } }')
    codes = sorted(e["extensions"]["code"] for e in body["errors"])
    assert codes == ["invalid_request", "invalid_request"]
    body = await execute(client, '{ datasets(after: "garbage") { totalCount } }')
    assert body["errors"][0]["extensions"]["code"] == "invalid_cursor"
    body = await execute(client, "{ datasets { nodes { nope } } }")
    assert body["errors"][0]["extensions"]["code"] == "graphql_validation_failed"
    body = await execute(client, "{ datasets { ")
    assert body["errors"][0]["extensions"]["code"] == "graphql_parse_failed"


async def test_unexpected_errors_are_masked(client, monkeypatch):
    async def broken(*args, **kwargs):
        raise RuntimeError("SELECT secret FROM internals")

    monkeypatch.setattr(catalog, "list_namespaces", broken)
    body = await execute(client, "{ namespaces { name } }")
    error = body["errors"][0]
    assert error["extensions"]["code"] == "internal_error"
    assert "secret" not in error["message"]
    assert error["extensions"]["requestId"] in error["message"]


async def test_deep_queries_are_refused(client):
    deep = '{ dataset(namespace: "a", name: "b") { ' + "runs { job { " * 8 + "id" + " } }" * 8 + " } }"
    body = await execute(client, deep)
    assert body["data"] is None
    assert body["errors"][0]["extensions"]["code"] == "query_too_deep"


async def test_costly_queries_are_refused(client):
    costly = """{ datasets(first: 500) { nodes { runs(limit: 100) { job { runs(first: 100) { nodes { id } } } } } } }"""
    body = await execute(client, costly)
    assert body["data"] is None
    assert body["errors"][0]["extensions"]["code"] == "query_too_complex"
    cheap_with_variables = (
        """query($n: Int!) { datasets(first: $n) { nodes { runs(limit: 50) { id } } } }"""
    )
    assert "errors" not in await execute(client, cheap_with_variables, n=50)
    assert (await execute(client, cheap_with_variables, n=500))["errors"][0]["extensions"]["code"] == (
        "query_too_complex"
    )


async def test_too_many_aliases_are_refused(client):
    query = "{ " + " ".join(f"a{i}: tags {{ name }}" for i in range(40)) + " }"
    body = await execute(client, query)
    assert body["errors"][0]["extensions"]["code"] == "too_many_aliases"


def fragments_spreading_the_next_twice(count: int, last: str) -> str:
    """A document of about 25 bytes a fragment that expands to 2**count copies of ``last``."""
    spreads = " ".join(f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}" for i in range(count))
    return f"query {{ ...F0 }} {spreads} fragment F{count} on Query {{ {last} }}"


async def test_fragments_spread_again_and_again_are_measured_once_each(client):
    # Sixty fragments expand to 2**60 selections: each limit measures every fragment once, so the
    # answer is immediate (before, each check walked every expansion and the server hung).
    body = await execute(client, fragments_spreading_the_next_twice(60, "__typename"))
    assert body == {"data": {"__typename": "Query"}}
    body = await execute(client, fragments_spreading_the_next_twice(60, "a: __typename"))
    assert body["errors"][0]["extensions"]["code"] == "too_many_aliases"
    assert body["errors"][0]["message"] == "at least 1000000 aliases found. Allowed: 30"
    body = await execute(client, fragments_spreading_the_next_twice(60, "tags { name }"))
    assert body["errors"][0]["extensions"]["code"] == "query_too_complex"
    assert body["errors"][0]["message"].startswith("The operation may resolve about at least 1000000 ")


async def test_depth_counts_the_fields_fragments_add(client):
    # Each fragment adds two levels: eight of them, under the job, nest seventeen fields.
    levels = " ".join(
        f"fragment L{i} on Job {{ parent {{ parent {{ ...L{i + 1} }} }} }}" for i in range(8)
    )
    query = f'{{ job(namespace: "a", name: "b") {{ ...L0 }} }} {levels} fragment L8 on Job {{ id }}'
    body = await execute(client, query)
    assert body["errors"][0]["extensions"]["code"] == "query_too_deep"
    assert body["errors"][0]["message"] == "'anonymous' exceeds maximum operation depth of 15"
    levels = " ".join(
        f"fragment L{i} on Job {{ parent {{ parent {{ ...L{i + 1} }} }} }}" for i in range(6)
    )
    shallow = f'{{ job(namespace: "a", name: "b") {{ ...L0 }} }} {levels} fragment L6 on Job {{ id }}'
    assert "errors" not in await execute(client, shallow)


async def test_a_page_size_beyond_graphql_int_is_graphql_error_not_a_cost(client):
    body = await execute(client, "query($n: Int!) { datasets(first: $n) { nodes { name } } }", n=10**30)
    message = body["errors"][0]["message"]
    assert "Int cannot represent non 32-bit signed integer value" in message
    assert len(message) < 200


COLUMNS = """query($id: ID!, $direction: LineageDirection!) {
  columnLineage(nodeId: $id, depth: 5, direction: $direction, maxNodes: 100) {
    __typename
    ... on ColumnLineageGraph {
      nodes { id field type level inputFields { id transformations { type subtype } } }
      edges { origin destination }
      truncated
    }
    ... on Problem { code }
  }
}"""


async def test_column_lineage_follows_fields_through_jobs(client):
    await post_all(
        client,
        [
            run_event(
                "stage",
                inputs=[dataset("raw", fields=["id", "amount"])],
                outputs=[
                    dataset(
                        "staged",
                        fields=["id", "amount_eur"],
                        column_lineage={
                            "id": [("warehouse", "raw", "id")],
                            "amount_eur": [("warehouse", "raw", "amount")],
                        },
                    )
                ],
            )
        ],
    )
    await post_all(
        client,
        [
            run_event(
                "report",
                inputs=["staged"],
                outputs=[
                    dataset(
                        "report",
                        fields=["total"],
                        column_lineage={"total": [("warehouse", "staged", "amount_eur")]},
                    )
                ],
            )
        ],
    )
    data = await gql(client, COLUMNS, id="datasetField:warehouse:report:total", direction="UPSTREAM")
    graph = data["columnLineage"]
    assert graph["__typename"] == "ColumnLineageGraph"
    assert [(n["id"], n["level"]) for n in graph["nodes"]] == [
        ("datasetField:warehouse:report:total", 0),
        ("datasetField:warehouse:staged:amount_eur", 1),
        ("datasetField:warehouse:raw:amount", 2),
    ]
    assert graph["edges"] == [
        {
            "origin": "datasetField:warehouse:raw:amount",
            "destination": "datasetField:warehouse:staged:amount_eur",
        },
        {
            "origin": "datasetField:warehouse:staged:amount_eur",
            "destination": "datasetField:warehouse:report:total",
        },
    ]
    total = graph["nodes"][0]
    assert total["inputFields"] == [
        {
            "id": "datasetField:warehouse:staged:amount_eur",
            "transformations": [{"type": "DIRECT", "subtype": "IDENTITY"}],
        }
    ]
    missing = await gql(client, COLUMNS, id="dataset:warehouse:nope", direction="BOTH")
    assert missing["columnLineage"] == {"__typename": "NotFoundError", "code": "node_not_found"}
