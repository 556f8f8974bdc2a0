"""Asset heat in the catalog answers: REST and GraphQL show it, lists and search sort by it.

Heat is written by ``headwater spark heat``; here it is set with plain UPDATEs.
"""

from __future__ import annotations

import datetime as dt
from urllib.parse import quote

import pytest

from tests.client import execute, gql, post_all
from tests.factories import T0, job_run, run_event

pytestmark = pytest.mark.db

# Dataset heat: a tie (tbl_1, tbl_5), and three datasets never scored (NULL).
DATASET_HEAT = {"tbl_0": 0.4, "tbl_1": 2.5, "tbl_2": None, "tbl_3": 5.0, "tbl_4": None, "tbl_5": 2.5}
BY_HEAT = ["tbl_3", "tbl_1", "tbl_5", "tbl_0", "tbl_2", "tbl_4", "tbl_6"]
JOB_HEAT = {"load_tbl_0": 1.5, "load_tbl_1": None, "load_tbl_2": 3.0, "load_tbl_3": 1.5}


async def get_json(client, url, **params):
    response = await client.get(url, params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def seed(client, conn):
    """Datasets tbl_0 .. tbl_6 and tbl_gone (deleted, hottest), jobs load_tbl_0 .. load_tbl_3."""
    names = [f"tbl_{i}" for i in range(7)] + ["tbl_gone"]
    await post_all(client, [run_event("w", outputs=names)])
    await post_all(client, [run_event(job, inputs=[job.removeprefix("load_")]) for job in JOB_HEAT])
    await gql(
        client, 'mutation { deleteDataset(namespace: "warehouse", name: "tbl_gone") { __typename } }'
    )
    await conn.executemany(
        "UPDATE datasets SET heat = $2 WHERE namespace = 'warehouse' AND name = $1",
        [*DATASET_HEAT.items(), ("tbl_gone", 9.0)],
    )
    await conn.executemany(
        "UPDATE jobs SET heat = $2 WHERE namespace = 'pipelines' AND name = $1", JOB_HEAT.items()
    )


async def all_pages(client, field, first, order, **args):
    """Every name of a GraphQL list, page by page; returns (names, page count)."""
    extra = "".join(f", {k}: {v}" for k, v in args.items())
    query = f"""query($after: String) {{
      {field}(first: {first}, after: $after, orderBy: {order}{extra}) {{
        totalCount nodes {{ name heat }} pageInfo {{ hasNextPage endCursor }} }} }}"""
    names, after, pages = [], None, 0
    while True:
        page = (await gql(client, query, after=after))[field]
        names += [n["name"] for n in page["nodes"]]
        pages += 1
        if not page["pageInfo"]["hasNextPage"]:
            return names, pages
        after = page["pageInfo"]["endCursor"]


# -- REST ----------------------------------------------------------------------------------------


async def test_rest_datasets_and_jobs_carry_heat(client, conn):
    await seed(client, conn)
    base = "/api/v1/namespaces/"
    hot = await get_json(client, base + "warehouse/datasets/tbl_3")
    assert hot["heat"] == 5.0
    cold = await get_json(client, base + "warehouse/datasets/tbl_2")
    assert cold["heat"] is None
    listed = await get_json(client, base + "warehouse/datasets")
    assert {d["name"]: d["heat"] for d in listed["datasets"]} == {
        **DATASET_HEAT,
        "tbl_6": None,
    }
    job = await get_json(client, base + "pipelines/jobs/" + quote("load_tbl_2", safe=""))
    assert job["heat"] == 3.0
    jobs = await get_json(client, base + "pipelines/jobs")
    assert {j["name"]: j["heat"] for j in jobs["jobs"]} == {**JOB_HEAT, "w": None}


async def test_rest_search_sorts_by_heat(client, conn):
    await seed(client, conn)
    body = await get_json(client, "/api/v1/search", q="tbl", sort="HEAT", limit=100)
    assert body["totalCount"] == 11  # tbl_gone is deleted
    assert [(r["name"], r["heat"]) for r in body["results"][:6]] == [
        ("tbl_3", 5.0),
        ("load_tbl_2", 3.0),
        ("tbl_1", 2.5),
        ("tbl_5", 2.5),
        ("load_tbl_0", 1.5),
        ("load_tbl_3", 1.5),
    ]
    assert [r["heat"] for r in body["results"][6:]] == [0.4, None, None, None, None]
    lower = await get_json(client, "/api/v1/search", q="tbl", sort="heat", limit=3)
    assert [r["name"] for r in lower["results"]] == ["tbl_3", "load_tbl_2", "tbl_1"]
    by_name = await get_json(client, "/api/v1/search", q="tbl", sort="NAME", limit=1)
    assert [r["name"] for r in by_name["results"]] == ["load_tbl_0"]
    bad = await client.get("/api/v1/search", params={"q": "tbl", "sort": "HOTNESS"})
    assert bad.status_code == 400


# -- GraphQL -------------------------------------------------------------------------------------


async def test_graphql_heat_fields(client, conn):
    await seed(client, conn)
    data = await gql(
        client,
        """{ hot: dataset(namespace: "warehouse", name: "tbl_3") { heat }
             cold: dataset(namespace: "warehouse", name: "tbl_6") { heat }
             job(namespace: "pipelines", name: "load_tbl_2") {
               heat currentVersion { inputs { name heat } } }
             search(query: "tbl_3") { hits { name heat } } }""",
    )
    assert data["hot"] == {"heat": 5.0}
    assert data["cold"] == {"heat": None}
    assert data["job"]["heat"] == 3.0
    assert data["job"]["currentVersion"]["inputs"] == [{"name": "tbl_2", "heat": None}]
    assert data["search"]["hits"] == [
        {"name": "tbl_3", "heat": 5.0},
        {"name": "load_tbl_3", "heat": 1.5},
    ]


@pytest.mark.parametrize("first", [1, 2, 3, 7])
async def test_datasets_by_heat_across_pages(client, conn, first):
    await seed(client, conn)
    names, pages = await all_pages(client, "datasets", first, "HEAT")
    assert names == BY_HEAT  # ties by name, never-scored last
    assert pages == -(-len(BY_HEAT) // first)
    with_deleted, _ = await all_pages(client, "datasets", first, "HEAT", includeDeleted="true")
    assert with_deleted == ["tbl_gone", *BY_HEAT]
    default, _ = await all_pages(client, "datasets", first, "NAME")
    assert default == sorted(BY_HEAT)


async def test_jobs_and_namespace_lists_by_heat(client, conn):
    await seed(client, conn)
    names, _ = await all_pages(client, "jobs", 1, "HEAT")
    assert names == ["load_tbl_2", "load_tbl_0", "load_tbl_3", "load_tbl_1", "w"]
    filtered, _ = await all_pages(client, "jobs", 2, "HEAT", nameContains='"TBL"')
    assert filtered == ["load_tbl_2", "load_tbl_0", "load_tbl_3", "load_tbl_1"]
    data = await gql(
        client,
        """{ namespace(name: "warehouse") {
              datasets(first: 3, orderBy: HEAT) { nodes { name } } } }""",
    )
    assert [n["name"] for n in data["namespace"]["datasets"]["nodes"]] == BY_HEAT[:3]


async def test_lists_by_update_time_across_pages(client, conn):
    await seed(client, conn)
    # tbl_4 newest; tbl_0 and tbl_6 tie, as do the three oldest: ties go by name.
    times = {"tbl_4": 50, "tbl_0": 40, "tbl_6": 40, "tbl_1": 30, "tbl_2": 0, "tbl_3": 0, "tbl_5": 0}
    await conn.executemany(
        "UPDATE datasets SET updated_at = $2 WHERE namespace = 'warehouse' AND name = $1",
        [(n, T0 + dt.timedelta(days=d)) for n, d in times.items()],
    )
    expected = ["tbl_4", "tbl_0", "tbl_6", "tbl_1", "tbl_2", "tbl_3", "tbl_5"]
    for first in (1, 2, 3):
        assert (await all_pages(client, "datasets", first, "UPDATED_AT"))[0] == expected


async def test_a_cursor_continues_only_its_own_order(client, conn):
    await seed(client, conn)
    page = await gql(client, "{ datasets(first: 2, orderBy: HEAT) { pageInfo { endCursor } } }")
    cursor = page["datasets"]["pageInfo"]["endCursor"]
    for order in ("NAME", "UPDATED_AT"):
        body = await execute(
            client,
            f"query($after: String) {{ datasets(after: $after, orderBy: {order}) {{ totalCount }} }}",
            after=cursor,
        )
        assert body["errors"][0]["extensions"]["code"] == "invalid_cursor"
    bad = await execute(client, "{ datasets(orderBy: HOT) { totalCount } }")
    assert bad["errors"][0]["extensions"]["code"] == "graphql_validation_failed"


async def test_graphql_search_order(client, conn):
    await seed(client, conn)
    query = """query($order: CatalogOrder) {
      search(query: "tbl", first: 4, orderBy: $order) { totalCount hits { name type heat } } }"""
    hot = (await gql(client, query, order="HEAT"))["search"]
    assert hot["totalCount"] == 11
    assert [(h["name"], h["type"]) for h in hot["hits"]] == [
        ("tbl_3", "DATASET"),
        ("load_tbl_2", "JOB"),
        ("tbl_1", "DATASET"),
        ("tbl_5", "DATASET"),
    ]
    relevance = (await gql(client, query, order=None))["search"]["hits"]
    assert [h["name"] for h in relevance] == ["tbl_0", "tbl_1", "tbl_2", "tbl_3"]  # prefixes first
    by_name = (await gql(client, query, order="NAME"))["search"]["hits"]
    assert [h["name"] for h in by_name] == ["load_tbl_0", "load_tbl_1", "load_tbl_2", "load_tbl_3"]


async def test_lineage_nodes_carry_heat(client, conn):
    for event in job_run("load", inputs=["raw"], outputs=["clean"]):
        assert (await client.post("/api/v1/lineage", json=event)).status_code == 201
    await conn.execute("UPDATE datasets SET heat = 2.5 WHERE name = 'raw'")
    await conn.execute("UPDATE jobs SET heat = 0.75 WHERE name = 'load'")
    response = await client.get("/api/v1/lineage", params={"nodeId": "dataset:warehouse:clean"})
    heat = {node["id"]: node["data"]["heat"] for node in response.json()["graph"]}
    assert heat == {
        "dataset:warehouse:raw": 2.5,
        "job:pipelines:load": 0.75,
        "dataset:warehouse:clean": None,
    }
