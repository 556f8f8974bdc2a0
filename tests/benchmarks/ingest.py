"""Ingest benchmark: Spark-shaped events posted to `headwater serve` by concurrent clients.

Generates 5,000 events (250 SQL jobs, each the child of its own Spark application, 5 runs per job:
application START, job START, job COMPLETE, application COMPLETE; a schema facet on every dataset,
1 to 3 inputs, column lineage with DIRECT and INDIRECT entries, outputStatistics on COMPLETE), then
for each scenario starts a server on a fresh database and posts them: one event per request with
1, 8, 32 and 128 concurrent clients (each sending an application run's four events in order, each
once the one before is answered, as its OpenLineage client does), and as `/api/v1/lineage/batch`
arrays of 100 and 500.

The load comes from several client processes, each holding keep-alive HTTP/1.1 sockets (raw, no
client library), so that the client is not what limits the rate. Printed per scenario: events/s,
p50/p99 latency of a request, CPU seconds per 1,000 events of the server's process tree, of the
PostgreSQL backends serving its database and of the client processes while they post, statements per event (pg_stat_statements when the server
preloads it, else transactions and rows written per event from pg_stat_database; the table says
which), and the WAL PostgreSQL wrote per event (for all its databases: run nothing else beside). A
503 is retried after its Retry-After, as OpenLineage clients do; retries are counted.

Run: ``python tests/benchmarks/ingest.py [--repeat 2] [--stored N] [--server-src PATH]
[--scenarios 1,8,32,128,b100,b500,r200,r1000] [--storage] [--workers 1,2] [--interleaved]``.
``--interleaved`` posts each event on its own instead, so that a run's events travel on different
client processes and may arrive in any order. ``rN`` offers N events/s
one per POST from independent producers (an open loop) and measures latency from when each was due. ``--storage`` turns autovacuum off on the tables
and prints, for each scenario, the bytes each table grew by per event and its dead rows. ``--server-src`` is another checkout (e.g. a
``git worktree`` of an earlier commit): its server is measured too, alternating with this one,
scenario by scenario. ``--stored N`` first stores N other runs of the same jobs through the batch
endpoint (not measured), once per server source; each scenario then starts from a copy of that
database. Needs PostgreSQL at $HEADWATER_BENCH_SERVER_URL (default
postgresql://postgres@127.0.0.1:5432/postgres); creates and drops headwater_bench_ingest (or
$HEADWATER_BENCH_DATABASE).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import asyncpg
import httpx
import psutil
from backfill import PRODUCER, RUN_EVENT, T0, _facet, _table
from tests.benchmarks.databases import SERVER_URL, database_url, recreate_database
from tests.server import free_port

# Its own name, so that two runs side by side (HEADWATER_BENCH_DATABASE) do not drop each other's.
DATABASE = os.environ.get("HEADWATER_BENCH_DATABASE", "headwater_bench_ingest")
JOBS = 250
RUNS = 5
# An application run's events, in the order its client sends them: application START, SQL job
# START, SQL job COMPLETE, application COMPLETE (see ingest_events).
EVENTS_PER_RUN = 4
TABLES = 400
COLUMNS = 6


def _lineage(columns: list[str], inputs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each output column from the same column of every input (DIRECT), filtered by c0 (INDIRECT)."""
    fields = {}
    for c in columns:
        sources = []
        for t in inputs:
            sources.append(
                {
                    "namespace": t["namespace"],
                    "name": t["name"],
                    "field": c,
                    "transformations": [{"type": "DIRECT", "subtype": "IDENTITY"}],
                }
            )
            sources.append(
                {
                    "namespace": t["namespace"],
                    "name": t["name"],
                    "field": columns[0],
                    "transformations": [{"type": "INDIRECT", "subtype": "FILTER"}],
                }
            )
        fields[c] = {"inputFields": sources}
    return _facet("1-2-0/ColumnLineageDatasetFacet.json", fields=fields)


