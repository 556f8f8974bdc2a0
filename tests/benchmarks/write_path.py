"""Write-path benchmark: the ingest benchmark's events written alone, without HTTP, a group at a time.

What a server's writer does with a group of requests, and nothing else: the 5,000 Spark-shaped events
of tests/benchmarks/ingest.py, validated and prepared first (not timed), are written in the order
generated, ``GROUP`` events per transaction, each transaction waiting for its turn and writing with
``write_prepared`` on one connection, as ``IngestQueue`` does. Groups of 16 to 32 are what one event
per POST from 32 clients gives; groups of 500 are a ``/batch`` of 500. In the order generated, a
group holds an application run's events one after another (as a ``/batch`` does), so a run's START
and COMPLETE share a group and are written in successive waves; ``--clients 32`` writes them in
the order 32 clients posting one event per request send them instead (each client a run's events in
order, its next once the one before is answered), the order of the server's groups.

With ``--floor``, the same events, groups and figures for what every event appends whatever the
design: its raw event (the store's own insert, compressed as ingest does), its run's row (one per
run, its events folded in memory), its state, the datasets the run touched and a change, each a
set-based statement per group, into tables shaped like the model's (without their foreign keys).
That is the cost of a write whose cost per event does not depend on what an event repeats, before
any lookup of what is stored: against it, the rest of the write is the model's upkeep.

Printed per group size: events/s and wall time per event; the CPU per event of this process (the
writer's Python: building rows, encoding parameters, reading results) and of its PostgreSQL backend;
statements and transactions per event. With ``--statements``, each statement's calls per group and
its time per call as the client sees it (PostgreSQL's work plus the round trip), heaviest first.

``--src PATH`` measures another checkout (e.g. a ``git worktree`` of an earlier commit) on the same
events, alternating with this one: each measurement runs in a process of its own whose
``headwater`` is that checkout's. Every measurement starts from an empty database.

Run: ``python tests/benchmarks/write_path.py [--groups 1,16,500] [--repeat 2] [--src PATH]
[--statements] [--floor] [--clients N]``. Needs PostgreSQL at $HEADWATER_BENCH_SERVER_URL (default
postgresql://postgres@127.0.0.1:5432/postgres); creates and drops headwater_bench_write_path (or
$HEADWATER_BENCH_DATABASE).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import asyncpg
import psutil
from ingest import EVENTS_PER_RUN, _encode, ingest_events
from tests.benchmarks.databases import SERVER_URL, fresh_database

DATABASE = os.environ.get("HEADWATER_BENCH_DATABASE", "headwater_bench_write_path")

# The floor's tables (see the module): runs, run_states and run_datasets as the model has them, less
# the foreign keys and the columns only the model's upkeep fills.
_FLOOR_TABLES = """
CREATE TABLE floor_runs (
    run_uuid uuid PRIMARY KEY, job_namespace text NOT NULL, job_name text NOT NULL, parent_run_uuid uuid,
    current_state text, current_state_at timestamptz, facets jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL
) WITH (fillfactor = 60);
CREATE INDEX ON floor_runs (job_namespace, job_name, created_at DESC);
CREATE TABLE floor_run_states (
    run_uuid uuid NOT NULL, state text NOT NULL, event_time timestamptz NOT NULL,
    PRIMARY KEY (run_uuid, event_time, state)
);
CREATE TABLE floor_run_datasets (
    run_uuid uuid NOT NULL, dataset_uuid uuid NOT NULL, direction text NOT NULL,
    first_seen_at timestamptz NOT NULL, last_seen_at timestamptz NOT NULL,
    PRIMARY KEY (run_uuid, direction, dataset_uuid)
);
CREATE INDEX ON floor_run_datasets (dataset_uuid, direction);
"""
_FLOOR_RUNS = """
INSERT INTO floor_runs AS r
SELECT x.run_uuid, x.job_namespace, x.job_name, x.parent_run_uuid, x.state, x.at, x.facets, x.at, x.at
FROM jsonb_to_recordset($1::jsonb)
     AS x(run_uuid uuid, job_namespace text, job_name text, parent_run_uuid uuid, state text,
          at timestamptz, facets jsonb)
ON CONFLICT (run_uuid) DO UPDATE SET
    current_state = excluded.current_state, current_state_at = excluded.current_state_at,
    facets = r.facets || excluded.facets, updated_at = excluded.updated_at
