"""GraphQL mutations: tags, manual lineage, soft delete; each writes its change_log row."""

from __future__ import annotations

import asyncio

import pytest
from litestar.testing import AsyncTestClient

from headwater.app import create_app
from headwater.settings import Settings
from tests.client import gql, post_all
from tests.factories import dataset, job_run, run_event

pytestmark = pytest.mark.db


async def changes(conn, after=0):
    rows = await conn.fetch(
        "SELECT kind, node_id, details FROM change_log WHERE change_id > $1 ORDER BY change_id", after
    )
    return [(r["kind"], r["node_id"], r["details"]) for r in rows]


async def last_change_id(conn):
    return await conn.fetchval("SELECT coalesce(max(change_id), 0) FROM change_log")


TAG_DATASET = """mutation($tag: String!, $field: String) {
  tagDataset(namespace: "warehouse", name: "users", tag: $tag, field: $field, description: "Personal data") {
    __typename
    ... on Dataset { tags { name description } fields { name tags { name } } }
    ... on Problem { code message }
  }
}"""
UNTAG_DATASET = """mutation($tag: String!, $field: String) {
  untagDataset(namespace: "warehouse", name: "users", tag: $tag, field: $field) {
    ... on Dataset { tags { name } fields { name tags { name } } }
  }
}"""


async def test_tag_and_untag_a_dataset_and_a_field(client, conn):
    await post_all(client, [run_event("w", outputs=[dataset("users", fields=["email", "id"])])])
    start = await last_change_id(conn)
    tagged = (await gql(client, TAG_DATASET, tag="pii"))["tagDataset"]
    assert tagged["tags"] == [{"name": "pii", "description": "Personal data"}]
    field = (await gql(client, TAG_DATASET, tag="pii", field="email"))["tagDataset"]
    assert field["fields"] == [{"name": "email", "tags": [{"name": "pii"}]}, {"name": "id", "tags": []}]
    await gql(client, TAG_DATASET, tag="pii")  # already there: no change
    untagged = (await gql(client, UNTAG_DATASET, tag="pii"))["untagDataset"]
    assert untagged["tags"] == []
    assert untagged["fields"][0]["tags"] == [{"name": "pii"}]
    node = "dataset:warehouse:users"
    assert await changes(conn, start) == [
        ("TAG_CHANGED", node, {"tag": "pii", "action": "ADDED", "field": None}),
        ("TAG_CHANGED", node, {"tag": "pii", "action": "ADDED", "field": "email"}),
        ("TAG_CHANGED", node, {"tag": "pii", "action": "REMOVED", "field": None}),
    ]
    assert (await gql(client, "{ tags { name description } }"))["tags"] == [
        {"name": "pii", "description": "Personal data"}
    ]


async def test_tag_failures_are_union_members(client):
    await post_all(client, [run_event("w", outputs=[dataset("users", fields=["email"])])])
    unknown_field = (await gql(client, TAG_DATASET, tag="pii", field="nope"))["tagDataset"]
    assert unknown_field == {
        "__typename": "NotFoundError",
        "code": "dataset_field_not_found",
        "message": "Field 'nope' of dataset 'warehouse'.'users' not found.",
    }
    bad_name = (await gql(client, TAG_DATASET, tag="not a tag!"))["tagDataset"]
    assert bad_name["__typename"] == "InvalidInputError"
    assert bad_name["code"] == "invalid_request"
    job = await gql(
        client,
        'mutation { tagJob(namespace: "pipelines", name: "nope", tag: "x") '
        "{ ... on Problem { code } } }",
    )
    assert job["tagJob"] == {"code": "job_not_found"}


async def test_tag_and_untag_a_job(client, conn):
    await post_all(client, [run_event("etl", outputs=["a"])])
    start = await last_change_id(conn)
    tagged = await gql(
        client,
        'mutation { tagJob(namespace: "pipelines", name: "etl", tag: "critical") '
        "{ ... on Job { tags { name } } } }",
    )
    assert tagged["tagJob"]["tags"] == [{"name": "critical"}]
    untagged = await gql(
        client,
        'mutation { untagJob(namespace: "pipelines", name: "etl", tag: "critical") '
        "{ ... on Job { tags { name } } } }",
    )
    assert untagged["untagJob"]["tags"] == []
    assert [c[0] for c in await changes(conn, start)] == ["TAG_CHANGED", "TAG_CHANGED"]


