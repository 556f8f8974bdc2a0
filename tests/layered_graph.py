"""A large layered lineage graph, written straight into the tables (COPY), for load tests.

``width`` datasets per layer; every dataset after the first layer is written by its own job, which
reads ``reads`` random datasets of the layer before. 1,200 by 10 with 2 reads is 22,800 nodes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import asyncpg

from tests.benchmarks.lineage import Graph, load_graph


@dataclass(frozen=True)
class Layered:
    first: list[str]  # node ids of the first layer's datasets (sources)
    last: list[str]  # node ids of the last layer's datasets
    nodes: int


async def build_layered(
    conn: asyncpg.Connection, *, width: int = 1200, layers: int = 10, reads: int = 2, seed: int = 3
) -> Layered:
    rnd = random.Random(seed)
    g = Graph()
    prev = [g.dataset("warehouse", f"l0_{k}", 3) for k in range(width)]
    first = [g.node_id(n) for n in prev]
    for layer in range(1, layers):
        current = []
        for k in range(width):
            job = g.job("pipelines", f"build_l{layer}_{k}")
            for src in rnd.sample(prev, reads):
                g.edge(src, job)
            ds = g.dataset("warehouse", f"l{layer}_{k}", 3)
            g.edge(job, ds)
            current.append(ds)
        prev = current
    await load_graph(conn, g)
    return Layered(first, [g.node_id(n) for n in prev], len(g.datasets) + len(g.jobs))
