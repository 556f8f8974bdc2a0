"""The lineage engine on real events: cycles, diamonds, depth, direction, caps, filters, point in time."""

from __future__ import annotations

import datetime as dt

import pytest

from headwater.lineage.documents import DocumentCache
from headwater.lineage.graph import fetch_lineage
from tests.client import post_all
from tests.factories import T0, dataset, job_run, run_event

pytestmark = pytest.mark.db


def d(name, namespace="warehouse"):
    return f"dataset:{namespace}:{name}"


def j(name, namespace="pipelines"):
    return f"job:{namespace}:{name}"


def shape(graph):
    """A graph as (node ids, edges, truncated), every list sorted."""
    return sorted(n.id for n in graph.nodes), sorted(graph.edges), graph.truncated


def minutes(m):
    return T0 + dt.timedelta(minutes=m)


async def test_cycle_ends_and_keeps_every_edge(client, conn):
    await post_all(client, job_run("forward", inputs=["a"], outputs=["b"]))
    await post_all(client, job_run("back", inputs=["b"], outputs=["a"]))
    graph = await fetch_lineage(conn, [d("a")], depth=50, direction="BOTH")
    assert shape(graph) == (
        sorted([d("a"), d("b"), j("forward"), j("back")]),
        sorted(
            [(d("a"), j("forward")), (j("forward"), d("b")), (d("b"), j("back")), (j("back"), d("a"))]
        ),
        False,
    )


async def test_self_loop_job(client, conn):
    await post_all(client, job_run("dedupe", inputs=["events"], outputs=["events"]))
    graph = await fetch_lineage(conn, [d("events")], depth=5, direction="DOWNSTREAM")
    assert shape(graph) == (
        sorted([d("events"), j("dedupe")]),
        sorted([(d("events"), j("dedupe")), (j("dedupe"), d("events"))]),
        False,
    )


async def test_diamond_upstream_holds_both_branches_once(client, conn):
    await post_all(client, job_run("split_a", inputs=["src"], outputs=["a"]))
    await post_all(client, job_run("split_b", inputs=["src"], outputs=["b"]))
    await post_all(client, job_run("join", inputs=["a", "b"], outputs=["out"]))
    graph = await fetch_lineage(conn, [d("out")], depth=2, direction="UPSTREAM")
    assert shape(graph) == (
        sorted([d("out"), j("join"), d("a"), d("b"), j("split_a"), j("split_b"), d("src")]),
        sorted(
            [
                (d("src"), j("split_a")),
                (d("src"), j("split_b")),
                (j("split_a"), d("a")),
                (j("split_b"), d("b")),
                (d("a"), j("join")),
                (d("b"), j("join")),
                (j("join"), d("out")),
            ]
        ),
        False,
    )
    assert [(n.id, n.hops) for n in graph.nodes] == [
        (d("out"), 0),
        (j("join"), 1),
        (d("a"), 2),
        (d("b"), 2),
        (j("split_a"), 3),
        (j("split_b"), 3),
        (d("src"), 4),
    ]


async def chain(client):
    """raw -> ingest -> staged -> transform -> mart -> report -> dashboard."""
    await post_all(client, job_run("ingest", inputs=["raw"], outputs=["staged"]))
    await post_all(client, job_run("transform", inputs=["staged"], outputs=["mart"]))
    await post_all(client, job_run("report", inputs=["mart"], outputs=["dashboard"]))


async def test_depth_counts_jobs_from_datasets_and_jobs(client, conn):
    await chain(client)
    upstream = [
        sorted(
            n.id for n in (await fetch_lineage(conn, [d("mart")], depth=k, direction="UPSTREAM")).nodes
        )
        for k in (0, 1, 2)
    ]
    assert upstream == [
        [d("mart")],
        sorted([d("mart"), j("transform"), d("staged")]),
        sorted([d("mart"), j("transform"), d("staged"), j("ingest"), d("raw")]),
    ]
    downstream = [
        sorted(
            n.id
            for n in (await fetch_lineage(conn, [j("ingest")], depth=k, direction="DOWNSTREAM")).nodes
        )
        for k in (0, 1)
    ]
    assert downstream == [
        sorted([j("ingest"), d("staged")]),
        sorted([j("ingest"), d("staged"), j("transform"), d("mart")]),
    ]


async def test_both_is_the_union_of_the_two_directed_walks(client, conn):
    await chain(client)
    await post_all(client, job_run("side", inputs=["staged"], outputs=["side_out"]))
    graph = await fetch_lineage(conn, [d("mart")], depth=20, direction="BOTH")
    assert shape(graph) == (
        sorted(
            [d("raw"), j("ingest"), d("staged"), j("transform"), d("mart"), j("report"), d("dashboard")]
        ),
        sorted(
            [
                (d("raw"), j("ingest")),
                (j("ingest"), d("staged")),
                (d("staged"), j("transform")),
                (j("transform"), d("mart")),
                (d("mart"), j("report")),
                (j("report"), d("dashboard")),
            ]
        ),
        False,
    )


