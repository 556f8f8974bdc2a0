"""`headwater spark heat`: compute asset heat (see ``jobs/heat.py``) and store it.

The Spark tasks read the live nodes and the current edges by id range, the scores are computed in
Spark, staged in ``heat_scores`` by the tasks (COPY), and moved into ``datasets.heat`` and
``jobs.heat`` in one transaction, so readers see either the previous scores or the new ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from headwater.pipeline import db
from headwater.pipeline.jobs.heat import compute_heat
from headwater.store import pipeline as pipeline_store

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.pipeline.progress import Progress


@dataclass(frozen=True)
class HeatOptions:
    database_url: str
    damping: float = 0.85
    max_iterations: int = 30
    tolerance: float = 1e-6


@dataclass
class HeatSummary:
    heat_run_id: int = 0
    nodes: int = 0
    datasets: int = 0
    jobs: int = 0
    edges: int = 0
    iterations: int = 0
    delta: float = 0.0
    changed: int = 0
    hottest: list[tuple[str, float]] = field(default_factory=list)
    seconds: float = 0.0


def run_heat(spark: SparkSession, options: HeatOptions, progress: Progress) -> HeatSummary:
    """Compute heat over the current graph and apply it; returns the figures of the summary."""
    from pyspark.sql import types as t

    started = time.monotonic()
    url = options.database_url
    summary = HeatSummary()
    with db.connect(url) as conn:
        summary.heat_run_id = conn.run(
            pipeline_store.insert_heat_run(
                conn.conn, options.damping, options.max_iterations, options.tolerance
            )
        )
    progress.set_phase("reading the current lineage graph")
    nodes = db.read_table(
        spark, url, "fetch_live_node_ids", t.StructType([t.StructField("node_id", t.LongType())])
    )
    edges = db.read_table(
        spark,
        url,
        "fetch_current_edges",
        t.StructType(
            [t.StructField("src_node_id", t.LongType()), t.StructField("dst_node_id", t.LongType())]
        ),
    )
    progress.set_phase("computing heat", total=options.max_iterations, unit="iterations")

    def iterated(done: int, delta: float) -> None:
        # The cap is the total; convergence (the L1 change falling below the tolerance) may end
        # the phase sooner.
        progress.set_count(done)
        progress.set_detail(f"(L1 change {delta:.1e}, stops below {options.tolerance:.0e})")

    result = compute_heat(
        nodes,
        edges,
        damping=options.damping,
        max_iterations=options.max_iterations,
        tolerance=options.tolerance,
        on_iteration=iterated,
    )
    summary.nodes, summary.edges = result.nodes, result.edges
    summary.iterations, summary.delta = result.iterations, result.delta
    progress.set_phase("storing heat", f"({result.iterations} iterations)")
    run_id = summary.heat_run_id
    parts = max(1, min(spark.sparkContext.defaultParallelism, result.nodes // 100_000 + 1))
    result.scores.repartition(parts).rdd.map(lambda r: (r[0], r[1])).mapPartitions(
        lambda it: db.stage_heat_partition(it, url, run_id)
    ).sum()
    with db.connect(url) as conn:
        applied = conn.run(
            pipeline_store.apply_heat_scores(
                conn.conn, run_id, result.nodes, result.edges, result.iterations, result.delta
            )
        )
        summary.hottest = conn.run(pipeline_store.fetch_hottest_nodes(conn.conn, 5))
    summary.datasets, summary.jobs, summary.changed = applied.datasets, applied.jobs, applied.changed
    summary.seconds = time.monotonic() - started
    return summary
