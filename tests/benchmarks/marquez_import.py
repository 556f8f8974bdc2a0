"""Marquez import benchmark: `headwater import marquez` against `/api/v1/lineage/batch`, same events.

Generates the ingest benchmark's Spark-shaped events (250 jobs, 4 events per run; ``--events``
rounds to whole runs), stores them in a database laid out as Marquez's `lineage_events`, then in
one run, alternating: imports them with ``headwater import marquez`` (a subprocess, end to end:
migrations, reading, validating, writing) into an empty database, and posts them to ``headwater
serve`` on another empty database as `/batch` arrays of 500 from 2 clients. Prints events/s of
each and their ratio. ``--import-src PATH`` (an earlier checkout) times its import too, in the same
alternation, so that a change to the import is measured against the code before it.

Run: ``python tests/benchmarks/marquez_import.py [--events 100000] [--repeat 1] [--import-src PATH]``.
Needs PostgreSQL at
$HEADWATER_BENCH_SERVER_URL (default postgresql://postgres@127.0.0.1:5432/postgres); creates and
drops headwater_mqz_bench_source and headwater_mqz_bench_target.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
from ingest import (
    JOBS,
    SERVER_URL,
    Scenario,
    _encode,
    _start_server,
    ingest_events,
    post,
)

SOURCE = "headwater_mqz_bench_source"
TARGET = "headwater_mqz_bench_target"  # its own: the ingest benchmark may run meanwhile
MARQUEZ_DDL = """
CREATE TABLE lineage_events (
    event_time timestamptz, event jsonb, event_type text, run_uuid uuid, job_name text,
    job_namespace text, producer text, created_at timestamptz DEFAULT now(),
    _event_type varchar(64) NOT NULL DEFAULT 'RUN_EVENT'
);
"""


def _url(database: str) -> str:
    return SERVER_URL.rsplit("/", 1)[0] + f"/{database}"


async def fill_source(events: list[dict]) -> None:
    admin = await asyncpg.connect(SERVER_URL)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{SOURCE}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{SOURCE}"')
    finally:
        await admin.close()
    conn = await asyncpg.connect(_url(SOURCE))
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


async def time_import(n: int, src: Path | None = None) -> float:
    await fresh_target()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env["HEADWATER_DATABASE_URL"] = _url(TARGET)
    if src is not None:
        env["PYTHONPATH"] = str(src / "backend")
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "headwater.cli",
                "import",
                "marquez",
                "--from",
                _url(SOURCE),
                "--quiet",
            ],
            env=env,
            cwd=tmp,
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.monotonic() - start
    if done.returncode != 0 or f"imported {n:,}," not in done.stderr:
        raise SystemExit(f"the import failed or imported too little:\n{done.stderr[-3000:]}")
    return seconds


async def time_batch(bodies: list[bytes]) -> float:
    await fresh_target()
    server, port = _start_server(None, _url(TARGET))
    try:
        path, arrays = Scenario("", 2, 500).bodies(bodies)
        seconds, _, _ = await asyncio.to_thread(post, port, path, arrays, 2)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return seconds


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
    rows = []
    for i in range(args.repeat):
        before = n / await time_import(n, args.import_src) if args.import_src else None
        imported = n / await time_import(n)
        batched = n / await time_batch(bodies)
        rows.append((i + 1, before, imported, batched))
        print(
            f"run {i + 1}: "
            + (f"import before {before:,.0f} events/s, " if before else "")
            + f"import {imported:,.0f} events/s, /batch {batched:,.0f} events/s",
            file=sys.stderr,
        )
    admin = await asyncpg.connect(SERVER_URL)
    try:
        for database in (SOURCE, TARGET):
            await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    finally:
        await admin.close()
    before_head = "`--import-src`'s import | " if args.import_src else ""
    print(
        f"| run | {before_head}`headwater import marquez` | `/batch` of 500, 2 clients | import / batch |"
        f"\n|---|{'---:|' * (4 if args.import_src else 3)}"
    )
    for run, before, imp, batch in rows:
        before_cell = f"{before:,.0f} events/s | " if before else ""
        print(
            f"| {run} | {before_cell}{imp:,.0f} events/s | {batch:,.0f} events/s | {imp / batch:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
