"""Operations benchmark: converting a populated raw_events to month partitions, and retention on it.

Builds a database at the schema before partitioning (the migrations before 0080) holding N raw
events spread evenly over M months (each a real Spark event from the OpenLineage corpus with its own
runId, as stored by ingest), then times, on the same database:

- the conversion migration (0080, in batches of 10,000), its rate and the database size before and
  after (the old table's space is given back when the migration drops it);
- a retention dry run and a retention pass keeping the newest half of the months (whole partitions
  dropped), with the rows each removed.

Then, in a new database, the ingest benchmark's Spark-shaped events (tests/benchmarks/ingest.py: 250
jobs, 4 events a run) for ``--model-runs`` runs of every job spread evenly over the same months,
ingested as the server writes them, and a retention pass keeping the newest half: the time of the
pass and the rows it removed per table, runs and versions included.

Run: ``python tests/benchmarks/operations.py [--events 1000000] [--months 12] [--model-runs 24]``.
Needs PostgreSQL at $HEADWATER_BENCH_SERVER_URL (default postgresql://postgres@127.0.0.1:5432/postgres);
creates and drops headwater_bench_operations.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.databases import SERVER_URL, database_url
from tests.benchmarks.ingest import JOBS, ingest_events
from tests.writes import ingest_events as ingest

from headwater.db import migrate as migrate_module
from headwater.db.migrate import migrate
from headwater.db.pool import register_codecs
from headwater.ingest.validate import validate_event
from headwater.operations.retention import TABLES, run_retention

DATABASE = "headwater_bench_operations"
# The OpenLineage reference beside the checkout, as the tests find it (tests/corpus.py).
REFERENCE = Path(
    os.environ.get("HEADWATER_OPENLINEAGE_REFERENCE")
    or Path(__file__).resolve().parents[3] / "shared" / "openlineage"
)
TEMPLATE = REFERENCE / "events" / "spark" / "compat-cll-run-01.json"
CHUNK = 50_000

# N events over M months ending now; the payload is the template with its own runId and eventTime.
FILL = """
INSERT INTO raw_events (content_hash, event_kind, event_type, event_time, run_uuid, job_namespace,
                        job_name, producer, payload)
SELECT sha256(convert_to(p::text, 'UTF8')), 'RUN', p->>'eventType', at, run, p->'job'->>'namespace',
       p->'job'->>'name', p->>'producer', p
FROM (SELECT i, $5::timestamptz - ($2 - i) * ($3::interval / $2) AS at, gen_random_uuid() AS run
      FROM generate_series($1::bigint, $1 + $4 - 1) AS i) s
CROSS JOIN LATERAL (SELECT jsonb_set(jsonb_set($6::jsonb, '{run,runId}', to_jsonb(s.run::text)),
                                     '{eventTime}', to_jsonb(s.at)) AS p) e
