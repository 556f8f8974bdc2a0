"""GET /api/v1/lineage/path (shortest paths) and GET /api/v1/lineage with several roots and filters."""

from __future__ import annotations

import dataclasses

import pytest

from tests.client import post_all
from tests.factories import at, job_run

pytestmark = pytest.mark.db


async def get_json(client, path, **params):
    response = await client.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def d(name):
    return f"dataset:warehouse:{name}"


def j(name):
    return f"job:pipelines:{name}"


def edges(graph):
    return sorted((e["origin"], e["destination"]) for n in graph for e in n["outEdges"])


async def diamond_with_a_long_way_round(client):
    """src -> split_a -> a -> join -> out, src -> split_b -> b -> join, and src -> slow -> s1 -> slow2 -> a."""
    await post_all(client, job_run("split_a", inputs=["src"], outputs=["a"]))
    await post_all(client, job_run("split_b", inputs=["src"], outputs=["b"]))
    await post_all(client, job_run("join", inputs=["a", "b"], outputs=["out"]))
    await post_all(client, job_run("slow", inputs=["src"], outputs=["s1"]))
    await post_all(client, job_run("slow2", inputs=["s1"], outputs=["a"]))


async def test_all_shortest_paths_and_their_graph(client):
    await diamond_with_a_long_way_round(client)
    answer = await get_json(client, "/api/v1/lineage/path", **{"from": d("src"), "to": d("out")})
    assert answer["paths"] == [
        [d("src"), j("split_a"), d("a"), j("join"), d("out")],
        [d("src"), j("split_b"), d("b"), j("join"), d("out")],
    ]
    assert [n["id"] for n in answer["graph"]] == [
        d("src"),
        j("split_a"),
        j("split_b"),
        d("a"),
        d("b"),
        j("join"),
        d("out"),
    ]
    assert edges(answer["graph"]) == sorted(
        [
            (d("src"), j("split_a")),
            (d("src"), j("split_b")),
            (j("split_a"), d("a")),
            (j("split_b"), d("b")),
            (d("a"), j("join")),
            (d("b"), j("join")),
            (j("join"), d("out")),
        ]
    )
    assert answer["graph"][0]["data"]["name"] == "src"
    assert answer["truncated"] is False
    assert (answer["connected"], answer["depth"]) == (True, 2)


async def test_path_direction_and_depth(client):
    await diamond_with_a_long_way_round(client)
    path = "/api/v1/lineage/path"
    # UPSTREAM walks from `from` against the data flow; DOWNSTREAM finds nothing that way.
    up = await get_json(client, path, **{"from": d("a"), "to": d("src"), "direction": "UPSTREAM"})
    assert up["paths"] == [[d("a"), j("split_a"), d("src")]]
    down = await get_json(client, path, **{"from": d("a"), "to": d("src"), "direction": "DOWNSTREAM"})
    assert (down["paths"], down["graph"]) == ([], [])
    both = await get_json(client, path, **{"from": d("a"), "to": d("src")})
    assert both["paths"] == up["paths"]
    # maxDepth counts jobs: src -> out goes through two.
    short = await get_json(client, path, **{"from": d("src"), "to": d("out"), "maxDepth": 1})
    assert short["paths"] == []
    from_job = await get_json(client, path, **{"from": j("slow"), "to": d("a"), "maxDepth": 1})
    assert from_job["paths"] == [[j("slow"), d("s1"), j("slow2"), d("a")]]
    same = await get_json(client, path, **{"from": d("b"), "to": d("b")})
    assert (same["paths"], same["connected"], same["depth"]) == ([[d("b")]], True, 0)


async def test_no_path_says_whether_the_nodes_are_further_apart_or_not_connected(client):
    await diamond_with_a_long_way_round(client)
    await post_all(client, job_run("elsewhere", inputs=["island"], outputs=["islet"]))
    path = "/api/v1/lineage/path"
    # Too far for maxDepth 1: a path exists, and the answer names the maxDepth that finds it.
    short = await get_json(client, path, **{"from": d("src"), "to": d("out"), "maxDepth": 1})
    assert (short["paths"], short["connected"], short["depth"]) == ([], True, 2)
    assert [
        p[-1]
        for p in (await get_json(client, path, **{"from": d("src"), "to": d("out"), "maxDepth": 2}))[
            "paths"
        ]
    ] == [d("out")] * 2
    # From a job, the first hop out is free: slow -> a needs maxDepth 1, slow -> out 2.
    from_job = await get_json(client, path, **{"from": j("slow"), "to": d("out"), "maxDepth": 0})
    assert (from_job["paths"], from_job["connected"], from_job["depth"]) == ([], True, 2)
    # Not connected at all: the walk ran out of nodes, whatever maxDepth is asked.
    apart = await get_json(client, path, **{"from": d("src"), "to": d("islet"), "maxDepth": 1})
    assert (apart["paths"], apart["connected"], apart["depth"]) == ([], False, None)
    # Against the data flow there is no path from src to out; with BOTH there is.
    down_only = await get_json(
        client, path, **{"from": d("out"), "to": d("src"), "direction": "DOWNSTREAM"}
    )
    assert (down_only["connected"], down_only["depth"]) == (False, None)


