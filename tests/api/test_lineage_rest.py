"""GET /api/v1/lineage: directed walks, depth counted in jobs, current edges only, cycles, diamonds."""

from __future__ import annotations

import pytest

from tests.client import post_all
from tests.factories import dataset, job_run, run_event

pytestmark = pytest.mark.db


async def lineage(client, node_id, **params):
    response = await client.get("/api/v1/lineage", params={"nodeId": node_id, **params})
    assert response.status_code == 200, response.text
    return response.json()


def ids(graph):
    return sorted(node["id"] for node in graph["graph"])


def d(name):
    return f"dataset:warehouse:{name}"


def j(name):
    return f"job:pipelines:{name}"


async def chain(client):
    """raw -> ingest -> staged -> transform -> mart -> report -> dashboard, plus a side reader of staged."""
    await post_all(client, job_run("ingest", inputs=["raw"], outputs=["staged"]))
    await post_all(client, job_run("transform", inputs=["staged"], outputs=["mart"]))
    await post_all(client, job_run("report", inputs=["mart"], outputs=["dashboard"]))
    await post_all(client, job_run("side", inputs=["staged"], outputs=["side_out"]))


async def test_depth_counts_jobs_from_a_dataset(client):
    await chain(client)
    assert ids(await lineage(client, d("mart"), depth=0, direction="UPSTREAM")) == [d("mart")]
    assert ids(await lineage(client, d("mart"), depth=1, direction="UPSTREAM")) == sorted(
        [d("mart"), j("transform"), d("staged")]
    )
    assert ids(await lineage(client, d("mart"), depth=2, direction="UPSTREAM")) == sorted(
        [d("mart"), j("transform"), d("staged"), j("ingest"), d("raw")]
    )


async def test_depth_counts_jobs_from_a_job(client):
    await chain(client)
    assert ids(await lineage(client, j("ingest"), depth=0, direction="DOWNSTREAM")) == sorted(
        [j("ingest"), d("staged")]
    )
    assert ids(await lineage(client, j("ingest"), depth=1, direction="DOWNSTREAM")) == sorted(
        [j("ingest"), d("staged"), j("transform"), d("mart"), j("side"), d("side_out")]
    )


async def test_walk_is_directed_and_excludes_jobs_sharing_an_input(client):
    await chain(client)
    upstream = ids(await lineage(client, d("mart"), depth=20, direction="UPSTREAM"))
    assert upstream == sorted([d("mart"), j("transform"), d("staged"), j("ingest"), d("raw")])
    assert j("side") not in upstream  # reads staged too, but does not feed mart
    downstream = ids(await lineage(client, d("mart"), depth=20, direction="DOWNSTREAM"))
    assert downstream == sorted([d("mart"), j("report"), d("dashboard")])
    both = ids(await lineage(client, d("mart"), depth=20))
    assert both == sorted(set(upstream) | set(downstream))


async def test_marquez_shape_with_edges_among_returned_nodes(client):
    await chain(client)
    graph = await lineage(client, d("mart"), depth=1, direction="UPSTREAM")
    by_id = {node["id"]: node for node in graph["graph"]}
    assert by_id[j("transform")]["type"] == "JOB"
    assert by_id[j("transform")]["inEdges"] == [{"origin": d("staged"), "destination": j("transform")}]
    assert by_id[j("transform")]["outEdges"] == [{"origin": j("transform"), "destination": d("mart")}]
    assert by_id[d("staged")]["inEdges"] == []  # ingest is beyond depth 1
    assert by_id[d("mart")]["data"]["id"] == {"namespace": "warehouse", "name": "mart"}
    assert graph["truncated"] is False


async def test_diamond(client):
    await post_all(client, job_run("split_a", inputs=["src"], outputs=["a"]))
    await post_all(client, job_run("split_b", inputs=["src"], outputs=["b"]))
    await post_all(client, job_run("join", inputs=["a", "b"], outputs=["out"]))
    assert ids(await lineage(client, d("out"), direction="UPSTREAM")) == sorted(
        [d("out"), j("join"), d("a"), d("b"), j("split_a"), j("split_b"), d("src")]
    )
    assert ids(await lineage(client, d("src"), direction="DOWNSTREAM", depth=1)) == sorted(
        [d("src"), j("split_a"), j("split_b"), d("a"), d("b")]
    )