"""


async def database_size(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT pg_database_size(current_database())"))


async def model(months: int, runs: int) -> None:
    """Retention over a model: the ingest benchmark's runs spread over ``months``, half removed."""
    url = database_url(f"{DATABASE}_model")
    admin = await asyncpg.connect(SERVER_URL)
    await admin.execute(f"DROP DATABASE IF EXISTS {DATABASE}_model WITH (FORCE)")
    await admin.execute(f"CREATE DATABASE {DATABASE}_model")
    conn = await asyncpg.connect(url)
    try:
        await register_codecs(conn)
        await migrate(conn)
        now = dt.datetime.now(dt.UTC)
        step = dt.timedelta(days=30.44 * months) / runs
        started = time.perf_counter()
        events = ingest_events(runs=runs)
        # The generator runs every job hourly from its T0: run r goes to r steps before now instead.
        t0 = dt.datetime.fromisoformat(events[0]["eventTime"])
        for event in events:
            at = dt.datetime.fromisoformat(event["eventTime"])
            run = int((at - t0).total_seconds() // 3600)
            shifted = now - (runs - run) * step + (at - t0 - dt.timedelta(hours=run))
            event["eventTime"] = shifted.isoformat()
        for first in range(0, len(events), 500):
            await ingest(conn, [validate_event(e) for e in events[first : first + 500]])
        await conn.execute("VACUUM ANALYZE")
        print(
            f"model: {len(events):,} events ({runs} runs of {JOBS} jobs over {months} months) ingested"
            f" in {time.perf_counter() - started:.0f} s"
        )
        keep = int(30.44 * months / 2)
        counts = {t: await conn.fetchval(f"SELECT count(*) FROM {t}") for t in TABLES}
        started = time.perf_counter()
        removed = await run_retention(conn, keep)
        print(f"model retention pass (keep {keep} days): {time.perf_counter() - started:.2f} s")
        for table in TABLES:
            print(f"  {table:<18} {removed.rows[table]:>9,} of {counts[table]:>9,}")
    finally:
        await conn.close()
        await admin.execute(f"DROP DATABASE IF EXISTS {DATABASE}_model WITH (FORCE)")
        await admin.close()


async def main(events: int, months: int) -> None:
    admin = await asyncpg.connect(SERVER_URL)
    await admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
    await admin.execute(f"CREATE DATABASE {DATABASE}")
    url = database_url(DATABASE)
    conn = await asyncpg.connect(url)
    try:
        earlier = Path(tempfile.mkdtemp(prefix="headwater-migrations-"))
        for path in sorted(migrate_module.MIGRATIONS_DIR.glob("*.sql")):
            if path.name < "0080":
                shutil.copy(path, earlier)
        real_dir = migrate_module.MIGRATIONS_DIR
        migrate_module.MIGRATIONS_DIR = earlier
        await migrate(conn)
        migrate_module.MIGRATIONS_DIR = real_dir
        shutil.rmtree(earlier)

        now = dt.datetime.now(dt.UTC)
        span = dt.timedelta(days=30.44 * months)
        template = TEMPLATE.read_text()
        started = time.perf_counter()
        for first in range(0, events, CHUNK):
            await conn.execute(FILL, first, events, span, min(CHUNK, events - first), now, template)
        await conn.execute("VACUUM ANALYZE raw_events")
        print(f"filled {events:,} events over {months} months in {time.perf_counter() - started:.0f} s")
        before = await database_size(conn)

        started = time.perf_counter()
        result = await migrate(conn)
        took = time.perf_counter() - started
        assert result.applied[0].startswith("0080"), result.applied
        stored = await conn.fetchval("SELECT count(*) FROM raw_events")
        assert stored == events, stored
        after = await database_size(conn)
        partitions = await conn.fetchval(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'raw_events'::regclass"
        )
        print(
            f"conversion: {took:.1f} s, {events / took:,.0f} events/s, {partitions} partitions;"
            f" database {before / 2**20:,.0f} MiB before, {after / 2**20:,.0f} MiB after"
        )

        keep = int(span.days / 2)
        started = time.perf_counter()
        planned = await run_retention(conn, keep, dry_run=True)
        print(
            f"retention dry run (keep {keep} days): {time.perf_counter() - started:.2f} s,"
            f" {planned.rows['raw_events']:,} events in {len(planned.partitions)} partitions"
        )
        started = time.perf_counter()
        removed = await run_retention(conn, keep)
        print(
            f"retention pass: {time.perf_counter() - started:.2f} s, {removed.rows['raw_events']:,} events"
            f" in {len(removed.partitions)} partitions dropped;"
            f" database {await database_size(conn) / 2**20:,.0f} MiB after"
        )
    finally:
        await conn.close()
        await admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        await admin.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--model-runs", type=int, default=24)
    args = parser.parse_args()
    asyncio.run(main(args.events, args.months))
    asyncio.run(model(args.months, args.model_runs))
