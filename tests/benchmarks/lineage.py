"""Lineage traversal benchmark: Headwater's engine against the usual alternatives, on a big graph.

Builds a realistic graph straight into a dedicated database (COPY into datasets, jobs, runs,
lineage_edges and column_lineage), then times the same lineage questions answered by:

- ``plain CTE``: the textbook recursive ``UNION`` CTE (node, hops) over lineage_edges;
- ``per-hop``: one ``src = ANY($1)`` query per hop from Python over asyncpg, visited set in Python;
- ``igraph``: in-memory BFS over the same edges, plus building and encoding the same JSON answer
  from node data held in memory (the floor a cache could reach);
- ``headwater``: GET /api/v1/lineage on the real app, end to end over HTTP (uvicorn + httpx).

The graph: ~100k datasets and ~100k jobs in a sparse layered warehouse, hub tables read by
hundreds of jobs, a dense region (10k datasets + 10k jobs, 5 edges out of each), long chains of 40
jobs, closed (historical) edges, and a 200-column table copied through 10 jobs with column lineage.

Run: ``python tests/benchmarks/lineage.py [--runs 30] [--keep]``. Needs PostgreSQL at
$HEADWATER_BENCH_SERVER_URL (default postgresql://postgres@127.0.0.1:5432/postgres); creates and
drops the database ``headwater_bench`` (``--keep`` leaves it for inspection, ``--reuse`` skips the
build when it is there).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import random
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

# Run as a script, the repository root is not on the path (as for the other benchmarks).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.databases import SERVER_URL, database_url, recreate_database

DB_NAME = "headwater_bench"
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

# Graph shape.
WAREHOUSE_DATASETS = 88_000
WAREHOUSE_JOBS = 90_000
WAREHOUSE_WINDOW = 1_500  # a job reads datasets among the WINDOW written just before its outputs
HUBS = 5
HUB_READERS = (600, 1_200)
DENSE_DATASETS = 10_000
DENSE_JOBS = 10_000
DENSE_DEGREE = 5
CHAINS = 50
CHAIN_JOBS = 40
WIDE_COLUMNS = 200
WIDE_JOBS = 10
CLOSED_FRACTION = 0.1


@dataclass
class Graph:
    """Rows to COPY into the store, with the node ids handed out so far."""

    datasets: list[tuple[Any, ...]] = field(default_factory=list)
    jobs: list[tuple[Any, ...]] = field(default_factory=list)
    edges: list[tuple[Any, ...]] = field(default_factory=list)
    fields: list[tuple[Any, ...]] = field(default_factory=list)
    columns: list[tuple[Any, ...]] = field(default_factory=list)
    runs: list[tuple[Any, ...]] = field(default_factory=list)
    next_node: int = 1
    dataset_of: dict[int, tuple[uuid.UUID, str, str]] = field(default_factory=dict)
    job_of: dict[int, tuple[uuid.UUID, str, str]] = field(default_factory=dict)
    column_keys: set[tuple[Any, ...]] = field(default_factory=set)

    def dataset(self, namespace: str, name: str, n_fields: int) -> int:
        node = self.next_node
        self.next_node += 1
        ds_uuid = uuid.uuid4()
        facets = {
            "dataSource": {"name": namespace, "uri": namespace},
            "documentation": {"description": f"Table {name}, loaded daily."},
            "ownership": {"owners": [{"name": "team:data-platform", "type": "MAINTAINER"}]},
        }
        created = T0 + dt.timedelta(seconds=node)
        self.datasets.append(
            (ds_uuid, node, namespace, name, namespace, None, json.dumps(facets), created, created)
        )
        for i in range(n_fields):
            self.fields.append((ds_uuid, f"col_{i}", "VARCHAR" if i % 3 else "BIGINT", None, i))
        self.dataset_of[node] = (ds_uuid, namespace, name)
        return node

    def job(self, namespace: str, name: str) -> int:
        node = self.next_node
        self.next_node += 1
        job_uuid = uuid.uuid4()
        run_uuid = uuid.uuid4()
        created = T0 + dt.timedelta(seconds=node)
        facets = {
            "jobType": {"processingType": "BATCH", "integration": "SPARK", "jobType": "JOB"},
            "sourceCodeLocation": {"type": "git", "url": f"https://git.example.com/etl/{name}.py"},
        }
        self.jobs.append(
            (job_uuid, node, namespace, name, "BATCH", json.dumps(facets), run_uuid, created, created)
        )
        ended = created + dt.timedelta(minutes=5)
        self.runs.append((run_uuid, job_uuid, "COMPLETE", ended, created, ended, created, ended))
        self.job_of[node] = (job_uuid, namespace, name)
        return node

    def edge(self, src: int, dst: int, closed: bool = False) -> None:
        """A READ (dataset -> job) or WRITE (job -> dataset) edge; closed ones are history."""
        if src in self.dataset_of:
            ds, job, kind = self.dataset_of[src][0], self.job_of[dst][0], "READ"
        else:
            ds, job, kind = self.dataset_of[dst][0], self.job_of[src][0], "WRITE"
        start = T0 + dt.timedelta(days=1)
        end = T0 + dt.timedelta(days=20) if closed else None
        self.edges.append((src, dst, job, ds, kind, start, start, start, end))

    def column(
        self, out_node: int, out_field: str, in_node: int, in_field: str, job: int, derived: bool = False
    ) -> None:
        key = (out_node, out_field, in_node, in_field, job, derived)
        if key in self.column_keys:
            return
        self.column_keys.add(key)
        start = T0 + dt.timedelta(days=1)
        self.columns.append(
            (
                self.dataset_of[out_node][0],
                out_field,
                self.dataset_of[in_node][0],
                in_field,
                self.job_of[job][0],
                "DIRECT",
                "IDENTITY",
                None,
                derived,
                start,
                start,
                start,
            )
        )

    def node_id(self, node: int) -> str:
        if node in self.dataset_of:
            _, ns, name = self.dataset_of[node]
            return f"dataset:{ns}:{name}"
        _, ns, name = self.job_of[node]
        return f"job:{ns}:{name}"


def build_graph(seed: int = 7) -> Graph:
    """The benchmark graph (deterministic for a seed)."""
    rnd = random.Random(seed)
    g = Graph()
    _, warehouse_jobs = add_warehouse(g, rnd)
    add_hubs(g, rnd, warehouse_jobs)
    add_dense_region(g, rnd)
    add_chains(g)
    add_wide_table(g)
    add_column_noise(g)
    return g


def add_warehouse(g: Graph, rnd: random.Random) -> tuple[list[int], list[int]]:
    """Sparse warehouse: datasets in write order; job i writes one and reads ~2 written shortly before."""
    namespaces = ["postgres://warehouse:5432", "s3://lake", "bigquery"]
    datasets = [
        g.dataset(namespaces[i % 3], f"analytics.layer_{i // 3000}.table_{i}", rnd.randint(4, 16))
        for i in range(WAREHOUSE_DATASETS)
    ]
    jobs: list[int] = []
    for i in range(WAREHOUSE_JOBS):
        job = g.job(["airflow", "spark", "dbt"][i % 3], f"etl.job_{i}")
        jobs.append(job)
        out_pos = min(WAREHOUSE_DATASETS - 1, 500 + i * (WAREHOUSE_DATASETS - 500) // WAREHOUSE_JOBS)
        g.edge(job, datasets[out_pos])
        reads = {
            max(0, out_pos - rnd.randint(1, WAREHOUSE_WINDOW)) for _ in range(rnd.choice((1, 2, 2, 3)))
        }
        for pos in reads:
            g.edge(datasets[pos], job)
        if rnd.random() < CLOSED_FRACTION:  # an input the job stopped reading
            g.edge(datasets[max(0, out_pos - rnd.randint(1, WAREHOUSE_WINDOW))], job, closed=True)
    return datasets, jobs


def add_hubs(g: Graph, rnd: random.Random, jobs: list[int]) -> list[int]:
    """A few tables read by hundreds of warehouse jobs."""
    hubs = [g.dataset("postgres://warehouse:5432", f"dim.hub_{h}", 12) for h in range(HUBS)]
    for hub in hubs:
        for job in rnd.sample(jobs, rnd.randint(*HUB_READERS)):
            g.edge(hub, job)
    return hubs


def add_dense_region(g: Graph, rnd: random.Random) -> list[int]:
    """Every job reads DENSE_DEGREE and writes DENSE_DEGREE random datasets of the region."""
    datasets = [g.dataset("kafka://events", f"stream.topic_{i}", 6) for i in range(DENSE_DATASETS)]
    for i in range(DENSE_JOBS):
        job = g.job("flink", f"streaming.job_{i}")
        for ds in set(rnd.sample(datasets, DENSE_DEGREE)):
            g.edge(ds, job)
        for ds in set(rnd.sample(datasets, DENSE_DEGREE)):
            g.edge(job, ds)
    return datasets


def add_chains(g: Graph) -> list[int]:
    """dataset -> job -> dataset ... CHAIN_JOBS jobs long; returns the chains' first datasets."""
    heads = []
    for c in range(CHAINS):
        prev = g.dataset("s3://raw", f"chain_{c}.step_0", 5)
        heads.append(prev)
        for step in range(1, CHAIN_JOBS + 1):
            job = g.job("dagster", f"chain_{c}.op_{step}")
            out = g.dataset("s3://raw", f"chain_{c}.step_{step}", 5)
            g.edge(prev, job)
            g.edge(job, out)
            prev = out
    return heads