async def test_cycle_terminates(client):
    await post_all(
        client, job_run("dedupe", inputs=["events"], outputs=["events"])
    )  # reads and writes one table
    await post_all(client, job_run("loop_a", inputs=["x"], outputs=["y"]))
    await post_all(client, job_run("loop_b", inputs=["y"], outputs=["x"]))
    assert ids(await lineage(client, d("events"))) == sorted([d("events"), j("dedupe")])
    assert ids(await lineage(client, d("x"), direction="DOWNSTREAM", depth=50)) == sorted(
        [d("x"), j("loop_a"), d("y"), j("loop_b")]
    )


async def test_input_dropped_by_newer_version_leaves_current_graph(client):
    await post_all(
        client, job_run("report", inputs=["orders", "legacy"], outputs=["kpis"], start=0, end=1)
    )
    assert ids(await lineage(client, d("kpis"), direction="UPSTREAM")) == sorted(
        [d("kpis"), j("report"), d("orders"), d("legacy")]
    )
    await post_all(client, job_run("report", inputs=["orders"], outputs=["kpis"], start=2, end=3))
    assert ids(await lineage(client, d("kpis"), direction="UPSTREAM")) == sorted(
        [d("kpis"), j("report"), d("orders")]
    )
    assert ids(await lineage(client, d("legacy"), direction="DOWNSTREAM")) == [d("legacy")]


async def test_stale_complete_arriving_late_does_not_restore_dropped_input(client):
    old = job_run("report", inputs=["orders", "legacy"], outputs=["kpis"], start=0, end=1)
    new = job_run("report", inputs=["orders"], outputs=["kpis"], start=2, end=3)
    await post_all(client, new + old)  # the old run's events arrive after the new run's
    assert ids(await lineage(client, d("kpis"), direction="UPSTREAM")) == sorted(
        [d("kpis"), j("report"), d("orders")]
    )


async def test_namespaces_with_scheme_and_port_parse(client):
    pg = dataset("shop.public.orders", namespace="postgres://db.internal:5432")
    await post_all(
        client, [run_event("copy", namespace="airflow://prod:8080", inputs=[pg], outputs=["copy"])]
    )
    graph = await lineage(
        client, "dataset:postgres://db.internal:5432:shop.public.orders", direction="DOWNSTREAM"
    )
    assert ids(graph) == sorted(
        [
            "dataset:postgres://db.internal:5432:shop.public.orders",
            "job:airflow://prod:8080:copy",
            d("copy"),
        ]
    )
    job_graph = await lineage(client, "job:airflow://prod:8080:copy", depth=0, direction="UPSTREAM")
    assert ids(job_graph) == sorted(
        ["job:airflow://prod:8080:copy", "dataset:postgres://db.internal:5432:shop.public.orders"]
    )


async def test_alias_resolves_to_the_canonical_node(client):
    output = dataset(
        "/lake/orders", namespace="file", symlinks=[("hive://metastore", "sales.orders", "TABLE")]
    )
    await post_all(client, [run_event("load", outputs=[output])])
    graph = await lineage(client, "dataset:file:/lake/orders", direction="UPSTREAM")
    assert ids(graph) == sorted(["dataset:hive://metastore:sales.orders", j("load")])


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({"nodeId": "dataset:warehouse:nope"}, 404, "node_not_found"),
        ({"nodeId": "table:warehouse:x"}, 400, "invalid_node_id"),
        ({"nodeId": "dataset:onlyname"}, 400, "invalid_node_id"),
        ({"nodeId": "dataset:warehouse:a", "depth": 1000}, 400, "lineage_depth_too_large"),
        ({"nodeId": "dataset:warehouse:a", "depth": -1}, 400, "invalid_request"),
        ({"nodeId": "dataset:warehouse:a", "direction": "SIDEWAYS"}, 400, "invalid_request"),
        ({"nodeId": "dataset:warehouse:a", "asOf": "last week"}, 400, "invalid_request"),
        ({}, 400, "invalid_request"),
    ],
)
async def test_bad_lineage_requests(client, params, status, code):
    await post_all(client, job_run("load", inputs=["a"], outputs=["b"]))
    response = await client.get("/api/v1/lineage", params=params)
    assert (response.status_code, response.json()["code"]) == (status, code), response.text
    assert response.json()["detail"]


