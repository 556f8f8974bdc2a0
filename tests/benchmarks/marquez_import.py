"""Marquez import benchmark: `headwater import marquez` against `/api/v1/lineage/batch`, same events.

Generates the ingest benchmark's Spark-shaped events (250 jobs, 4 events per run; ``--events``
rounds to whole runs), stores them in a database laid out as Marquez's `lineage_events`, then in
one run, alternating: imports them with ``headwater import marquez`` (a subprocess, end to end:
migrations, reading, validating, writing) into an empty database, and posts them to ``headwater
serve`` on another empty database as `/batch` arrays of 500 from 2 clients. Prints events/s of
each and their ratio, and the CPU seconds per 1,000 events each side spent: the importing process, or
the server's process tree and its clients, and the PostgreSQL backends serving them (sampled twice
a second, so that the import's and /batch's work per event can be compared on a machine whose other
load changes the rates). ``--import-src PATH`` (an earlier checkout) times its import too, in the same
alternation, so that a change to the import is measured against the code before it.

Run: ``python tests/benchmarks/marquez_import.py [--events 100000] [--repeat 1] [--import-src PATH]``.
Needs PostgreSQL at
$HEADWATER_BENCH_SERVER_URL (default postgresql://postgres@127.0.0.1:5432/postgres); creates and
drops headwater_mqz_bench_source and headwater_mqz_bench_target.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import psutil
from ingest import (
    JOBS,
    Scenario,
    _encode,
    _start_server,
    ingest_events,
    post,
)
from tests.benchmarks.databases import SERVER_URL, database_url, recreate_database

SOURCE = "headwater_mqz_bench_source"
TARGET = "headwater_mqz_bench_target"  # its own: the ingest benchmark may run meanwhile
MARQUEZ_DDL = """
CREATE TABLE lineage_events (
    event_time timestamptz, event jsonb, event_type text, run_uuid uuid, job_name text,
    job_namespace text, producer text, created_at timestamptz DEFAULT now(),
    _event_type varchar(64) NOT NULL DEFAULT 'RUN_EVENT'
);
"""


async def fill_source(events: list[dict]) -> None:
    admin = await asyncpg.connect(SERVER_URL)
    try:
        url = await recreate_database(admin, SOURCE)
    finally:
        await admin.close()
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(MARQUEZ_DDL)
        received = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
        await conn.copy_records_to_table(
            "lineage_events",
            columns=["event_time", "event", "event_type", "job_name", "job_namespace", "created_at"],
            records=(
                (
                    dt.datetime.fromisoformat(e["eventTime"].replace("Z", "+00:00")),
                    json.dumps(e),
                    e["eventType"],
                    e["job"]["name"],
                    e["job"]["namespace"],
                    received + dt.timedelta(milliseconds=i),
                )
                for i, e in enumerate(events)
            ),
        )
        await conn.execute("CREATE INDEX ON lineage_events (event_time DESC)")
        await conn.execute("ANALYZE lineage_events")
    finally:
        await conn.close()


async def fresh_target() -> None:
    admin = await asyncpg.connect(SERVER_URL)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{TARGET}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{TARGET}"')
    finally:
        await admin.close()


class CpuSampler:
    """CPU seconds, while it runs, of this process's children (the import, or the server and the
    posting clients) and of the PostgreSQL backends of some databases.

    Sampled every half second: each process counts from its first sample to its last, so that a
    server's start is left out as the import's own is not timed before it runs; a process that ends
    between two samples loses at most its last half second."""

    def __init__(self, databases: list[str]) -> None:
        self.databases = databases
        self.first: dict[tuple[str, int], float] = {}
        self.last: dict[tuple[str, int], float] = {}

    def _sample(self, side: str, processes: list[psutil.Process]) -> None:
        for process in processes:
            try:
                times = process.cpu_times()
            except psutil.Error:
                continue
            self.first.setdefault((side, process.pid), times.user + times.system)
            self.last[(side, process.pid)] = times.user + times.system

    async def _once(self, admin: asyncpg.Connection) -> None:
        self._sample("client", psutil.Process().children(recursive=True))
        rows = await admin.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = ANY($1::text[]) AND pid <> pg_backend_pid()",
            self.databases,
        )
        backends = []
        for row in rows:
            with contextlib.suppress(psutil.Error):
                backends.append(psutil.Process(row["pid"]))
        self._sample("postgres", backends)

    async def run(self) -> None:
        admin = await asyncpg.connect(SERVER_URL)
        try:
            while True:
                await self._once(admin)
                await asyncio.sleep(0.5)
        finally:
            await self._once(admin)
            await admin.close()

    def seconds(self, side: str) -> float:
        return sum(v - self.first[k] for k, v in self.last.items() if k[0] == side)


async def time_import(n: int, src: Path | None = None) -> tuple[float, CpuSampler]:
    await fresh_target()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env["HEADWATER_DATABASE_URL"] = database_url(TARGET)
    if src is not None:
        env["PYTHONPATH"] = str(src / "backend")
    cpu = CpuSampler([SOURCE, TARGET])
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headwater.cli",
                "import",
                "marquez",
                "--from",
                database_url(SOURCE),
                "--quiet",
            ],
            env=env,
            cwd=tmp,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        sampling = asyncio.create_task(cpu.run())
        try:
            _, stderr = await asyncio.to_thread(child.communicate)
        finally:
            sampling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampling
        seconds = time.monotonic() - start
    if child.returncode != 0 or f"imported {n:,}," not in stderr:
        raise SystemExit(f"the import failed or imported too little:\n{stderr[-3000:]}")
    return seconds, cpu


async def time_batch(bodies: list[bytes]) -> tuple[float, CpuSampler]:
    await fresh_target()
    server, port = _start_server(None, database_url(TARGET))
    # The server and the posting clients (this process's children): what the import does in one.
    cpu = CpuSampler([TARGET])
    sampling = asyncio.create_task(cpu.run())
    try:
        path, arrays = Scenario("", 2, 500).chains(bodies)
        seconds, _, _, _ = await asyncio.to_thread(post, port, path, arrays, 2)
    finally:
        sampling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampling
        server.terminate()
        server.wait(timeout=30)
    return seconds, cpu


class Figure:
    """One timed side: events/s and the CPU it took per event."""

    def __init__(self, n: int, seconds: float, cpu: CpuSampler) -> None:
        self.rate = n / seconds
        self.client_ms = cpu.seconds("client") / n * 1000
        self.postgres_ms = cpu.seconds("postgres") / n * 1000

    def cell(self) -> str:
        return f"{self.rate:,.0f} events/s, {self.client_ms:.2f} + {self.postgres_ms:.2f} ms"


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--import-src", type=Path, default=None, help="an earlier checkout to time too")
    args = parser.parse_args()
    runs = max(1, args.events // (JOBS * 4))
    events = ingest_events(runs=runs)
    n = len(events)
    print(f"{n:,} events; filling the Marquez-shaped source…", file=sys.stderr)
    await fill_source(events)
    bodies = _encode(events)
    rows: list[tuple[int, Figure | None, Figure, Figure]] = []
    for i in range(args.repeat):
        before = Figure(n, *await time_import(n, args.import_src)) if args.import_src else None
        imported = Figure(n, *await time_import(n))
        batched = Figure(n, *await time_batch(bodies))
        rows.append((i + 1, before, imported, batched))
        print(
            f"run {i + 1}: "
            + (f"import before {before.cell()}, " if before else "")
            + f"import {imported.cell()}, /batch {batched.cell()}",
            file=sys.stderr,
        )
    admin = await asyncpg.connect(SERVER_URL)
    try:
        for database in (SOURCE, TARGET):
            await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    finally:
        await admin.close()
    print("events/s; CPU ms per event: Headwater's processes + PostgreSQL's backends")
    before_head = "`--import-src`'s import | " if args.import_src else ""
    print(
        f"| run | {before_head}`headwater import marquez` | `/batch` of 500, 2 clients | import / batch |"
        f"\n|---|{'---:|' * (4 if args.import_src else 3)}"
    )
    for run, before, imp, batch in rows:
        before_cell = f"{before.cell()} | " if before else ""
        print(f"| {run} | {before_cell}{imp.cell()} | {batch.cell()} | {imp.rate / batch.rate:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