MANUAL = """mutation($origin: ID!, $destination: ID!) {
  addManualEdge(origin: $origin, destination: $destination, description: "from the wiki") {
    __typename
    ... on ManualEdge { edges { origin destination manual } via { id manual type } changed }
    ... on Problem { code message }
  }
}"""
REMOVE = """mutation($origin: ID!, $destination: ID!) {
  removeManualEdge(origin: $origin, destination: $destination) {
    __typename
    ... on ManualEdge { edges { origin destination } }
    ... on Problem { code message }
  }
}"""
UPSTREAM = """query($id: ID!) { lineage(nodeId: $id, depth: 2, direction: UPSTREAM) {
  ... on LineageGraph { nodes { id } edges { origin destination manual } } } }"""


async def test_manual_dataset_to_dataset_edge_goes_through_a_manual_job(client, conn):
    await post_all(client, [run_event("reader", inputs=["crm_export", "customers"])])
    start = await last_change_id(conn)
    added = (
        await gql(
            client,
            MANUAL,
            origin="dataset:warehouse:crm_export",
            destination="dataset:warehouse:customers",
        )
    )["addManualEdge"]
    job = "job:warehouse:manual/customers"
    assert added == {
        "__typename": "ManualEdge",
        "edges": [
            {"origin": "dataset:warehouse:crm_export", "destination": job, "manual": True},
            {"origin": job, "destination": "dataset:warehouse:customers", "manual": True},
        ],
        "via": {"id": job, "manual": True, "type": "MANUAL"},
        "changed": True,
    }
    graph = (await gql(client, UPSTREAM, id="dataset:warehouse:customers"))["lineage"]
    assert sorted(n["id"] for n in graph["nodes"]) == [
        "dataset:warehouse:crm_export",
        "dataset:warehouse:customers",
        job,
    ]
    assert all(e["manual"] for e in graph["edges"])
    again = (
        await gql(
            client,
            MANUAL,
            origin="dataset:warehouse:crm_export",
            destination="dataset:warehouse:customers",
        )
    )["addManualEdge"]
    assert again["changed"] is False
    assert [(c[0], c[1]) for c in await changes(conn, start)] == [
        ("JOB_CREATED", job),
        ("MANUAL_EDGE_ADDED", "dataset:warehouse:customers"),
    ]
    removed = (
        await gql(
            client,
            REMOVE,
            origin="dataset:warehouse:crm_export",
            destination="dataset:warehouse:customers",
        )
    )["removeManualEdge"]
    assert removed["edges"] == [
        {"origin": "dataset:warehouse:crm_export", "destination": job},
        {"origin": job, "destination": "dataset:warehouse:customers"},
    ]
    graph = (await gql(client, UPSTREAM, id="dataset:warehouse:customers"))["lineage"]
    assert [n["id"] for n in graph["nodes"]] == ["dataset:warehouse:customers"]
    kind, node, details = (await changes(conn, start))[-1]
    assert (kind, node, details["origin"], details["via"]) == (
        "MANUAL_EDGE_REMOVED",
        "dataset:warehouse:customers",
        "dataset:warehouse:crm_export",
        job,
    )


async def test_manual_edge_survives_the_job_completing_without_it(client):
    await post_all(client, job_run("etl", inputs=["a"], outputs=["b"], start=0, end=1))
    added = (
        await gql(client, MANUAL, origin="dataset:warehouse:side_input", destination="job:pipelines:etl")
    )["addManualEdge"]
    assert added["__typename"] == "NotFoundError"  # the dataset must exist first
    await post_all(client, [run_event("w", outputs=["side_input"])])
    added = (
        await gql(client, MANUAL, origin="dataset:warehouse:side_input", destination="job:pipelines:etl")
    )["addManualEdge"]
    assert added["edges"] == [
        {"origin": "dataset:warehouse:side_input", "destination": "job:pipelines:etl", "manual": True}
    ]
    # A newer completed run without the input closes observed edges it no longer has, never manual ones.
    await post_all(client, job_run("etl", inputs=["a"], outputs=["b"], start=10, end=11))
    graph = (await gql(client, UPSTREAM, id="dataset:warehouse:b"))["lineage"]
    assert {
        "origin": "dataset:warehouse:side_input",
        "destination": "job:pipelines:etl",
        "manual": True,
    } in (graph["edges"])
    assert {
        "origin": "dataset:warehouse:a",
        "destination": "job:pipelines:etl",
        "manual": False,
    } in graph["edges"]