def add_wide_table(g: Graph) -> list[int]:
    """WIDE_COLUMNS columns copied through WIDE_JOBS jobs, field by field, with column lineage."""
    wide = [
        g.dataset("snowflake://acct", f"finance.wide_{k}", WIDE_COLUMNS) for k in range(WIDE_JOBS + 1)
    ]
    for k in range(1, WIDE_JOBS + 1):
        job = g.job("dbt", f"finance.model_{k}")
        g.edge(wide[k - 1], job)
        g.edge(job, wide[k])
        for c in range(WIDE_COLUMNS):
            g.column(wide[k], f"col_{c}", wide[k - 1], f"col_{c}", job)
            if c % 10 == 0:  # some columns also depend on the key, and SQL analysis found the same edge
                g.column(wide[k], f"col_{c}", wide[k - 1], "col_0", job)
                g.column(wide[k], f"col_{c}", wide[k - 1], f"col_{c}", job, derived=True)
    return wide


def add_column_noise(g: Graph) -> None:
    """Column lineage over half the warehouse writes: a few fields from the job's first input."""
    reads: dict[int, list[int]] = {}
    for src, dst, *_, valid_to in g.edges:
        if src in g.dataset_of and valid_to is None:
            reads.setdefault(dst, []).append(src)
    for src, dst, *_ in g.edges[: len(g.edges) // 2]:
        if src in g.job_of and reads.get(src):
            for i in range(4):
                g.column(dst, f"col_{i}", reads[src][0], f"col_{i}", src)


async def load_graph(conn: asyncpg.Connection, g: Graph) -> None:
    """COPY the graph into a migrated database, then index statistics."""
    namespaces = sorted({d[2] for d in g.datasets} | {j[2] for j in g.jobs})
    await conn.copy_records_to_table("namespaces", records=[(n,) for n in namespaces], columns=["name"])
    await conn.copy_records_to_table(
        "datasets",
        records=g.datasets,
        columns=[
            "dataset_uuid",
            "node_id",
            "namespace",
            "name",
            "source_name",
            "description",
            "facets",
            "created_at",
            "updated_at",
        ],
    )
    await conn.copy_records_to_table(
        "dataset_aliases",
        records=[(d[2], d[3], d[0], "CANONICAL") for d in g.datasets],
        columns=["namespace", "name", "dataset_uuid", "alias_type"],
    )
    await conn.copy_records_to_table(
        "dataset_fields",
        records=g.fields,
        columns=["dataset_uuid", "name", "type", "description", "position"],
    )
    await conn.copy_records_to_table(
        "jobs",
        records=g.jobs,
        columns=[
            "job_uuid",
            "node_id",
            "namespace",
            "name",
            "job_type",
            "facets",
            "latest_run_uuid",
            "created_at",
            "updated_at",
        ],
    )
    await conn.copy_records_to_table(
        "runs",
        records=g.runs,
        columns=[
            "run_uuid",
            "job_uuid",
            "current_state",
            "current_state_at",
            "started_at",
            "ended_at",
            "created_at",
            "updated_at",
        ],
    )
    await conn.copy_records_to_table(
        "lineage_edges",
        records=g.edges,
        columns=[
            "src_node_id",
            "dst_node_id",
            "job_uuid",
            "dataset_uuid",
            "edge_type",
            "first_seen_at",
            "last_seen_at",
            "valid_from",
            "valid_to",
        ],
    )
    await conn.copy_records_to_table(
        "column_lineage",
        records=g.columns,
        columns=[
            "output_dataset_uuid",
            "output_field",
            "input_dataset_uuid",
            "input_field",
            "job_uuid",
            "transformation_type",
            "transformation_subtype",
            "description",
            "derived",
            "first_seen_at",
            "last_seen_at",
            "valid_from",
        ],
    )
    await conn.execute("SELECT setval('lineage_node_ids', $1)", g.next_node)
    await conn.execute("VACUUM ANALYZE")


async def create_database(rebuild: bool) -> str:
    """Create (or reuse) the benchmark database, migrated and loaded; returns its URL."""
    from headwater.db.migrate import migrate

    admin = await asyncpg.connect(SERVER_URL)
    try:
        exists = await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", DB_NAME)
        if not exists or rebuild:
            await recreate_database(admin, DB_NAME)
    finally:
        await admin.close()
    url = database_url(DB_NAME)
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn)
        if exists and not rebuild:
            return url
        t = time.perf_counter()
        g = build_graph()
        print(f"built graph in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        t = time.perf_counter()
        await load_graph(conn, g)
        print(f"loaded in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    finally:
        await conn.close()
    return url


# -- the alternatives ------------------------------------------------------------------------------

PLAIN_CTE = {
    "DOWNSTREAM": """
        WITH RECURSIVE walk(node_id, hops) AS (
            SELECT $1::bigint, 0
            UNION
            SELECT e.dst_node_id, w.hops + 1 FROM walk w JOIN lineage_edges e ON e.src_node_id = w.node_id
            WHERE w.hops < $2 AND e.valid_to IS NULL
        )
        SELECT node_id, min(hops) AS hops FROM walk GROUP BY node_id""",
    "UPSTREAM": """
        WITH RECURSIVE walk(node_id, hops) AS (
            SELECT $1::bigint, 0
            UNION
            SELECT e.src_node_id, w.hops + 1 FROM walk w JOIN lineage_edges e ON e.dst_node_id = w.node_id
            WHERE w.hops < $2 AND e.valid_to IS NULL
        )
        SELECT node_id, min(hops) AS hops FROM walk GROUP BY node_id""",
}
PER_HOP = {
    "DOWNSTREAM": "SELECT dst_node_id FROM lineage_edges WHERE src_node_id = ANY($1::bigint[]) AND valid_to IS NULL",
    "UPSTREAM": "SELECT src_node_id FROM lineage_edges WHERE dst_node_id = ANY($1::bigint[]) AND valid_to IS NULL",
}


async def plain_cte(conn: asyncpg.Connection, root: int, hops: int, direction: str) -> int:
    """(a) The textbook recursive UNION CTE; returns the number of nodes reached."""
    return len(await conn.fetch(PLAIN_CTE[direction], root, hops))


async def per_hop(conn: asyncpg.Connection, root: int, hops: int, direction: str) -> int:
    """(b) One query per hop from Python, the visited set in Python."""
    visited = {root}
    frontier = [root]
    for _ in range(hops):
        if not frontier:
            break
        rows = await conn.fetch(PER_HOP[direction], frontier)
        frontier = list({r[0] for r in rows} - visited)
        visited.update(frontier)
    return len(visited)


class InMemory:
    """(c) igraph over the same open edges, with every node document preloaded."""

    def __init__(self, edges: list[tuple[int, int]], docs: dict[int, tuple[str, str, bytes]]) -> None:
        import igraph

        self.ids = sorted({n for e in edges for n in e} | set(docs))
        self.index = {n: i for i, n in enumerate(self.ids)}
        self.graph = igraph.Graph(
            n=len(self.ids), edges=[(self.index[a], self.index[b]) for a, b in edges], directed=True
        )
        self.docs = docs

    def answer(self, root: int, hops: int, direction: str) -> tuple[int, bytes]:
        """BFS, the edges among the reached nodes, and the answer encoded as Headwater encodes it."""
        import msgspec

        mode = "out" if direction == "DOWNSTREAM" else "in"
        reached = self.graph.neighborhood(self.index[root], order=hops, mode=mode)
        keep = set(reached)
        enc = msgspec.json.Encoder()
        node_ids = {v: enc.encode(self.docs[self.ids[v]][0]) for v in reached}
        ins: dict[int, list[bytes]] = {v: [] for v in reached}
        outs: dict[int, list[bytes]] = {v: [] for v in reached}
        for v in reached:
            for w in self.graph.successors(v):
                if w in keep:
                    edge = b'{"origin":%b,"destination":%b}' % (node_ids[v], node_ids[w])
                    outs[v].append(edge)
                    ins[w].append(edge)
        parts = [
            b'{"id":%b,"type":"%b","data":%b,"inEdges":[%b],"outEdges":[%b]}'
            % (
                node_ids[v],
                self.docs[self.ids[v]][1].encode(),
                self.docs[self.ids[v]][2],
                b",".join(ins[v]),
                b",".join(outs[v]),
            )
            for v in reached
        ]
        return len(reached), b'{"graph":[' + b",".join(parts) + b'],"truncated":false}'


async def load_in_memory(conn: asyncpg.Connection) -> InMemory:
    edges = [
        (r[0], r[1])
        for r in await conn.fetch(
            "SELECT src_node_id, dst_node_id FROM lineage_edges WHERE valid_to IS NULL"
        )
    ]
    docs: dict[int, tuple[str, str, bytes]] = {}
    rows = await conn.fetch(
        "SELECT node_id, node_type, namespace, name, data FROM lineage_node_documents("
        "(SELECT array_agg(node_id) FROM (SELECT node_id FROM datasets UNION ALL SELECT node_id FROM jobs) n))"
    )
    for r in rows:
        docs[r[0]] = (f"{r[1].lower()}:{r[2]}:{r[3]}", r[1], r[4].encode())
    return InMemory(edges, docs)


# -- the HTTP server ---------------------------------------------------------------------------------


class Server:
    """A uvicorn process serving headwater.app:create_app on the benchmark database."""

    def __init__(self, url: str) -> None:
        from tests.server import start_uvicorn

        self.process, self.base = start_uvicorn(url, "--no-access-log")

    async def wait(self) -> None:
        import httpx

        async with httpx.AsyncClient() as client:
            for _ in range(200):
                try:
                    if (await client.get(self.base + "/readyz")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.05)
        raise RuntimeError("the server did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


# -- measuring --------------------------------------------------------------------------------------


@dataclass
class Row:
    case: str
    depth: int
    direction: str
    nodes: list[int] = field(default_factory=list)
    times: dict[str, list[float]] = field(default_factory=dict)

    def add(self, variant: str, seconds: float) -> None:
        self.times.setdefault(variant, []).append(seconds * 1000)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def timed(row: Row, variant: str, call: Awaitable[Any]) -> Any:
    start = time.perf_counter()
    result = await call
    row.add(variant, time.perf_counter() - start)
    return result


def cycle(items: list[Any], n: int) -> Iterator[Any]:
    for i in range(n):
        yield items[i % len(items)]


WALK = """SELECT node_ids, edge_srcs FROM lineage_walk($1::bigint[], $2::bigint[], $3, $4, $5, NULL, $6, NULL, $7)"""


async def engine_walk(
    conn: asyncpg.Connection, root: int, depth: int, direction: str, edges: bool = True
) -> int:
    """Headwater's walk query, uncapped like the alternatives: nodes, or nodes + edges + stamps."""
    row = await conn.fetchrow(
        WALK,
        [],
        [root],
        2 * depth + 1,
        direction == "DOWNSTREAM",
        direction == "UPSTREAM",
        1_000_000,
        edges,
    )
    return len(row["node_ids"] or [])


async def pick_roots(conn: asyncpg.Connection) -> dict[tuple[str, str], list[int]]:
    """Roots per (case, direction); warehouse roots answer at most 1,000 nodes at depth 10."""

    async def ids(sql: str, *args: Any) -> list[int]:
        return [r[0] for r in await conn.fetch(sql, *args)]

    rnd = random.Random(11)
    candidates = await ids("SELECT node_id FROM datasets WHERE name LIKE 'analytics.%' ORDER BY node_id")
    roots: dict[tuple[str, str], list[int]] = {}
    for direction in ("UPSTREAM", "DOWNSTREAM"):
        picked = []
        for root in rnd.sample(candidates, 200):
            if 100 <= await engine_walk(conn, root, 10, direction) <= 1_000:
                picked.append(root)
            if len(picked) == 10:
                break
        roots[("warehouse", direction)] = picked
    hubs = await ids("SELECT node_id FROM datasets WHERE name LIKE 'dim.hub_%' ORDER BY node_id")
    roots[("hub", "DOWNSTREAM")] = hubs
    dense = await ids("SELECT node_id FROM datasets WHERE namespace = 'kafka://events' ORDER BY node_id")
    roots[("dense", "UPSTREAM")] = roots[("dense", "DOWNSTREAM")] = rnd.sample(dense, 10)
    roots[("chain", "DOWNSTREAM")] = await ids(
        "SELECT node_id FROM datasets WHERE name LIKE 'chain_%.step_0' ORDER BY node_id LIMIT 10"
    )
    roots[("chain", "UPSTREAM")] = await ids(
        "SELECT node_id FROM datasets WHERE name LIKE 'chain_%.step_40' ORDER BY node_id LIMIT 10"
    )
    return roots


async def run_benchmark(url: str, runs: int) -> list[str]:
    """Measure every variant on every case; returns the markdown table's lines."""
    import httpx

    from headwater.db.pool import register_codecs

    conn = await asyncpg.connect(url)
    await register_codecs(conn)
    roots = await pick_roots(conn)
    names = {
        r[0]: f"dataset:{r[1]}:{r[2]}"
        for r in await conn.fetch(
            "SELECT node_id, namespace, name FROM datasets WHERE node_id = ANY($1::bigint[])",
            sorted({n for v in roots.values() for n in v}),
        )
    }
    t = time.perf_counter()
    memory = await load_in_memory(conn)
    print(f"in-memory graph loaded in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    server = Server(url)
    lines = []
    try:
        await server.wait()
        async with httpx.AsyncClient(base_url=server.base, timeout=120) as client:
            rows = []
            for (case, direction), case_roots in roots.items():
                for depth in (5, 10, 20):
                    row = Row(case, depth, direction)
                    rows.append(row)
                    n = max(5, runs // 3) if case in ("dense", "hub") else runs
                    params = {"depth": depth, "direction": direction}
                    for root in case_roots[:n]:  # first request of a root: documents not cached yet
                        await timed(
                            row,
                            "http cold",
                            client.get("/api/v1/lineage", params={"nodeId": names[root], **params}),
                        )
                    for root in cycle(case_roots, n):
                        hops = 2 * depth
                        sizes = {
                            "plain": await timed(row, "plain", plain_cte(conn, root, hops, direction)),
                            "per-hop": await timed(row, "per-hop", per_hop(conn, root, hops, direction)),
                            "nodes": await timed(
                                row, "nodes", engine_walk(conn, root, depth, direction, False)
                            ),
                            "walk": await timed(row, "walk", engine_walk(conn, root, depth, direction)),
                        }
                        start = time.perf_counter()
                        sizes["igraph"], _ = memory.answer(root, hops, direction)
                        row.add("igraph", time.perf_counter() - start)
                        response = await timed(
                            row,
                            "http",
                            client.get("/api/v1/lineage", params={"nodeId": names[root], **params}),
                        )
                        if response.status_code != 200:
                            raise SystemExit(
                                f"{case} {direction} depth {depth}: the server answered"
                                f" {response.status_code}: {response.text[:1000]}"
                            )
                        answer = response.json()
                        if len(set(sizes.values())) != 1:
                            print(
                                f"answer sizes differ for {case} {direction} {depth}: {sizes}",
                                file=sys.stderr,
                            )
                        row.nodes.append(len(answer["graph"]))
                        row.times.setdefault("kb", []).append(len(response.content) / 1000)
                        row.times.setdefault("full", []).append(sizes["walk"])
                    print(f"{case} {direction} depth {depth}: done", file=sys.stderr)
            lines = table(rows)
            lines += await column_table(conn, client, runs)
    finally:
        server.stop()
        await conn.close()
    return lines


def table(rows: list[Row]) -> list[str]:
    def cell(row: Row, variant: str) -> str:
        values = row.times[variant]
        return f"{percentile(values, 0.5):.1f} / {percentile(values, 0.95):.1f}"

    lines = [
        "p50 / p95 in ms. Traversals (nodes only): plain CTE, per-hop, Headwater walk. Answers: igraph BFS"
        " + the same JSON from preloaded documents; Headwater SQL (nodes, edges, document stamps); Headwater"
        " over HTTP (node cap 10,000), warm and first request per root.",
        "",
        "| case | dir | depth | nodes: answer / full | plain CTE | per-hop | walk, nodes | igraph + JSON "
        "| walk + edges | HTTP | HTTP first | KB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        full = row.times["full"]
        lines.append(
            f"| {row.case} | {row.direction[:4]} | {row.depth} | {statistics.median(row.nodes):.0f} / "
            f"{statistics.median(full):.0f} | {cell(row, 'plain')} | {cell(row, 'per-hop')} | {cell(row, 'nodes')} "
            f"| {cell(row, 'igraph')} | {cell(row, 'walk')} | {cell(row, 'http')} "
            f"| {percentile(row.times['http cold'], 0.5):.1f} | {statistics.median(row.times['kb']):.0f} |"
        )
    return lines


async def column_table(conn: asyncpg.Connection, client: Any, runs: int) -> list[str]:
    """Column lineage of the 200-column table through 10 jobs, over HTTP."""
    wide_last = "dataset:snowflake://acct:finance.wide_10"
    wide_first = "dataset:snowflake://acct:finance.wide_0"
    one_field = "datasetField:snowflake://acct:finance.wide_10:col_10"
    lines = [
        "",
        "| column lineage | direction | depth | nodes | Headwater HTTP p50 / p95 (ms) | answer KB |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for label, root, direction in (
        ("200-column table, all fields", wide_last, "UPSTREAM"),
        ("200-column table, all fields", wide_first, "DOWNSTREAM"),
        ("one field", one_field, "UPSTREAM"),
    ):
        for depth in (5, 10, 20):
            times, nodes, kb = [], 0, 0.0
            for _ in range(runs):
                start = time.perf_counter()
                response = await client.get(
                    "/api/v1/column-lineage",
                    params={"nodeId": root, "depth": depth, "direction": direction},
                )
                times.append((time.perf_counter() - start) * 1000)
                nodes, kb = len(response.json()["graph"]), len(response.content) / 1000
            lines.append(
                f"| {label} | {direction} | {depth} | {nodes} | {percentile(times, 0.5):.1f} / "
                f"{percentile(times, 0.95):.1f} | {kb:.0f} |"
            )
    return lines


async def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20, help="timed requests per row (default 20)")
    parser.add_argument("--keep", action="store_true", help="keep the benchmark database afterwards")
    parser.add_argument("--reuse", action="store_true", help="reuse the benchmark database if it exists")
    args = parser.parse_args()
    url = await create_database(rebuild=not args.reuse)
    try:
        lines = await run_benchmark(url, args.runs)
    finally:
        if not args.keep:
            admin = await asyncpg.connect(SERVER_URL)
            await admin.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
            await admin.close()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
