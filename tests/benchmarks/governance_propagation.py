"""Governance propagation benchmark: one change on a 100k-column lineage graph.

Builds a layered warehouse straight into a dedicated database (COPY): 10 layers of 100 datasets
of 100 columns (100,000 columns). Each dataset after the first layer is written by its own job
from two datasets of the layer before: every column copies its namesake of the first input, one
in ten also joins in its namesake of the second, and the last column counts the first (a COUNT,
which the default policy says removes identity). About 99,000 column edges.

Then it times ``apply_pending`` (what the server's worker runs for each page of the change log)
for single changes, each repeated ``--runs`` times (median and worst):

- declare: pii declared through the API on a first-layer column (CLASSIFICATION_DECLARED), which
  flows down its cone of derived columns;
- lineage: a job's new version adds a column edge from a pii column into another table (the
  column edge and the JOB_VERSION_CHANGED row as ingest writes them), and the next one removes it;
- retract: the declaration removed, the labels taken back down the cone;
- table, untable: pii declared on the whole first-layer table (each of its 100 columns), then
  removed: the widest cone.

and, once, the full recomputation a new policy starts with (every column). The policy has two
rules, checked on every field whose labels change. Run:
``python tests/benchmarks/governance_propagation.py [--runs 5]``; needs PostgreSQL at
$HEADWATER_BENCH_SERVER_URL (default postgresql://postgres@127.0.0.1:5432/postgres), and creates
and drops the database ``headwater_governance_bench``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg

# Run as a script, the repository root is not on the path (as for the other benchmarks).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.databases import SERVER_URL, database_url

from headwater.db.migrate import migrate
from headwater.db.pool import register_codecs
from headwater.governance import classifications
from headwater.governance.policy import Policy, parse_policy
from headwater.governance.propagation import Outcome, apply_pending
from headwater.store.changes import Change, insert_changes

DATABASE = "headwater_governance_bench"
NAMESPACE = "warehouse"
LAYERS, WIDTH, COLUMNS = 10, 100, 100
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def name(layer: int, k: int) -> str:
    return f"l{layer}_{k}"


async def build(conn: asyncpg.Connection, seed: int = 7) -> dict[str, Any]:
    """COPY the graph; returns the uuids and node ids the runs need."""
    rnd = random.Random(seed)
    datasets = {(layer, k): uuid.uuid4() for layer in range(LAYERS) for k in range(WIDTH)}
    await conn.copy_records_to_table("namespaces", records=[(NAMESPACE,)], columns=["name"])
    await conn.copy_records_to_table(
        "datasets",
        records=[(u, NAMESPACE, name(*key), T0, T0) for key, u in datasets.items()],
        columns=["dataset_uuid", "namespace", "name", "created_at", "updated_at"],
    )
    await conn.copy_records_to_table(
        "dataset_fields",
        records=[(u, f"col_{i}", "VARCHAR", i) for u in datasets.values() for i in range(COLUMNS)],
        columns=["dataset_uuid", "name", "type", "position"],
    )
    jobs: dict[tuple[int, int], tuple[uuid.UUID, uuid.UUID, uuid.UUID]] = {}
    for layer in range(1, LAYERS):
        for k in range(WIDTH):
            a, b = rnd.sample(range(WIDTH), 2)
            jobs[(layer, k)] = (uuid.uuid4(), datasets[(layer - 1, a)], datasets[(layer - 1, b)])
    await conn.copy_records_to_table(
        "jobs",
        records=[(j[0], "pipelines", f"build_{name(*key)}", T0, T0) for key, j in jobs.items()],
        columns=["job_uuid", "namespace", "name", "created_at", "updated_at"],
    )
    node = {
        r["dataset_uuid"]: r["node_id"]
        for r in await conn.fetch("SELECT dataset_uuid, node_id FROM datasets")
    }
    job_node = {
        r["job_uuid"]: r["node_id"] for r in await conn.fetch("SELECT job_uuid, node_id FROM jobs")
    }
    edges = []
    columns = []
    for (layer, k), (job, a, b) in jobs.items():
        out = datasets[(layer, k)]
        for src in (a, b):
            edges.append((node[src], job_node[job], job, src, "READ", T0, T0, T0))
        edges.append((job_node[job], node[out], job, out, "WRITE", T0, T0, T0))
        for i in range(COLUMNS - 1):
            columns.append((out, f"col_{i}", a, f"col_{i}", job, "DIRECT", "IDENTITY", None, T0, T0, T0))
            if i % 10 == 0:
                columns.append(
                    (out, f"col_{i}", b, f"col_{i}", job, "DIRECT", "TRANSFORMATION", None, T0, T0, T0)
                )
        columns.append(
            (
                out,
                f"col_{COLUMNS - 1}",
                a,
                "col_0",
                job,
                "DIRECT",
                "AGGREGATION",
                "COUNT(col_0)",
                T0,
                T0,
                T0,
            )
        )
    await conn.copy_records_to_table(
        "lineage_edges",
        records=edges,
        columns=[
            "src_node_id", "dst_node_id", "job_uuid", "dataset_uuid", "edge_type",
            "first_seen_at", "last_seen_at", "valid_from",
        ],
    )  # fmt: skip
    await conn.copy_records_to_table(
        "column_lineage",
        records=columns,
        columns=[
            "output_dataset_uuid", "output_field", "input_dataset_uuid", "input_field", "job_uuid",
            "transformation_type", "transformation_subtype", "description",
            "first_seen_at", "last_seen_at", "valid_from",
        ],
    )  # fmt: skip
    await conn.execute("ANALYZE")
    # The declarations start from the first-layer table read by the most jobs: a wide cone.
    readers = [sum(1 for _, a, b in jobs.values() if datasets[(0, k)] in (a, b)) for k in range(WIDTH)]
    root = name(0, max(range(WIDTH), key=lambda k: readers[k]))
    return {
        "datasets": datasets,
        "jobs": jobs,
        "root": root,
        "columns": len(datasets) * COLUMNS,
        "edges": len(columns),
    }


async def timed(conn: asyncpg.Connection, policy: Policy) -> tuple[float, Outcome]:
    start = time.perf_counter()
    outcome = await apply_pending(conn, policy)
    return time.perf_counter() - start, outcome


async def declare(
    conn: asyncpg.Connection, policy: Policy, dataset: str, field: str | None, tags: list[str]
) -> None:
    await classifications.declare(
        conn, policy, NAMESPACE, dataset, field, level=None, tags=tags, at=dt.datetime.now(dt.UTC)
    )


async def new_version(conn: asyncpg.Connection, graph: dict[str, Any], add: bool) -> None:
    """A new version of the job writing l6_0: with (add) or without an edge from l3_0.col_5."""
    job, _, _ = graph["jobs"][(6, 0)]
    out, src = graph["datasets"][(6, 0)], graph["datasets"][(3, 0)]
    now = dt.datetime.now(dt.UTC)
    async with conn.transaction():
        if add:
            await conn.execute(
                "INSERT INTO column_lineage (output_dataset_uuid, output_field, input_dataset_uuid, input_field,"
                " job_uuid, transformation_type, transformation_subtype, first_seen_at, last_seen_at, valid_from)"
                " VALUES ($1, 'col_42', $2, 'col_5', $3, 'DIRECT', 'TRANSFORMATION', $4, $4, $4)",
                out,
                src,
                job,
                now,
            )
        else:
            await conn.execute(
                "UPDATE column_lineage SET valid_to = $4 WHERE output_dataset_uuid = $1 AND input_dataset_uuid = $2"
                " AND job_uuid = $3 AND input_field = 'col_5' AND valid_to IS NULL",
                out,
                src,
                job,
                now,
            )
        await insert_changes(
            conn,
            [
                Change(
                    "JOB_VERSION_CHANGED",
                    "job:pipelines:build_l6_0",
                    "pipelines",
                    now,
                    {"addedEdges": [], "removedEdges": []},
                )
            ],
        )


def report(label: str, runs: list[tuple[float, Outcome]]) -> None:
    times = [t for t, _ in runs]
    last = runs[-1][1]
    print(
        f"{label:<10} median {statistics.median(times) * 1000:7.1f} ms  worst {max(times) * 1000:7.1f} ms"
        f"  ({last.fields_recomputed} field recomputations, {last.fields_changed} fields changed)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    admin = await asyncpg.connect(SERVER_URL)
    await admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
    await admin.execute(f'CREATE DATABASE "{DATABASE}"')
    try:
        conn = await asyncpg.connect(database_url(DATABASE))
        await register_codecs(conn)
        await migrate(conn)
        start = time.perf_counter()
        graph = await build(conn)
        print(
            f"graph: {graph['columns']:,} columns, {graph['edges']:,} column edges "
            f"(built in {time.perf_counter() - start:.1f} s)"
        )
        # The default levels, tags and masking, and two rules every changed field is checked by.
        policy = parse_policy(
            {
                "rules": [
                    {"name": "no-pii-in-public", "tag": "pii", "in_datasets_at": "public"},
                    {"name": "internal-at-most", "max_level": "internal", "in_datasets_at": "public"},
                ]
            }
        )
        seconds, outcome = await timed(conn, policy)
        print(
            f"full recomputation (a new policy): {seconds:.2f} s, {outcome.fields_recomputed:,} fields"
        )
        declared, lineage, retracted, table, untable = [], [], [], [], []
        for run in range(args.runs):
            field = f"col_{10 + run}"
            await declare(conn, policy, graph["root"], field, ["pii"])
            declared.append(await timed(conn, policy))
            await declare(conn, policy, "l3_0", "col_5", ["pii"])
            await timed(conn, policy)
            await new_version(conn, graph, add=True)
            lineage.append(await timed(conn, policy))
            await new_version(conn, graph, add=False)
            lineage.append(await timed(conn, policy))
            await declare(conn, policy, "l3_0", "col_5", [])
            await timed(conn, policy)
            await declare(conn, policy, graph["root"], field, [])
            retracted.append(await timed(conn, policy))
            await declare(conn, policy, graph["root"], None, ["pii"])
            table.append(await timed(conn, policy))
            await declare(conn, policy, graph["root"], None, [])
            untable.append(await timed(conn, policy))
        report("declare", declared)
        report("lineage", lineage)
        report("retract", retracted)
        report("table", table)
        report("untable", untable)
        await conn.close()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        await admin.close()


if __name__ == "__main__":
    asyncio.run(main())