def ingest_events(first_run: int = 0, runs: int = RUNS, jobs: int = JOBS) -> list[dict[str, Any]]:
    """Runs ``first_run`` to ``first_run + runs`` of every job, in eventTime order; 4 events each."""
    columns = [f"c{j}" for j in range(COLUMNS)]
    events = []
    for r in range(first_run, first_run + runs):
        for j in range(jobs):
            shape = random.Random(j)  # a job reads and writes the same tables on every run
            out = shape.randrange(TABLES)
            ins = [shape.randrange(TABLES) for _ in range(shape.randint(1, 3))]
            ids = random.Random(f"{j}/{r}")
            app_run, run = (str(uuid.UUID(int=ids.getrandbits(128), version=4)) for _ in range(2))
            app = f"ingest_app_{j}"
            job = f"{app}.execute_insert_into_hadoop_fs_relation_command.db{out % 20}_t{out}"
            start = T0 + dt.timedelta(hours=r, seconds=j * 10)
            sources = [_table(i, columns) for i in ins]

            def event(
                name: str,
                kind: str,
                run_id: str,
                offset: int,
                child: bool,
                outputs: list[dict[str, Any]] | None = None,
                start: dt.datetime = start,
                sources: list[dict[str, Any]] = sources,
                app: str = app,
                app_run: str = app_run,
            ) -> dict[str, Any]:
                facets: dict[str, Any] = {
                    "spark_properties": _facet(
                        "1-0-0/SparkPropertiesFacet.json",
                        properties={"spark.master": "yarn", "spark.app.name": app},
                    )
                }
                if child:
                    facets["parent"] = _facet(
                        "1-0-1/ParentRunFacet.json",
                        run={"runId": app_run},
                        job={"namespace": "spark", "name": app},
                    )
                at = start + dt.timedelta(seconds=offset)
                return {
                    "eventTime": at.isoformat().replace("+00:00", "Z"),
                    "producer": PRODUCER,
                    "schemaURL": RUN_EVENT,
                    "eventType": kind,
                    "run": {"runId": run_id, "facets": facets},
                    "job": {
                        "namespace": "spark",
                        "name": name,
                        "facets": {
                            "jobType": _facet(
                                "2-0-3/JobTypeJobFacet.json",
                                processingType="BATCH",
                                integration="SPARK",
                                jobType="SQL_JOB" if child else "APPLICATION",
                            )
                        },
                    },
                    "inputs": sources if child else [],
                    "outputs": outputs or [],
                }

            target = _table(out, columns)
            target["facets"]["columnLineage"] = _lineage(columns, sources)
            done = json.loads(json.dumps(target))
            done["outputFacets"] = {
                "outputStatistics": _facet(
                    "1-0-2/OutputStatisticsOutputDatasetFacet.json",
                    rowCount=1000 + r * 10 + j,
                    size=64_000 + r * 640 + j,
                )
            }
            events += [
                event(app, "START", app_run, 0, child=False),
                event(job, "START", run, 1, child=True, outputs=[target]),
                event(job, "COMPLETE", run, 8, child=True, outputs=[done]),
                event(app, "COMPLETE", app_run, 9, child=False),
            ]
    return events


# --- load generator (runs in client processes) -------------------------------------------------


async def _post_all(
    port: int, path: str, chains: list[list[bytes]], concurrency: int, rate: float = 0
) -> tuple[float, float, list[float], int]:
    """Post ``chains`` over ``concurrency`` keep-alive connections; (start, end, latencies, 503s).

    A connection takes a chain and posts its bodies one after another, each once the one before is
    answered (as one application's OpenLineage client sends its events), then takes the next chain.
    With ``rate`` (bodies/s; chains of one body), the i-th body is due at start + i/rate whatever the
    answers (an open loop, as independent producers send) and its latency runs from when it was due,
    so time spent waiting for a free connection counts; without, each connection sends as soon as it
    is answered.
    """
    queue = list(reversed(list(enumerate(chains))))
    latencies: list[float] = []
    retried = 0
    start = time.monotonic()

    async def send(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, body: bytes, due: float
    ) -> None:
        nonlocal retried
        if due > time.monotonic():
            await asyncio.sleep(due - time.monotonic())
        head = (
            f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        sent = due or time.monotonic()
        while True:
            writer.write(head + body)
            header = await reader.readuntil(b"\r\n\r\n")
            lines = header.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            fields = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
            answer = await reader.readexactly(int(fields.get("content-length", "0")))
            if status != 503:
                break
            retried += 1
            await asyncio.sleep(float(fields.get("retry-after", "1")))
        if status not in (200, 201):
            raise RuntimeError(f"{status}: {answer[:500]!r}")
        latencies.append(time.monotonic() - sent)

    async def connection() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while queue:
                index, chain = queue.pop()
                for body in chain:
                    await send(reader, writer, body, start + index / rate if rate else 0.0)
        finally:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(concurrency)))
    return start, time.monotonic(), latencies, retried


