"""GET /api/v1/lineage/path (shortest paths) and GET /api/v1/lineage with several roots and filters."""

from __future__ import annotations

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
    assert same["paths"] == [[d("b")]]


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
