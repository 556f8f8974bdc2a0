"""Write-path benchmark: the ingest benchmark's events written alone, without HTTP, a group at a time.

What a server's writer does with a group of requests, and nothing else: the 5,000 Spark-shaped events
of tests/benchmarks/ingest.py, validated and prepared first (not timed), are written in the order
generated, ``GROUP`` events per transaction, each transaction waiting for its turn and writing with
``write_prepared`` on one connection, as ``IngestQueue`` does. Groups of 16 to 32 are what one event
per POST from 32 clients gives; groups of 500 are a ``/batch`` of 500.

Printed per group size: events/s and wall time per event; the CPU per event of this process (the
writer's Python: building rows, encoding parameters, reading results) and of its PostgreSQL backend;
statements and transactions per event. With ``--statements``, each statement's calls per group and
its time per call as the client sees it (PostgreSQL's work plus the round trip), heaviest first.

``--src PATH`` measures another checkout (e.g. a ``git worktree`` of an earlier commit) on the same
events, alternating with this one: each measurement runs in a process of its own whose
``headwater`` is that checkout's. Every measurement starts from an empty database.

Run: ``python tests/benchmarks/write_path.py [--groups 1,16,500] [--repeat 2] [--src PATH]
[--statements]``. Needs PostgreSQL at $HEADWATER_BENCH_SERVER_URL (default
postgresql://postgres@127.0.0.1:5432/postgres); creates and drops headwater_bench_write_path (or
$HEADWATER_BENCH_DATABASE).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import asyncpg
import psutil
from ingest import _encode, ingest_events
from tests.benchmarks.databases import SERVER_URL, fresh_database

DATABASE = os.environ.get("HEADWATER_BENCH_DATABASE", "headwater_bench_write_path")


def _statement_name(query: str) -> str:
    """A statement by its first line: the query file's description of it, or its SQL."""
    first = next((line.strip() for line in query.splitlines() if line.strip()), "")
    return first.removeprefix("-- ")[:72]


async def _commits(admin: asyncpg.Connection) -> int:
    count: int = await admin.fetchval(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = $1", DATABASE
    )
    return count


async def _measure(group: int, statements: bool) -> dict[str, Any]:
    """Runs in the measuring process, whose ``headwater`` is the checkout measured."""
    from headwater.db.pool import PLAN_SETTINGS, register_codecs
    from headwater.ingest.service import ingest_turn, prepare_events, write_prepared
    from headwater.ingest.validate import validate_event

    url = await fresh_database(DATABASE)
    admin = await asyncpg.connect(SERVER_URL)
    try:
        prepared = prepare_events(
            [validate_event(json.loads(body)) for body in _encode(ingest_events())], []
        )
        conn = await asyncpg.connect(url, server_settings=dict(PLAN_SETTINGS))
        try:
            await register_codecs(conn)
            backend = psutil.Process(await conn.fetchval("SELECT pg_backend_pid()"))
            calls: dict[str, list[float]] = defaultdict(list)
            if statements:
                conn.add_query_logger(lambda q: calls[_statement_name(q.query)].append(q.elapsed))
            xacts_before = await _commits(admin)
            pg_before = sum(backend.cpu_times()[:2])
            cpu_before, wall_before = time.process_time(), time.perf_counter()
            for start in range(0, len(prepared), group):
                async with ingest_turn(conn):
                    await write_prepared(conn, prepared[start : start + group], [])
            wall = time.perf_counter() - wall_before
            cpu = time.process_time() - cpu_before
            pg = sum(backend.cpu_times()[:2]) - pg_before
            # A backend reports its counts to the statistics when it goes idle (at most once a
            # second): wait for the last of them.
            await asyncio.sleep(1.1)
            xacts = await _commits(admin) - xacts_before
        finally:
            await conn.close()
        await admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
    finally:
        await admin.close()
    n = len(prepared)
    groups = -(-n // group)
    return {
        "rate": n / wall,
        "wall_ms": wall * 1000 / n,
        "python_ms": cpu * 1000 / n,
        "pg_ms": pg * 1000 / n,
        # BEGIN and COMMIT are statements too, as the turn's; the logger sees every one.
        "statements": sum(len(v) for v in calls.values()) / n if statements else None,
        "xacts": xacts / n,
        "by_statement": sorted(
            (
                (name, len(times) / groups, sum(times) / len(times) * 1e6, sum(times) * 1000)
                for name, times in calls.items()
            ),
            key=lambda row: -row[3],
        ),
    }


def _child(group: int, statements: bool) -> None:
    # As the server and the consumer run: start-up objects frozen, collections rare (see
    # headwater.ingest.service.rare_collections). Without it the collector's passes over the
    # prepared events would be a large part of what is measured.
    from headwater.ingest.service import rare_collections

    gc.freeze()
    with rare_collections():
        figures = asyncio.run(_measure(group, statements))
    print(json.dumps(figures))


def _run(src: Path | None, group: int, statements: bool) -> dict[str, Any]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src / "backend")
    child = [sys.executable, __file__, "--child", str(group)] + (["--statements"] if statements else [])
    done = subprocess.run(child, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"measuring {src or 'this checkout'} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _print_tables(rows: list[tuple[int, str, int, dict[str, Any]]], statements: bool) -> None:
    print(
        "\n| events per transaction | code | run | events/s | wall ms/event | Python CPU ms/event"
        " | PostgreSQL CPU ms/event |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|")
    for group, label, attempt, r in rows:
        print(
            f"| {group} | {label} | {attempt} | {r['rate']:,.0f} | {r['wall_ms']:.3f} |"
            f" {r['python_ms']:.3f} | {r['pg_ms']:.3f} |"
        )
    if statements:
        for group, label, attempt, r in rows:
            if label != "this" or attempt != 1:
                continue
            print(f"\nGroups of {group}: each statement, heaviest first (client's view)\n")
            print("| statement | calls per group | µs per call | ms in all |")
            print("|---|---:|---:|---:|")
            for name, per_group, per_call, total in r["by_statement"][:20]:
                print(f"| {name} | {per_group:.2f} | {per_call:,.0f} | {total:,.0f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", default="1,16,500", help="events per transaction, e.g. 16,500")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each figure (default 2)")
    parser.add_argument("--src", type=Path, help="another checkout to measure alongside")
    parser.add_argument("--statements", action="store_true", help="time each statement (this checkout)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.statements)
        return 0
    sources: list[tuple[str, Path | None]] = [("this", None)]
    if args.src:
        sources.insert(0, (str(args.src), args.src.resolve()))
    rows = []
    for group in (int(g) for g in args.groups.split(",")):
        for attempt in range(args.repeat):
            for label, src in sources:
                r = _run(src, group, args.statements and src is None)
                rows.append((group, label, attempt + 1, r))
                counted = f"  {r['statements']:.2f} statements" if r["statements"] is not None else ""
                print(
                    f"groups of {group:<4} {label:<24} #{attempt + 1}: {r['rate']:7,.0f} events/s"
                    f"  {r['wall_ms']:.3f} ms per event: Python {r['python_ms']:.3f},"
                    f" PostgreSQL {r['pg_ms']:.3f}{counted}, {r['xacts']:.3f} transactions per event",
                    flush=True,
                )
    _print_tables(rows, args.statements)
    return 0


if __name__ == "__main__":
    sys.exit(main())
