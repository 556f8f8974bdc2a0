"""headwater spark heat: PageRank flowing upstream, checked against the formula on a small graph."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.pipeline.heat import HeatOptions, run_heat
from tests.factories import job_run

pytestmark = [pytest.mark.spark, pytest.mark.db]

# raw -> ingest -> staged; staged is read by three jobs; only m1 is read further (by report).
RUNS = [
    ("ingest", ["raw"], ["staged"]),
    ("j1", ["staged"], ["m1"]),
    ("j2", ["staged"], ["m2"]),
    ("j3", ["staged", "lookup"], ["m3"]),
    ("report", ["m1"], ["dashboard"]),
    ("lonely", ["x"], ["y"]),
]


def reference_heat(damping: float = 0.85, iterations: int = 200) -> dict[str, float]:
    """The formula of headwater.pipeline.jobs.heat, iterated in plain Python."""
    edges = set()
    for job, inputs, outputs in RUNS:
        edges |= {(f"dataset:warehouse:{i}", f"job:pipelines:{job}") for i in inputs}
        edges |= {(f"job:pipelines:{job}", f"dataset:warehouse:{o}") for o in outputs}
    nodes = sorted({n for e in edges for n in e})
    n = len(nodes)
    up = {v: sum(1 for _, d in edges if d == v) for v in nodes}
    h = dict.fromkeys(nodes, 1 / n)
    for _ in range(iterations):
        spread = sum(h[v] for v in nodes if up[v] == 0)
        h = {
            v: (1 - damping) / n + damping * (sum(h[u] / up[u] for s, u in edges if s == v) + spread / n)
            for v in nodes
        }
    return {v: x * n for v, x in h.items()}


async def heat_of(conn: Any) -> dict[str, float]:
    rows = await conn.fetch(
        "SELECT 'dataset:' || namespace || ':' || name AS k, heat FROM datasets"
        " UNION ALL SELECT 'job:' || namespace || ':' || name, heat FROM jobs"
    )
    return {r["k"]: r["heat"] for r in rows}


async def test_heat_follows_the_formula_and_ranks_shared_inputs_first(
    spark, progress, client, database_url, conn
):
    for job, inputs, outputs in RUNS:
        for event in job_run(job, inputs=inputs, outputs=outputs):
            assert (await client.post("/api/v1/lineage", json=event)).status_code == 201
    summary = run_heat(
        spark, HeatOptions(database_url=database_url, tolerance=1e-9, max_iterations=200), progress
    )
    heat = await heat_of(conn)
    expected = reference_heat()
    assert heat.keys() == expected.keys()
    assert {k: round(v, 5) for k, v in heat.items()} == {k: round(v, 5) for k, v in expected.items()}
    datasets = sorted((k for k in heat if k.startswith("dataset:")), key=lambda k: (-heat[k], k))
    # raw feeds everything staged feeds (three jobs), so it is hotter still; m1 is read by report;
    # outputs nobody reads come last.
    assert datasets[:3] == ["dataset:warehouse:raw", "dataset:warehouse:staged", "dataset:warehouse:m1"]
    assert heat["dataset:warehouse:m2"] == heat["dataset:warehouse:y"] == min(heat.values())
    assert sum(heat.values()) == pytest.approx(len(heat))
    assert (summary.nodes, summary.edges, summary.datasets, summary.jobs) == (len(heat), 13, 9, 6)


async def test_heat_of_an_empty_graph_is_a_no_op(spark, progress, db, database_url):
    summary = run_heat(spark, HeatOptions(database_url=database_url), progress)
    assert (summary.nodes, summary.changed) == (0, 0)