async def test_multi_engine_pipeline(client):
    """Airflow ingests, Spark stages and builds marts, Trino reports; some events twice or out of order."""
    pg_orders = dataset("shop.public.orders", namespace="postgres://pg:5432")
    s3_raw = dataset(
        "/raw/orders", namespace="s3://lake", symlinks=[("hive://metastore", "raw.orders", "TABLE")]
    )
    s3_stg = dataset(
        "/stg/orders", namespace="s3://lake", symlinks=[("hive://metastore", "stg.orders", "TABLE")]
    )
    s3_mart = dataset(
        "/mart/revenue", namespace="s3://lake", symlinks=[("hive://metastore", "mart.revenue", "TABLE")]
    )
    customers = dataset(
        "/raw/customers",
        namespace="s3://lake",
        symlinks=[("hive://metastore", "raw.customers", "TABLE")],
    )
    airflow = job_run("extract_orders", namespace="airflow", inputs=[pg_orders], outputs=[s3_raw])
    staging = job_run(
        "spark_app.stage_orders", namespace="spark", inputs=[s3_raw], outputs=[s3_stg], start=2, end=3
    )
    marts = job_run(
        "spark_app.build_revenue",
        namespace="spark",
        inputs=[s3_stg, customers],
        outputs=[s3_mart],
        start=4,
        end=5,
    )
    marts_v2 = job_run(
        "spark_app.build_revenue",
        namespace="spark",
        inputs=[s3_stg],
        outputs=[s3_mart],
        start=10,
        end=11,
    )
    report = job_run(
        "20260101_q1",
        namespace="trino://trino:8080",
        inputs=[dataset("mart.revenue", namespace="hive://metastore")],
        outputs=[dataset("hive.reports.daily", namespace="trino://trino:8080")],
        start=6,
        end=7,
    )
    await post_all(
        client, [*reversed(airflow), *staging, staging[0], *marts, *report, *report, *marts_v2]
    )
    mart = "dataset:hive://metastore:mart.revenue"
    up = ids(await lineage(client, mart, direction="UPSTREAM"))
    assert up == sorted(
        [
            mart,
            "job:spark:spark_app.build_revenue",
            "dataset:hive://metastore:stg.orders",
            "job:spark:spark_app.stage_orders",
            "dataset:hive://metastore:raw.orders",
            "job:airflow:extract_orders",
            "dataset:postgres://pg:5432:shop.public.orders",
        ]
    )
    up1 = ids(await lineage(client, mart, direction="UPSTREAM", depth=1))
    assert up1 == sorted(
        [mart, "job:spark:spark_app.build_revenue", "dataset:hive://metastore:stg.orders"]
    )
    down = ids(
        await lineage(client, "dataset:postgres://pg:5432:shop.public.orders", direction="DOWNSTREAM")
    )
    assert down == sorted(
        [
            "dataset:postgres://pg:5432:shop.public.orders",
            "job:airflow:extract_orders",
            "dataset:hive://metastore:raw.orders",
            "job:spark:spark_app.stage_orders",
            "dataset:hive://metastore:stg.orders",
            "job:spark:spark_app.build_revenue",
            mart,
            "job:trino://trino:8080:20260101_q1",
            "dataset:trino://trino:8080:hive.reports.daily",
        ]
    )
    # customers was dropped by the newer version of build_revenue.
    assert ids(
        await lineage(client, "dataset:hive://metastore:raw.customers", direction="DOWNSTREAM")
    ) == ["dataset:hive://metastore:raw.customers"]