async def test_no_path_within_the_deepest_walk_allowed_is_unknown(make_database, settings):
    """A path longer than the server's maximum depth is neither found nor ruled out."""
    from litestar.testing import AsyncTestClient

    from headwater.app import create_app

    async with make_database() as url:
        app = create_app(dataclasses.replace(settings, database_url=url, max_lineage_depth=2))
        async with AsyncTestClient(app=app) as client:
            for i in range(4):  # t0 -> t1 -> t2 -> t3 -> t4, four jobs
                await post_all(client, job_run(f"step_{i}", inputs=[f"t{i}"], outputs=[f"t{i + 1}"]))
            far = await get_json(
                client, "/api/v1/lineage/path", **{"from": d("t0"), "to": d("t4"), "maxDepth": 1}
            )
            near = await get_json(
                client, "/api/v1/lineage/path", **{"from": d("t0"), "to": d("t2"), "maxDepth": 1}
            )
    assert (far["paths"], far["connected"], far["depth"]) == ([], None, None)
    assert (near["paths"], near["connected"], near["depth"]) == ([], True, 2)


async def test_a_path_search_visits_at_most_the_lineage_node_cap(make_database, settings):
    """Past HEADWATER_MAX_LINEAGE_NODES visited a walk stops, as a lineage answer does: a search
    over a large graph as deep as allowed took seconds of PostgreSQL, and ten held every connection."""
    from litestar.testing import AsyncTestClient

    from headwater.app import create_app

    fanned = [f"f{i:02}" for i in range(30)]
    answers = {}
    async with make_database() as url:
        for cap in (20, 100):
            app = create_app(dataclasses.replace(settings, database_url=url, max_lineage_nodes=cap))
            async with AsyncTestClient(app=app) as client:
                if cap == 20:  # src -> fan -> f00..f29, f29 -> last -> target
                    await post_all(client, job_run("fan", inputs=["src"], outputs=fanned))
                    await post_all(client, job_run("last", inputs=["f29"], outputs=["target"]))
                answers[cap] = [
                    await get_json(client, "/api/v1/lineage/path", **{"from": d("src"), "to": d(to)})
                    for to in ("target", "f07")
                ]
    (capped, capped_near), (whole, whole_near) = answers[20], answers[100]
    # 32 nodes visited two levels down: the search stops there, and cannot tell.
    assert (capped["paths"], capped["connected"], capped["depth"]) == ([], None, None)
    assert (whole["connected"], whole["depth"]) == (True, 2)
    assert whole["paths"] == [[d("src"), j("fan"), d("f29"), j("last"), d("target")]]
    # A node found on the level that passes the cap is found.
    assert capped_near["paths"] == whole_near["paths"] == [[d("src"), j("fan"), d("f07")]]


async def test_path_as_of_uses_the_graph_of_the_time(client):
    await post_all(
        client, job_run("report", inputs=["orders", "legacy"], outputs=["kpis"], start=0, end=1)
    )
    await post_all(client, job_run("report", inputs=["orders"], outputs=["kpis"], start=2, end=3))
    path = "/api/v1/lineage/path"
    then = await get_json(client, path, **{"from": d("legacy"), "to": d("kpis"), "asOf": at(2)})
    assert then["paths"] == [[d("legacy"), j("report"), d("kpis")]]
    now = await get_json(client, path, **{"from": d("legacy"), "to": d("kpis")})
    assert now["paths"] == []


async def test_unknown_path_end_is_a_404(client):
    await post_all(client, job_run("load", inputs=["a"], outputs=["b"]))
    response = await client.get("/api/v1/lineage/path", params={"from": d("a"), "to": d("nope")})
    assert (response.status_code, response.json()["code"]) == (404, "node_not_found")


async def test_several_roots_in_one_call(client):
    await post_all(client, job_run("load", inputs=["a"], outputs=["b"]))
    await post_all(client, job_run("copy", inputs=["x"], outputs=["y"]))
    await post_all(client, job_run("unrelated", inputs=["p"], outputs=["q"]))
    answer = await get_json(
        client, "/api/v1/lineage", nodeId=[d("b"), j("copy")], direction="UPSTREAM", depth=1
    )
    assert [n["id"] for n in answer["graph"]] == [j("copy"), d("b"), d("x"), j("load"), d("a")]
    assert edges(answer["graph"]) == sorted(
        [(d("x"), j("copy")), (d("a"), j("load")), (j("load"), d("b"))]
    )


async def test_cap_and_filters_over_rest(client):
    for i in range(3):
        await post_all(client, job_run(f"reader_{i}", inputs=["hub"], outputs=[f"out_{i}"]))
    capped = await get_json(client, "/api/v1/lineage", nodeId=d("hub"), maxNodes=2)
    assert ([n["id"] for n in capped["graph"]], capped["truncated"]) == ([d("hub"), j("reader_0")], True)
    datasets = await get_json(client, "/api/v1/lineage", nodeId=d("hub"), nodeType="dataset")
    assert edges(datasets["graph"]) == [(d("hub"), d(f"out_{i}")) for i in range(3)]
    outside = await get_json(client, "/api/v1/lineage", nodeId=d("hub"), namespace="elsewhere")
    assert [n["id"] for n in outside["graph"]] == [d("hub")]
    bad = await client.get("/api/v1/lineage", params={"nodeId": d("hub"), "nodeType": "TABLE"})
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid_request")