async def test_several_roots_give_the_union_with_each_roots_depth(client, conn):
    await chain(client)
    await post_all(client, job_run("other", inputs=["elsewhere"], outputs=["there"]))
    graph = await fetch_lineage(
        conn, [d("dashboard"), j("ingest"), d("there")], depth=0, direction="UPSTREAM"
    )
    # depth 0: a dataset root alone, a job root with its inputs.
    assert shape(graph) == (
        sorted([d("dashboard"), j("ingest"), d("raw"), d("there")]),
        [(d("raw"), j("ingest"))],
        False,
    )
    graph = await fetch_lineage(conn, [d("dashboard"), d("there")], depth=1, direction="UPSTREAM")
    assert sorted(n.id for n in graph.nodes) == sorted(
        [d("dashboard"), j("report"), d("mart"), d("there"), j("other"), d("elsewhere")]
    )


async def test_node_cap_keeps_the_nearest_nodes_and_says_truncated(client, conn):
    for i in range(5):
        await post_all(client, job_run(f"reader_{i}", inputs=["hub"], outputs=[f"out_{i}"]))
    graph = await fetch_lineage(conn, [d("hub")], depth=5, direction="DOWNSTREAM", max_nodes=4)
    # The root, then the first readers by node id (created first); their outputs are beyond the cap.
    assert shape(graph) == (
        sorted([d("hub"), j("reader_0"), j("reader_1"), j("reader_2")]),
        sorted([(d("hub"), j("reader_0")), (d("hub"), j("reader_1")), (d("hub"), j("reader_2"))]),
        True,
    )
    whole = await fetch_lineage(conn, [d("hub")], depth=5, direction="DOWNSTREAM", max_nodes=11)
    assert (len(whole.nodes), whole.truncated) == (11, False)
    both = await fetch_lineage(conn, [d("hub")], depth=5, direction="BOTH", max_nodes=6)
    assert (len(both.nodes), both.truncated) == (6, True)


async def test_namespace_filter_keeps_the_walk_inside_the_namespaces(client, conn):
    pg = dataset("shop.orders", namespace="postgres://db:5432")
    lake = dataset("orders", namespace="s3://lake")
    await post_all(client, job_run("extract", namespace="airflow", inputs=[pg], outputs=[lake]))
    await post_all(
        client,
        job_run("model", namespace="dbt", inputs=[lake], outputs=[dataset("m", namespace="s3://lake")]),
    )
    graph = await fetch_lineage(
        conn, [d("orders", "s3://lake")], depth=5, direction="BOTH", namespaces=["s3://lake", "dbt"]
    )
    assert shape(graph) == (
        sorted([d("orders", "s3://lake"), j("model", "dbt"), d("m", "s3://lake")]),
        sorted(
            [(d("orders", "s3://lake"), j("model", "dbt")), (j("model", "dbt"), d("m", "s3://lake"))]
        ),
        False,
    )


async def test_node_type_filter_joins_through_the_dropped_nodes(client, conn):
    await chain(client)
    datasets = await fetch_lineage(conn, [d("mart")], depth=5, direction="BOTH", node_type="DATASET")
    assert shape(datasets) == (
        sorted([d("raw"), d("staged"), d("mart"), d("dashboard")]),
        sorted([(d("raw"), d("staged")), (d("staged"), d("mart")), (d("mart"), d("dashboard"))]),
        False,
    )
    jobs = await fetch_lineage(conn, [d("mart")], depth=5, direction="BOTH", node_type="JOB")
    assert shape(jobs) == (
        sorted([j("ingest"), j("transform"), j("report")]),
        sorted([(j("ingest"), j("transform")), (j("transform"), j("report"))]),
        False,
    )


async def test_soft_deleted_nodes_are_not_entered(client, conn):
    await chain(client)
    await conn.execute("UPDATE jobs SET deleted_at = $1 WHERE name = 'transform'", minutes(30))
    graph = await fetch_lineage(conn, [d("staged")], depth=5, direction="BOTH")
    assert shape(graph) == (
        sorted([d("raw"), j("ingest"), d("staged")]),
        sorted([(d("raw"), j("ingest")), (j("ingest"), d("staged"))]),
        False,
    )
    # The graph as it was before the deletion still has it; a deleted root is still answered.
    before = await fetch_lineage(conn, [d("staged")], depth=1, direction="DOWNSTREAM", as_of=minutes(20))
    assert sorted(n.id for n in before.nodes) == sorted([d("staged"), j("transform"), d("mart")])
    root = await fetch_lineage(conn, [j("transform")], depth=0, direction="DOWNSTREAM")
    assert sorted(n.id for n in root.nodes) == sorted([j("transform"), d("mart")])