def _client(
    port: int, path: str, chains: list[list[bytes]], concurrency: int, rate: float, go: Any, out: Any
) -> None:
    go.wait()
    # The process's CPU while it posts, not while it starts and imports: the load generator's share
    # of the cores the server and PostgreSQL run on.
    cpu = time.process_time()
    start, end, latencies, retried = asyncio.run(_post_all(port, path, chains, concurrency, rate))
    out.put((start, end, latencies, retried, time.process_time() - cpu))


def post(
    port: int, path: str, chains: list[list[bytes]], clients: int, rate: float = 0
) -> tuple[float, list[float], int, float]:
    """Post from up to 4 processes, ``clients`` connections in all, at ``rate`` bodies/s in all if
    given; (seconds, latencies, 503s, the client processes' CPU seconds while posting). With n
    processes, each takes every nth chain."""
    processes = min(clients, 4)
    ctx = multiprocessing.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    workers = [
        ctx.Process(
            target=_client,
            args=(
                port,
                path,
                chains[p::processes],
                clients // processes + (p < clients % processes),
                rate / processes,
                go,
                out,
            ),
        )
        for p in range(processes)
    ]
    for w in workers:
        w.start()
    go.set()
    parts = [out.get() for _ in workers]
    for w in workers:
        w.join()
        if w.exitcode:
            raise SystemExit(f"a client process failed ({w.exitcode})")
    start = min(p[0] for p in parts)
    end = max(p[1] for p in parts)
    return (
        end - start,
        [x for p in parts for x in p[2]],
        sum(p[3] for p in parts),
        sum(p[4] for p in parts),
    )


# --- measurement --------------------------------------------------------------------------------


def _cpu(processes: list[psutil.Process]) -> dict[int, float]:
    seconds = {}
    for p in processes:
        try:
            t = p.cpu_times()
            seconds[p.pid] = t.user + t.system
        except psutil.Error:
            continue
    return seconds


def _tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


class Probe:
    """CPU of the server's tree and of its database's backends, and statement counts, over a span."""

    def __init__(self, admin: asyncpg.Connection, server_pid: int, statements: bool) -> None:
        self.admin, self.server_pid, self.statements = admin, server_pid, statements

    async def _backends(self) -> list[psutil.Process]:
        pids = await self.admin.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            DATABASE,
        )
        found = []
        for row in pids:
            try:
                found.append(psutil.Process(row["pid"]))
            except psutil.Error:
                continue
        return found

    async def _counters(self) -> dict[str, float]:
        await self.admin.execute("SELECT pg_stat_clear_snapshot()")
        row = await self.admin.fetchrow(
            "SELECT xact_commit + xact_rollback AS xacts,"
            " tup_inserted + tup_updated + tup_deleted AS written"
            " FROM pg_stat_database WHERE datname = $1",
            DATABASE,
        )
        counters = {"xacts": float(row["xacts"]), "written": float(row["written"])}
        # WAL written by the whole server meanwhile: this database's writes when nothing else runs.
        counters["wal"] = float(await self.admin.fetchval("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn"))
        if self.statements:
            counters["statements"] = float(
                await self.admin.fetchval(
                    "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s"
                    " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1",
                    DATABASE,
                )
            )
        return counters

    async def start(self) -> None:
        self.server0 = _cpu(_tree(self.server_pid))
        self.pg0 = _cpu(await self._backends())
        self.counters0 = await self._counters()

    async def stop(self) -> dict[str, float]:
        server1 = _cpu(_tree(self.server_pid))
        pg1 = _cpu(await self._backends())
        await asyncio.sleep(1.2)  # backends report their statistics at most once a second
        counters1 = await self._counters()
        return {
            "server_cpu": sum(v - self.server0.get(k, 0.0) for k, v in server1.items()),
            "pg_cpu": sum(v - self.pg0.get(k, 0.0) for k, v in pg1.items()),
            **{k: counters1[k] - self.counters0[k] for k in counters1},
        }