async def test_manual_edge_conflicts_and_misses(client):
    await post_all(client, job_run("etl", inputs=["a"], outputs=["b"]))
    observed = await gql(client, MANUAL, origin="dataset:warehouse:a", destination="job:pipelines:etl")
    assert observed["addManualEdge"]["code"] == "lineage_edge_exists"
    jobs = await gql(client, MANUAL, origin="job:pipelines:etl", destination="job:pipelines:etl")
    assert jobs["addManualEdge"]["__typename"] == "InvalidInputError"
    missing = await gql(client, REMOVE, origin="dataset:warehouse:a", destination="job:pipelines:etl")
    assert missing["removeManualEdge"]["code"] == "manual_edge_not_found"


DELETE = """mutation { deleteDataset(namespace: "warehouse", name: "a") { ... on Dataset { deleted deletedAt } } }"""
RESTORE = (
    """mutation { restoreDataset(namespace: "warehouse", name: "a") { ... on Dataset { deleted } } }"""
)


async def test_soft_delete_and_restore(client, conn):
    await post_all(client, job_run("etl", inputs=["a"], outputs=["b"]))
    start = await last_change_id(conn)
    assert (await gql(client, DELETE))["deleteDataset"]["deleted"] is True
    assert (await gql(client, DELETE))["deleteDataset"]["deleted"] is True  # no second change
    assert (await gql(client, '{ search(query: "a") { totalCount } }'))["search"]["totalCount"] == 0
    assert (await gql(client, RESTORE))["restoreDataset"] == {"deleted": False}
    job = await gql(
        client,
        'mutation { deleteJob(namespace: "pipelines", name: "etl") { ... on Job { deleted } } '
        'restoreJob(namespace: "pipelines", name: "etl") { ... on Job { deleted } } }',
    )
    assert job == {"deleteJob": {"deleted": True}, "restoreJob": {"deleted": False}}
    missing = await gql(
        client,
        'mutation { deleteDataset(namespace: "warehouse", name: "zz") { ... on Problem { code } } }',
    )
    assert missing["deleteDataset"] == {"code": "dataset_not_found"}
    assert [(c[0], c[1]) for c in await changes(conn, start)] == [
        ("DATASET_DELETED", "dataset:warehouse:a"),
        ("DATASET_RESTORED", "dataset:warehouse:a"),
        ("JOB_DELETED", "job:pipelines:etl"),
        ("JOB_RESTORED", "job:pipelines:etl"),
    ]


async def test_mutations_notify_listeners(client, conn):
    await post_all(client, [run_event("w", outputs=["a"])])
    received = []

    def listen(*args):
        received.append(args[3])

    await conn.add_listener("headwater_changes", listen)
    try:
        await gql(client, DELETE)
        for _ in range(50):
            if received:
                break
            await asyncio.sleep(0.02)
    finally:
        await conn.remove_listener("headwater_changes", listen)
    assert received == [str(await last_change_id(conn))]


async def test_mutations_need_the_api_key_when_one_is_set(db, database_url):
    settings = Settings(database_url=database_url, pool_min_size=1, pool_max_size=2, api_key="s3cret")
    async with AsyncTestClient(app=create_app(settings)) as client:
        response = await client.post("/graphql", json={"query": DELETE})
        assert response.status_code == 401
        assert response.json()["code"] == "unauthorized"
        response = await client.post(
            "/graphql", json={"query": DELETE}, headers={"authorization": "Bearer s3cret"}
        )
        assert response.json()["data"] == {"deleteDataset": {}}  # authorized; the dataset does not exist
        reads = await client.post(
            "/graphql", json={"query": "{ tags { name } }"}, headers={"authorization": "Bearer s3cret"}
        )
        assert reads.json() == {"data": {"tags": []}}