async def test_as_of_before_and_after_an_input_was_dropped(client, conn):
    """report reads orders and legacy (run 1, minutes 0-1); run 2 (2-3) stops reading legacy."""
    await post_all(
        client, job_run("report", inputs=["orders", "legacy"], outputs=["kpis"], start=0, end=1)
    )
    await post_all(client, job_run("report", inputs=["orders"], outputs=["kpis"], start=2, end=3))

    async def upstream(as_of):
        return shape(await fetch_lineage(conn, [d("kpis")], depth=1, direction="UPSTREAM", as_of=as_of))

    with_legacy = (
        sorted([d("kpis"), j("report"), d("orders"), d("legacy")]),
        sorted([(d("orders"), j("report")), (d("legacy"), j("report")), (j("report"), d("kpis"))]),
        False,
    )
    without_legacy = (
        sorted([d("kpis"), j("report"), d("orders")]),
        sorted([(d("orders"), j("report")), (j("report"), d("kpis"))]),
        False,
    )
    assert await upstream(minutes(0.5)) == ([d("kpis")], [], False)  # kpis is first written at minute 1
    assert await upstream(minutes(2.5)) == with_legacy
    assert await upstream(minutes(3)) == without_legacy  # closed at the COMPLETE's eventTime
    assert await upstream(minutes(60)) == without_legacy
    assert await upstream(None) == without_legacy
    legacy_then = await fetch_lineage(
        conn, [d("legacy")], depth=1, direction="DOWNSTREAM", as_of=minutes(2)
    )
    assert sorted(n.id for n in legacy_then.nodes) == sorted([d("legacy"), j("report"), d("kpis")])


async def test_as_of_excludes_edges_added_later(client, conn):
    await post_all(client, job_run("load", inputs=["a"], outputs=["b"], start=0, end=1))
    await post_all(client, job_run("enrich", inputs=["b"], outputs=["c"], start=10, end=11))
    graph = await fetch_lineage(conn, [d("b")], depth=5, direction="DOWNSTREAM", as_of=minutes(5))
    assert shape(graph) == ([d("b")], [], False)


async def test_documents_come_from_the_cache_only_while_unchanged(client, conn):
    await post_all(client, job_run("load", inputs=["a"], outputs=["b"]))
    cache = DocumentCache()
    first = await fetch_lineage(conn, [d("b")], depth=1, direction="UPSTREAM", cache=cache)
    assert len(cache) == 3
    assert first.nodes[0].data["description"] is None
    described = dataset(
        "b",
        documentation={
            "_producer": "https://example.com",
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/x.json",
            "description": "Loaded hourly.",
        },
    )
    await post_all(client, [run_event("load", outputs=[described], time=5)])
    again = await fetch_lineage(conn, [d("b")], depth=1, direction="UPSTREAM", cache=cache)
    by_id = {n.id: n.data for n in again.nodes}
    assert by_id[d("b")]["description"] == "Loaded hourly."
    assert by_id[d("b")]["facets"]["documentation"]["description"] == "Loaded hourly."
    uncached = await fetch_lineage(conn, [d("b")], depth=1, direction="UPSTREAM")
    assert [(n.id, n.data) for n in uncached.nodes] == [(n.id, n.data) for n in again.nodes]


async def test_a_jobs_document_follows_its_latest_run(client, conn):
    """A new run, or its new state, does not rewrite the job's row: the job's stamp covers its latest
    run's row too, so a cached document never shows a run that is no longer the latest, or its old
    state."""
    first, second = "01934f5e-0000-7000-8000-0000000000a1", "01934f5e-0000-7000-8000-0000000000a2"
    await post_all(client, job_run("load", inputs=["a"], outputs=["b"], run_id=first))
    cache = DocumentCache()

    async def latest_run() -> tuple[str, str]:
        graph = await fetch_lineage(conn, [j("load")], depth=1, direction="DOWNSTREAM", cache=cache)
        cached = next(n.data for n in graph.nodes if n.id == j("load"))
        fresh = await fetch_lineage(conn, [j("load")], depth=1, direction="DOWNSTREAM")
        assert cached == next(n.data for n in fresh.nodes if n.id == j("load"))
        return cached["latestRun"]["id"], cached["latestRun"]["state"]

    assert await latest_run() == (first, "COMPLETED")
    await post_all(
        client, [run_event("load", "START", run_id=second, time=10, inputs=["a"], outputs=["b"])]
    )
    assert await latest_run() == (second, "RUNNING")
    await post_all(client, [run_event("load", "FAIL", run_id=second, time=11)])
    assert await latest_run() == (second, "FAILED")