@dataclass
class Scenario:
    name: str
    clients: int
    batch: int  # 0: one event per request to /api/v1/lineage
    rate: float = 0  # events/s offered (an open loop); 0: as fast as answers come

    def chains(self, events: list[bytes], interleaved: bool = False) -> tuple[str, list[list[bytes]]]:
        """The path and the request bodies, in chains posted one after another on one connection.

        One event per request: an application run's events in order on one connection, as its
        OpenLineage client sends them (its START answered before its COMPLETE is sent); each event
        on its own with ``interleaved`` (or an offered rate), so that a run's events travel on
        different connections and may arrive in any order.
        """
        if not self.batch:
            if interleaved or self.rate:
                return "/api/v1/lineage", [[e] for e in events]
            return "/api/v1/lineage", [
                events[i : i + EVENTS_PER_RUN] for i in range(0, len(events), EVENTS_PER_RUN)
            ]
        arrays = [events[i : i + self.batch] for i in range(0, len(events), self.batch)]
        return "/api/v1/lineage/batch", [[b"[" + b",".join(a) + b"]"] for a in arrays]


def _scenarios(names: str, batch_clients: int) -> list[Scenario]:
    found = []
    for name in names.split(","):
        if name.startswith("r"):
            # Offered load: independent producers, one event per POST, over up to 64 connections.
            found.append(Scenario(f"1 per POST, {name[1:]}/s offered", 64, 0, float(name[1:])))
        elif name.startswith("b"):
            found.append(
                Scenario(f"/batch of {name[1:]}, {batch_clients} clients", batch_clients, int(name[1:]))
            )
        else:
            found.append(Scenario(f"1 per POST, {name} clients", int(name), 0))
    return found


