"""Asset heat: a PageRank over the current lineage graph in which importance flows upstream.

The graph: every live dataset and job is a node; every current lineage edge (dataset -> job for a
read, job -> dataset for a write) is an edge. A node hands its heat to the nodes it depends on, its
direct upstream, split evenly among them; so a dataset read by many jobs that feed important
datasets becomes hot, and a dataset nobody reads keeps only the baseline. With N nodes, damping
d (0.85 by default), up(u) the number of direct upstream nodes of u, and S the nodes with no
upstream (sources, whose heat has nowhere to flow and is spread over all nodes, as PageRank does
with dangling nodes)::

    h_0(v)     = 1 / N
    h_{k+1}(v) = (1 - d) / N + d * ( sum over edges v -> u of h_k(u) / up(u)
                                 + sum over s in S of h_k(s) / N )

iterated until sum_v |h_{k+1}(v) - h_k(v)| < tolerance (1e-6) or the iteration cap (30). The heat
stored is ``N * h(v)``: the scores average 1.0 over the graph, so 1.0 is an ordinary node, 10 a node
ten times as important as the average, and the lowest possible score is (1 - d) plus the spread
share. Only the order and the ratios are meaningful; they change as the graph does.

Each iteration is one join of the edges with the scores (broadcast while the scores are small)
and one aggregation, checkpointed so the plan does not grow with the iterations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import DataFrame

# Broadcast the score table into the join while it has at most this many nodes.
BROADCAST_NODES = 5_000_000


@dataclass
class HeatResult:
    scores: DataFrame  # node_id, heat (N * h)
    nodes: int
    edges: int
    iterations: int
    delta: float


def graph_edges(nodes: DataFrame, edges: DataFrame) -> DataFrame:
    """Distinct (src_node_id, dst_node_id) edges between live nodes."""
    from pyspark.sql import functions as F  # noqa: N812

    live_src = nodes.select(F.col("node_id").alias("src_node_id"))
    live_dst = nodes.select(F.col("node_id").alias("dst_node_id"))
    return (
        edges.select("src_node_id", "dst_node_id")
        .distinct()
        .join(live_src, "src_node_id", "left_semi")
        .join(live_dst, "dst_node_id", "left_semi")
    )


def compute_heat(
    nodes: DataFrame,
    edges: DataFrame,
    *,
    damping: float = 0.85,
    max_iterations: int = 30,
    tolerance: float = 1e-6,
    on_iteration: Callable[[int, float], None] | None = None,
) -> HeatResult:
    """Power iteration of the formula above; nodes: node_id; edges: src_node_id, dst_node_id.

    on_iteration(iterations done, L1 change) is called after each iteration.
    """
    from pyspark.sql import functions as F  # noqa: N812

    nodes = nodes.select("node_id").distinct().localCheckpoint(eager=True)
    edges = graph_edges(nodes, edges).localCheckpoint(eager=True)
    n = nodes.count()
    edge_count = edges.count()
    if n == 0:
        return HeatResult(nodes.withColumn("heat", F.lit(1.0)), 0, 0, 0, 0.0)
    # Heat flows against the edges: from u (dst) to each of its up(u) upstream nodes (src).
    upstream = edges.groupBy("dst_node_id").agg(F.count("*").alias("up"))
    flows = (
        edges.join(upstream, "dst_node_id")
        .select(
            F.col("dst_node_id").alias("giver"),
            F.col("src_node_id").alias("node_id"),
            (F.lit(1.0) / F.col("up")).alias("share"),
        )
        .localCheckpoint(eager=True)
    )
    has_upstream = upstream.select(F.col("dst_node_id").alias("node_id"), F.lit(False).alias("source"))
    state = (
        nodes.join(has_upstream, "node_id", "left")
        .select(
            "node_id",
            F.coalesce(F.col("source"), F.lit(True)).alias("source"),
            F.lit(1.0 / n).alias("h"),
        )
        .localCheckpoint(eager=True)
    )
    spread = (state.where("source").count()) / n  # sum of h over sources at h_0 = 1/N
    delta, iterations = float("inf"), 0
    while iterations < max_iterations and delta >= tolerance:
        givers = state.select(F.col("node_id").alias("giver"), "h")
        if n <= BROADCAST_NODES:
            givers = F.broadcast(givers)
        received = (
            flows.join(givers, "giver")
            .groupBy("node_id")
            .agg(F.sum(F.col("h") * F.col("share")).alias("r"))
        )
        base = (1.0 - damping) / n + damping * spread / n
        state = (
            state.join(received, "node_id", "left")
            .select(
                "node_id",
                "source",
                (F.lit(base) + damping * F.coalesce(F.col("r"), F.lit(0.0))).alias("h"),
                F.col("h").alias("previous"),
            )
            .localCheckpoint(eager=True)
        )
        stats = state.agg(
            F.sum(F.abs(F.col("h") - F.col("previous"))).alias("delta"),
            F.sum(F.when(F.col("source"), F.col("h")).otherwise(0.0)).alias("spread"),
        ).first()
        assert stats is not None
        delta, spread = float(stats["delta"]), float(stats["spread"] or 0.0)
        state = state.drop("previous")
        iterations += 1
        if on_iteration is not None:
            on_iteration(iterations, delta)
    scores = state.select("node_id", (F.col("h") * n).alias("heat"))
    return HeatResult(scores, n, edge_count, iterations, delta)
