"""Heat benchmark: `headwater spark heat` on a lineage graph of about a million current edges.

Builds the graph straight into a dedicated database with COPY (datasets, jobs and open
lineage_edges of a layered warehouse with hub tables), then runs ``headwater spark heat`` as a
subprocess and reports the time of the whole command and of its iterations. Target: under 2
minutes on local[*].

Run: ``python tests/benchmarks/heat.py [--edges 1000000] [--master local[*]] [--keep]``. Needs
PostgreSQL at $HEADWATER_BENCH_SERVER_URL (default postgresql://postgres@127.0.0.1:5432/postgres);
creates and drops the database headwater_bench_heat.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import random
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import asyncpg

# Run as a script, the repository root is not on the path (as for the other benchmarks).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.databases import SERVER_URL, fresh_database

DB_NAME = "headwater_bench_heat"
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


async def build_graph(url: str, edges: int, seed: int = 11) -> tuple[int, int, int]:
    """A layered warehouse: each job reads 3 datasets of earlier layers (often hubs) and writes 2."""
    rng = random.Random(seed)
    jobs = edges // 5
    datasets = jobs * 2 + 1_000
    dataset_rows = [(uuid.uuid4(), i + 1, "warehouse", f"t{i}", T0, T0) for i in range(datasets)]
    job_rows = [(uuid.uuid4(), datasets + j + 1, "pipelines", f"job{j}", T0, T0) for j in range(jobs)]
    edge_rows = []
    for j, job in enumerate(job_rows):
        written = [1_000 + 2 * j, 1_000 + 2 * j + 1]
        limit = 1_000 + 2 * j
        reads = set()
        while len(reads) < 3:
            reads.add(rng.randrange(100) if rng.random() < 0.2 else rng.randrange(limit))
        for d in reads:
            edge_rows.append(
                (dataset_rows[d][1], job[1], job[0], dataset_rows[d][0], "READ", T0, T0, T0)
            )
        for d in written:
            edge_rows.append(
                (job[1], dataset_rows[d][1], job[0], dataset_rows[d][0], "WRITE", T0, T0, T0)
            )
    conn = await asyncpg.connect(url)
    try:
        await conn.copy_records_to_table(
            "datasets",
            records=dataset_rows,
            columns=["dataset_uuid", "node_id", "namespace", "name", "created_at", "updated_at"],
        )
        await conn.copy_records_to_table(
            "jobs",
            records=job_rows,
            columns=["job_uuid", "node_id", "namespace", "name", "created_at", "updated_at"],
        )
        await conn.copy_records_to_table(
            "lineage_edges",
            records=edge_rows,
            columns=[
                "src_node_id",
                "dst_node_id",
                "job_uuid",
                "dataset_uuid",
                "edge_type",
                "first_seen_at",
                "last_seen_at",
                "valid_from",
            ],
        )
        await conn.execute("ANALYZE")
    finally:
        await conn.close()
    return datasets, jobs, len(edge_rows)


async def drop_database() -> None:
    admin = await asyncpg.connect(SERVER_URL)
    await admin.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
    await admin.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    url = asyncio.run(fresh_database(DB_NAME))
    started = time.monotonic()
    datasets, jobs, edges = asyncio.run(build_graph(url, args.edges))
    print(
        f"built {datasets:,} datasets, {jobs:,} jobs, {edges:,} edges in {time.monotonic() - started:,.0f} s",
        flush=True,
    )
    command = [
        sys.executable,
        "-m",
        "headwater.cli",
        "spark",
        "heat",
        "--master",
        args.master,
        "--database-url",
        url,
        "--quiet",
    ]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if result.returncode != 0:
        print(result.stdout, result.stderr, sep="\n")
        return 1
    print(result.stdout)
    if not args.keep:
        asyncio.run(drop_database())
    iterations = re.search(r"^iterations\s+(\d+)", result.stdout, re.MULTILINE)
    rows = [
        ("graph", f"{datasets + jobs:,} nodes, {edges:,} edges"),
        ("headwater spark heat (JVM start to commit)", f"{seconds:,.1f} s"),
        ("iterations", iterations.group(1) if iterations else "?"),
        ("target", "< 120 s " + ("met" if seconds < 120 else "NOT met")),
    ]
    width = max(len(k) for k, _ in rows)
    print("\n".join(f"| {k.ljust(width)} | {v} |" for k, v in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