def _start_server(
    src: Path | None, url: str, workers: int = 1, metrics_dir: str | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, "HEADWATER_DATABASE_URL": url}
    if metrics_dir is not None:
        # Every worker's metrics in one /metrics answer.
        env["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    if src is not None:
        env["PYTHONPATH"] = str(src / "backend")
    server = subprocess.Popen(
        [sys.executable, "-m", "headwater.cli", "serve", "--port", str(port), "--workers", str(workers)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=src or Path.cwd(),
    )
    for _ in range(300):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return server, port
        except httpx.TransportError:
            pass
        if server.poll() is not None:
            raise SystemExit(f"the server from {src or 'this checkout'} exited ({server.returncode})")
        time.sleep(0.2)
    raise SystemExit("the server did not become ready")


# The ingest turn's figures on /metrics (ingest/metrics.py): time held, transactions and their events.
_TURN_FIGURES = (
    "headwater_ingest_turn_held_seconds_sum",
    "headwater_ingest_transaction_events_count",
    "headwater_ingest_transaction_events_sum",
)


def _shown(value: float, spec: str) -> str:
    """``value`` formatted by ``spec``; "-" where the server measured had no such figure (NaN)."""
    return "-" if value != value else format(value, spec)


def _turn_figures(port: int) -> dict[str, float]:
    """The server's ingest turn figures so far (none from a server without them)."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return {
        name: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        for name in _TURN_FIGURES
        if line.startswith(name + " ")
    }


# Per table (partitions counted with their parent): bytes, live rows, dead rows, updates and of
# those the HOT ones (the new version on the old one's page, no index entry: PostgreSQL prunes the
# old version on a later visit of the page; any other leaves it for VACUUM).
STORAGE = """
SELECT coalesce(parent.relname, c.relname) AS name, sum(pg_total_relation_size(c.oid))::bigint AS bytes,
       sum(coalesce(s.n_live_tup, 0))::bigint AS live, sum(coalesce(s.n_dead_tup, 0))::bigint AS dead,
       sum(coalesce(s.n_tup_upd, 0))::bigint AS updates, sum(coalesce(s.n_tup_hot_upd, 0))::bigint AS hot
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
LEFT JOIN pg_class parent ON parent.oid = i.inhparent
LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.relkind = 'r'
GROUP BY 1
"""


class TableStorage(NamedTuple):
    bytes: int
    live: int
    dead: int
    updates: int
    hot: int


async def _storage(url: str, count: bool = True) -> dict[str, TableStorage]:
    """Bytes, live rows, dead rows, updates and HOT updates per table. Live rows are counted (unless ``count`` is false:
    the statistics' figure then): a database copied from a template (``--stored``) starts with no
    statistics, so they would show only the rows written since. Counted after the dead rows are
    read, as counting visits every page and reclaims what it can."""
    db = await asyncpg.connect(url)
    try:
        rows = await db.fetch(STORAGE)
        live = {r["name"]: r["live"] for r in rows}
        if count:
            live = {r["name"]: await db.fetchval(f'SELECT count(*) FROM "{r["name"]}"') for r in rows}
        return {
            r["name"]: TableStorage(r["bytes"], live[r["name"]], r["dead"], r["updates"], r["hot"])
            for r in rows
        }
    finally:
        await db.close()


async def _autovacuum_off(url: str) -> None:
    """What the store leaves behind, not what VACUUM has reclaimed meanwhile."""
    db = await asyncpg.connect(url)
    try:
        for table in await db.fetch(
            "SELECT c.oid::regclass::text AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public' AND c.relkind = 'r'"
        ):
            await db.execute(f"ALTER TABLE {table['name']} SET (autovacuum_enabled = false)")
    finally:
        await db.close()


def _store_first(port: int, count: int) -> None:
    """Other runs of the same jobs, earlier in time, so that the measured events find them stored:
    generated and posted as /batch arrays of 500 a few runs at a time (a million events would not
    fit in memory at once), with progress."""
    runs = -(-count // (4 * JOBS))
    started, done = time.monotonic(), 0
    for first in range(-runs, 0, 10):
        chunk = _encode(ingest_events(first_run=first, runs=min(10, -first)))[: count - done]
        post(port, "/api/v1/lineage/batch", Scenario("", 2, 500).chains(chunk)[1], 2)
        done += len(chunk)
        if done % 100_000 < len(chunk) or done == count:
            print(
                f"  stored {done:,} of {count:,} ({done / (time.monotonic() - started):,.0f}/s)",
                flush=True,
            )


def _template(src: Path | None) -> str:
    return f"{DATABASE}_stored_{'this' if src is None else src.name}"[:63]


async def _copy_of_stored(
    admin: asyncpg.Connection, src: Path | None, url: str, stored: int, workers: int
) -> None:
    """A fresh copy of a database holding the stored events, filled once per server source (a
    million events take an hour to post; a copy takes a minute)."""
    template = _template(src)
    if not await admin.fetchval("SELECT true FROM pg_database WHERE datname = $1", template):
        await recreate_database(admin, DATABASE)
        server, port = _start_server(src, url, workers)
        try:
            _store_first(port, stored)
        finally:
            server.terminate()
            server.wait(timeout=30)
        await admin.execute("CHECKPOINT")
        await admin.execute(f'ALTER DATABASE "{DATABASE}" RENAME TO "{template}"')
    await admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
    await admin.execute(f'CREATE DATABASE "{DATABASE}" TEMPLATE "{template}"')


async def _drop_templates(sources: list[Path | None]) -> None:
    admin = await asyncpg.connect(SERVER_URL)
    try:
        for src in sources:
            await admin.execute(f'DROP DATABASE IF EXISTS "{_template(src)}" WITH (FORCE)')
    finally:
        await admin.close()


async def measure(
    scenario: Scenario,
    src: Path | None,
    events: list[bytes],
    stored: int,
    storage: bool = False,
    workers: int = 1,
    interleaved: bool = False,
) -> dict[str, Any]:
    admin = await asyncpg.connect(SERVER_URL)
    try:
        url = database_url(DATABASE)
        if stored:
            await _copy_of_stored(admin, src, url, stored, workers)
        else:
            await recreate_database(admin, DATABASE)
        preload = await admin.fetchval("SELECT current_setting('shared_preload_libraries')")
        statements = "pg_stat_statements" in preload
        if statements:
            db = await asyncpg.connect(url)
            await db.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            await db.close()
        metrics_dir = tempfile.mkdtemp(prefix="headwater-bench-metrics-")
        server, port = _start_server(src, url, workers, metrics_dir)
        try:
            if storage:
                await _autovacuum_off(url)
            await admin.execute("CHECKPOINT")
            before = await _storage(url, count=False) if storage else {}
            path, chains = scenario.chains(events, interleaved)
            probe = Probe(admin, server.pid, statements)
            turn_before = await asyncio.to_thread(_turn_figures, port)
            await probe.start()
            seconds, latencies, retried, client_cpu = await asyncio.to_thread(
                post, port, path, chains, scenario.clients, scenario.rate
            )
            figures = await probe.stop()
            turn_after = await asyncio.to_thread(_turn_figures, port)
        finally:
            server.terminate()
            server.wait(timeout=30)
            shutil.rmtree(metrics_dir, ignore_errors=True)
        turn = {name: turn_after[name] - turn_before.get(name, 0) for name in turn_after}
        # Once the server's connections have closed: a backend reports its row counts to the
        # statistics only from time to time (up to 10 s late) and when it exits.
        after: dict[str, TableStorage] = {}
        if storage:
            for _ in range(100):
                if not await admin.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", DATABASE
                ):
                    break
                await asyncio.sleep(0.1)
            after = await _storage(url)
        await admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
    finally:
        await admin.close()
    latencies.sort()
    n = len(events)
    return {
        "rate": n / seconds,
        "p50": statistics.median(latencies) * 1000,
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "server_cpu": figures["server_cpu"] * 1000 / n,
        "pg_cpu": figures["pg_cpu"] * 1000 / n,
        "client_cpu": client_cpu * 1000 / n,
        "xacts": figures["xacts"] / n,
        "written": figures["written"] / n,
        "wal": figures["wal"] / n,
        "statements": figures.get("statements", float("nan")) / n,
        "retried": retried,
        # Of the time posting, the share an ingest transaction held the turn (every process's
        # transactions take turns), and the events per transaction; NaN from a server without them.
        "turn_held": turn["headwater_ingest_turn_held_seconds_sum"] / seconds if turn else float("nan"),
        "xact_events": (
            turn["headwater_ingest_transaction_events_sum"]
            / max(1, turn["headwater_ingest_transaction_events_count"])
            if turn
            else float("nan")
        ),
        "storage": {
            table: t._replace(bytes=t.bytes - before[table].bytes if table in before else t.bytes)
            for table, t in after.items()
        },
    }


def _print_storage(label: str, n: int, storage: dict[str, TableStorage]) -> None:
    """Bytes each table grew by per event, its dead rows against its live ones, and its updates."""
    total = sum(t.bytes for t in storage.values())
    print(
        f"\nStorage, {label}: {total / n / 1024:.2f} KB per event ({total / 2**20:.1f} MB for {n:,} events), autovacuum off"
    )
    print("\n| table | bytes/event | live rows | dead rows | dead/live | updates (HOT) |")
    print("|---|---:|---:|---:|---:|---:|")
    for table, t in sorted(storage.items(), key=lambda kv: -kv[1].bytes):
        if t.bytes <= 0 and not t.dead:
            continue
        ratio = f"{t.dead / t.live:.0%}" if t.live else "-"
        print(
            f"| {table} | {t.bytes / n:,.0f} | {t.live:,} | {t.dead:,} | {ratio} | {t.updates:,} ({t.hot:,}) |"
        )


def _first_runs(
    rows: list[tuple[str, str, int, dict[str, Any]]],
) -> list[tuple[str, str, dict[str, Any]]]:
    """The first run of each scenario, per server measured."""
    return [(name, label, r) for name, label, attempt, r in rows if attempt == 1]


def _encode(events: list[dict[str, Any]]) -> list[bytes]:
    return [json.dumps(e, separators=(",", ":")).encode() for e in events]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each figure (default 2)")
    parser.add_argument("--stored", type=int, default=0, help="events stored before measuring")
    parser.add_argument("--server-src", type=Path, help="another checkout to measure alongside")
    parser.add_argument("--scenarios", default="1,8,32,128,b100,b500")
    parser.add_argument("--batch-clients", type=int, default=4, help="clients posting /batch arrays")
    parser.add_argument(
        "--storage",
        action="store_true",
        help="with autovacuum off on the tables, print bytes per event and dead rows per table",
    )
    parser.add_argument("--workers", default="1", help="server processes, e.g. 1,2 to compare")
    parser.add_argument(
        "--interleaved",
        action="store_true",
        help="one event per POST: each event on its own, not an application run's events in order",
    )
    args = parser.parse_args()
    events = _encode(ingest_events())
    stored = args.stored
    worker_counts = [int(w) for w in args.workers.split(",")]
    # Per worker count, the other checkout (if any) first, then this one.
    sources: list[tuple[str, Path | None, int]] = []
    for w in worker_counts:
        workers = "" if len(worker_counts) == 1 else f", {w} workers"
        if args.server_src:
            sources.append((f"{args.server_src}{workers}", args.server_src.resolve(), w))
        sources.append((f"this{workers}", None, w))
    print(f"{len(events):,} events, {args.stored:,} stored first; {os.cpu_count()} cores", flush=True)
    rows = []
    for scenario in _scenarios(args.scenarios, args.batch_clients):
        for attempt in range(args.repeat):
            for label, src, workers in sources:
                r = asyncio.run(
                    measure(scenario, src, events, stored, args.storage, workers, args.interleaved)
                )
                rows.append((scenario.name, label, attempt + 1, r))
                # Statements are counted only where pg_stat_statements is preloaded.
                statements = (
                    f"{r['statements']:.1f} statements, " if r["statements"] == r["statements"] else ""
                )
                print(
                    f"{scenario.name:<28} {label:<26} #{attempt + 1}: {r['rate']:7,.0f} events/s"
                    f"  p50 {r['p50']:7.1f} ms  p99 {r['p99']:7.1f} ms"
                    f"  server {r['server_cpu']:5.2f} s  pg {r['pg_cpu']:5.2f} s  clients {r['client_cpu']:5.2f} s per 1,000"
                    f"  {statements}{r['xacts']:.2f} xacts, {r['written']:.0f} rows written, {r['wal']:,.0f} WAL bytes per event"
                    f"  turn held {_shown(r['turn_held'], '.0%')}, {_shown(r['xact_events'], '.1f')} events per ingest transaction"
                    f"  ({r['retried']} retried 503s)",
                    flush=True,
                )
    counted = (
        "statements/event"
        if rows and rows[0][3]["statements"] == rows[0][3]["statements"]
        else "xacts/event"
    )
    print(
        f"\n| scenario | server | run | events/s | p50 ms | p99 ms | server CPU s/1k | PG CPU s/1k | client CPU s/1k | {counted} | rows written/event | WAL bytes/event | turn held | events/ingest xact |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, label, attempt, r in rows:
        counted_value = r["statements"] if counted == "statements/event" else r["xacts"]
        print(
            f"| {name} | {label} | {attempt} | {r['rate']:,.0f} | {r['p50']:.1f} | {r['p99']:.1f} |"
            f" {r['server_cpu']:.2f} | {r['pg_cpu']:.2f} | {r['client_cpu']:.2f} | {counted_value:.2f} | {r['written']:.0f} | {r['wal']:,.0f} |"
            f" {_shown(r['turn_held'], '.0%')} | {_shown(r['xact_events'], '.1f')} |"
        )
    if stored:
        asyncio.run(_drop_templates([src for _, src, _ in sources]))
    if args.storage:
        for name, label, r in _first_runs(rows):
            _print_storage(f"{label}, {name}", len(events), r["storage"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