"""
_FLOOR_STATES = """
INSERT INTO floor_run_states SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[])
ON CONFLICT DO NOTHING
"""
_FLOOR_RUN_DATASETS = """
INSERT INTO floor_run_datasets AS d
SELECT run_uuid, dataset_uuid, direction, at, at
FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[]) AS t(run_uuid, dataset_uuid, direction, at)
ON CONFLICT (run_uuid, direction, dataset_uuid) DO UPDATE SET last_seen_at = excluded.last_seen_at
WHERE excluded.last_seen_at > d.last_seen_at
"""


async def _write_floor(conn: asyncpg.Connection, group: list[Any]) -> None:
    """The floor's writes of a group of prepared events (see the module), in the caller's transaction."""
    from headwater.db.pool import json_text
    from headwater.ingest.service import raw_event_row
    from headwater.store import changes as change_store
    from headwater.store import events as event_store

    await event_store.insert_raw_events(conn, [raw_event_row(p) for p in group])
    events = [p.normalized for p in group]
    runs: dict[Any, dict[str, Any]] = {}
    for n in events:
        run = runs.get(n.run_id)
        runs[n.run_id] = {
            "run_uuid": n.run_id,
            "job_namespace": n.job_namespace,
            "job_name": n.job_name,
            "parent_run_uuid": n.parent_run_id,
            "state": n.event_type,
            "at": n.event_time,
            "facets": {**run["facets"], **n.run_facets} if run else n.run_facets,
        }
    await conn.execute(_FLOOR_RUNS, json_text(list(runs.values())))
    await conn.execute(
        _FLOOR_STATES,
        [n.run_id for n in events],
        [n.event_type for n in events],
        [n.event_time for n in events],
    )
    # (run, dataset, direction) -> the latest time the group's events touched it
    touched: dict[tuple[Any, uuid.UUID, str], Any] = {}
    for n in events:
        for direction, defs in (("INPUT", n.inputs), ("OUTPUT", n.outputs)):
            for d in defs:
                key = (n.run_id, uuid.uuid5(uuid.NAMESPACE_URL, f"{d.namespace}/{d.name}"), direction)
                touched[key] = max(touched.get(key, n.event_time), n.event_time)
    if touched:
        rows = [(*key, at) for key, at in touched.items()]
        await conn.execute(_FLOOR_RUN_DATASETS, *map(list, zip(*rows, strict=True)))
    await change_store.insert_changes(
        conn,
        [
            change_store.Change(
                "RUN_STATE", f"job:{n.job_namespace}:{n.job_name}", n.job_namespace, n.event_time
            )
            for n in events
        ],
    )


def _statement_name(query: str) -> str:
    """A statement by its first line: the query file's description of it, or its SQL."""
    first = next((line.strip() for line in query.splitlines() if line.strip()), "")
    return first.removeprefix("-- ")[:72]


async def _commits(admin: asyncpg.Connection) -> int:
    count: int = await admin.fetchval(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = $1", DATABASE
    )
    return count


def client_order(events: list[Any], clients: int) -> list[Any]:
    """The events in the order ``clients`` clients posting one event per request hand them to the
    server: each client posts an application run's events in order, its next once the one before is
    answered, then takes the next run; the server sees one event of each client at a time."""
    runs = iter([events[i : i + EVENTS_PER_RUN] for i in range(0, len(events), EVENTS_PER_RUN)])
    posting = [list(run) for run in itertools.islice(runs, clients)]
    ordered = []
    while posting:
        still = []
        for run in posting:
            ordered.append(run.pop(0))
            if run:
                still.append(run)
            elif (following := next(runs, None)) is not None:
                still.append(list(following))
        posting = still
    return ordered


async def _measure(group: int, statements: bool, floor: bool, clients: int) -> dict[str, Any]:
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
        if clients:
            prepared = client_order(prepared, clients)
        conn = await asyncpg.connect(url, server_settings=dict(PLAN_SETTINGS))
        try:
            await register_codecs(conn)
            if floor:
                await conn.execute(_FLOOR_TABLES)
            backend = psutil.Process(await conn.fetchval("SELECT pg_backend_pid()"))
            calls: dict[str, list[float]] = defaultdict(list)
            if statements:
                conn.add_query_logger(lambda q: calls[_statement_name(q.query)].append(q.elapsed))
            xacts_before = await _commits(admin)
            pg_before = sum(backend.cpu_times()[:2])
            cpu_before, wall_before = time.process_time(), time.perf_counter()
            for start in range(0, len(prepared), group):
                async with ingest_turn(conn):
                    if floor:
                        await _write_floor(conn, prepared[start : start + group])
                    else:
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


def _child(group: int, statements: bool, floor: bool, clients: int) -> None:
    # As the server and the consumer run: start-up objects frozen, collections rare (see
    # headwater.ingest.service.rare_collections). Without it the collector's passes over the
    # prepared events would be a large part of what is measured.
    from headwater.ingest.service import rare_collections

    gc.freeze()
    with rare_collections():
        figures = asyncio.run(_measure(group, statements, floor, clients))
    print(json.dumps(figures))


def _run(
    src: Path | None, group: int, statements: bool, floor: bool = False, clients: int = 0
) -> dict[str, Any]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src / "backend")
    child = [sys.executable, __file__, "--child", str(group)]
    child += (["--statements"] if statements else []) + (["--floor"] if floor else [])
    child += ["--clients", str(clients)]
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
    parser.add_argument(
        "--floor", action="store_true", help="also measure the appends every design makes (see above)"
    )
    parser.add_argument(
        "--clients",
        type=int,
        default=0,
        help="write the events in the order N clients posting one event per request send them "
        "(default: the order generated, a run's events one after another)",
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.statements, args.floor, args.clients)
        return 0
    sources: list[tuple[str, Path | None]] = [("this", None)]
    if args.src:
        sources.insert(0, (str(args.src), args.src.resolve()))
    if args.floor:
        sources.append(("floor", None))
    rows = []
    for group in (int(g) for g in args.groups.split(",")):
        for attempt in range(args.repeat):
            for label, src in sources:
                floor = label == "floor"
                r = _run(src, group, args.statements and label == "this", floor, args.clients)
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
