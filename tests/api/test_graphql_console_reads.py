"""The reads the web console needs beyond the catalog: `find` (datasets, jobs and columns, with a
tag filter) and `suspectChanges` (what may explain a wrong dataset)."""

from __future__ import annotations

import uuid

import pytest

from tests.client import execute, gql, post_all
from tests.factories import at, dataset, job_run, run_event, sql_facet

pytestmark = pytest.mark.db

FIND = """query($q: String!, $kinds: [FindKind!], $tag: String) {
  find(query: $q, kinds: $kinds, tag: $tag) {
    totalCount hits { nodeId kind namespace name field fieldType dataset { name } job { name } }
  }
}"""


async def test_find_matches_columns_datasets_and_jobs_and_filters_by_kind_and_tag(client):
    await post_all(
        client,
        job_run(
            "load_customers",
            inputs=["raw_customers"],
            outputs=[dataset("customers", fields=[("customer_email", "varchar"), ("id", "int")])],
        ),
    )
    data = await gql(client, FIND, q="customer")
    ids = {h["nodeId"] for h in data["find"]["hits"]}
    assert ids == {
        "dataset:warehouse:customers",
        "dataset:warehouse:raw_customers",
        "job:pipelines:load_customers",
        "datasetField:warehouse:customers:customer_email",
    }
    assert data["find"]["totalCount"] == 4
    [column] = [h for h in data["find"]["hits"] if h["kind"] == "COLUMN"]
    assert column["field"] == "customer_email"
    assert column["fieldType"] == "varchar"
    assert column["dataset"] == {"name": "customers"}
    assert column["job"] is None

    columns = await gql(client, FIND, q="customer", kinds=["COLUMN"])
    assert [h["field"] for h in columns["find"]["hits"]] == ["customer_email"]

    untagged = await gql(client, FIND, q="customer", tag="pii")
    assert untagged["find"] == {"totalCount": 0, "hits": []}
    await gql(
        client,
        'mutation { tagDataset(namespace: "warehouse", name: "customers", tag: "pii", '
        'field: "customer_email") { __typename } }',
    )
    tagged = await gql(client, FIND, q="customer", tag="pii")
    assert [h["nodeId"] for h in tagged["find"]["hits"]] == [
        "datasetField:warehouse:customers:customer_email"
    ]


async def test_find_refuses_an_empty_text_and_a_negative_offset(client):
    body = await execute(client, '{ find(query: "  ") { totalCount } }')
    assert body["errors"][0]["extensions"]["code"] == "invalid_request"
    body = await execute(client, '{ find(query: "a", offset: -1) { totalCount } }')
    assert "offset" in body["errors"][0]["message"]


SUSPECTS = """query($ids: [ID!]!, $since: DateTime!) {
  suspectChanges(nodeIds: $ids, since: $since) { totalCount changes { kind nodeId namespace at details } }
}"""


async def test_suspect_changes_are_failed_runs_new_job_versions_and_schema_changes_since_a_time(client):
    failed = uuid.uuid4()
    await post_all(
        client,
        [
            *job_run("stage", inputs=["src"], outputs=[dataset("staged", fields=[("a", "int")])]),
            # A failed run of the upstream job, later.
            run_event("stage", "START", run_id=failed, time=10, inputs=["src"]),
            run_event("stage", "FAIL", run_id=failed, time=11),
            # The schema of staged changes: a new column.
            *job_run(
                "stage",
                inputs=["src"],
                outputs=[dataset("staged", fields=[("a", "int"), ("b", "text")])],
                start=20,
                end=21,
            ),
            # Something outside the asked nodes fails too: not reported.
            run_event("other", "FAIL", time=30, inputs=["elsewhere"]),
        ],
    )
    ids = ["job:pipelines:stage", "dataset:warehouse:staged", "dataset:warehouse:src"]
    data = await gql(client, SUSPECTS, ids=ids, since=at(5))
    changes = data["suspectChanges"]["changes"]
    kinds = [(c["kind"], c["nodeId"]) for c in changes]
    assert ("RUN_STATE_CHANGED", "job:pipelines:stage") in kinds
    assert ("SCHEMA_CHANGED", "dataset:warehouse:staged") in kinds
    assert all(c["nodeId"] in ids for c in changes)
    assert data["suspectChanges"]["totalCount"] == len(changes)
    assert [c["at"] for c in changes] == sorted((c["at"] for c in changes), reverse=True)
    [failure] = [c for c in changes if c["kind"] == "RUN_STATE_CHANGED"]
    assert failure["details"]["state"] == "FAIL"
    assert failure["namespace"] == "pipelines"

    # Nothing happened after the last change.
    later = await gql(client, SUSPECTS, ids=ids, since=at(60))
    assert later["suspectChanges"] == {"totalCount": 0, "changes": []}


async def test_suspect_changes_caps_the_node_ids(client):
    body = await execute(client, SUSPECTS, ids=[f"job:n:{i}" for i in range(10_001)], since=at(0))
    assert "At most 10000 node ids" in body["errors"][0]["message"]


OWNERSHIP_URL = "https://openlineage.io/spec/facets/1-0-1/OwnershipDatasetFacet.json"


def ownership(*names: str) -> dict[str, object]:
    return {
        "_producer": "https://example.com/headwater-tests",
        "_schemaURL": OWNERSHIP_URL,
        "owners": [{"name": n, "type": "MAINTAINER"} for n in names],
    }


async def test_owners_come_from_the_ownership_facets_and_fit_a_large_impact_query(client):
    await post_all(
        client,
        [
            run_event(
                "load_sales",
                inputs=["raw_sales"],
                outputs=[dataset("sales", ownership=ownership("team:finance", "alice", "team:finance"))],
                job_facets={"ownership": ownership("team:etl")},
            )
        ],
    )
    # The impact page asks this of up to 2,000 nodes: it must fit the cost budget.
    data = await gql(
        client,
        """{ lineage(nodeId: "dataset:warehouse:raw_sales", direction: DOWNSTREAM, maxNodes: 2000) {
          ... on LineageGraph { nodes { id dataset { owners } job { owners } } } } }""",
    )
    owners = {n["id"]: (n["dataset"] or n["job"])["owners"] for n in data["lineage"]["nodes"]}
    assert owners == {
        "dataset:warehouse:raw_sales": [],
        "job:pipelines:load_sales": ["team:etl"],
        "dataset:warehouse:sales": ["team:finance", "alice"],
    }


VERSIONS = """{ job(namespace: "pipelines", name: "daily") {
  versions { codeHash code { text language } createdByRun { id } } } }"""


async def test_each_job_version_has_the_code_its_first_run_reported(client):
    first = "INSERT INTO totals SELECT sum(amount) FROM orders"
    second = "INSERT INTO totals SELECT sum(amount) FROM orders WHERE NOT test"
    sql = {"sql": {**sql_facet(first)["sql"], "dialect": "postgres"}}
    await post_all(
        client,
        [
            *job_run("daily", inputs=["orders"], outputs=["totals"], job_facets=sql),
            *job_run(
                "daily",
                inputs=["orders"],
                outputs=["totals"],
                start=10,
                end=11,
                job_facets=sql_facet(second),
            ),
            # A third version, from a run that reported no code.
            *job_run("daily", inputs=["orders", "refunds"], outputs=["totals"], start=20, end=21),
        ],
    )
    versions = (await gql(client, VERSIONS))["job"]["versions"]
    assert [v["code"] for v in versions] == [
        None,
        {"text": second, "language": "SQL"},
        {"text": first, "language": "postgres"},
    ]
    assert versions[1]["codeHash"] != versions[2]["codeHash"]
