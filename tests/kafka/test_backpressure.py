"""Backpressure: a frozen database under a large backlog pauses the partitions, and memory stays bounded."""

from __future__ import annotations

import asyncio
import json
import time

import asyncpg
import httpx
import psutil
import pytest
import zstandard

from headwater.db.queries import QUERIES
from headwater.store.payloads import DICTIONARY_BYTES, LEVEL
from tests.kafka.events import spark_run, wire
from tests.kafka.running import committed_offsets, count_events, wait_for
from tests.server import free_port

pytestmark = [pytest.mark.db, pytest.mark.slow]

PARTITIONS = 4
# Two events each, some 10 KB: a backlog of 28 MiB, 14 times what the consumer may hold in flight.
RUNS = 1500
IN_FLIGHT = 2 * 1024 * 1024
# How much more memory the consumer may use than at its start, whatever the backlog: its in-flight
# bound decoded, a fetch per partition and a batch being written (44 to 57 MiB measured, for this
# backlog as for one of 85 MiB; on another day 55 to 70 MiB, the code before and after a change
# alike, so 64 MiB failed one run in three). Without the bound it holds the whole backlog decoded,
# several times its size: 216 MiB more than at the pause for this one. (The database holds a
# payload dictionary from the start, see _store_a_dictionary.)
MAX_GROWTH = 96 * 2**20
# How long the database stays frozen: without the bound, the consumer has read the whole backlog
# within 1.2 s of the pause.
FROZEN_S = 3


def _padded(app: int) -> list[bytes]:
    """Events of a run with a large run facet of its producer's (some 10 KB each, many small objects
    once decoded): the backlog is far larger, decoded, than what the consumer may hold."""
    wide = {
        "_producer": "https://example.com/test",
        "_schemaURL": "https://example.com/test/StepsRunFacet.json",
        "steps": [{"name": f"step_{i}", "kind": "varchar", "note": "x"} for i in range(150)],
    }
    out = []
    for event in spark_run(app, 0):
        body = json.loads(wire(event))
        body["run"]["facets"]["steps"] = wide
        out.append(json.dumps(body).encode())
    return out


async def _store_a_dictionary(database: str) -> None:
    """A payload dictionary, stored before the consumer starts. Without one, the consumer trains
    one once 500 events are stored, in the middle of the catch-up: a bounded cost of its own (up to
    TRAIN_BYTES of payloads, some 15 MiB at its peak, once), which would take a fifth of what this
    test allows the backlog."""
    conn = await asyncpg.connect(database)
    try:
        dictionary_id = int(await conn.fetchval(QUERIES["next_payload_dictionary_id"]))
        samples = [body for app in range(100) for body in _padded(app)]
        trained = zstandard.train_dictionary(
            DICTIONARY_BYTES, samples, dict_id=dictionary_id, level=LEVEL
        )
        await conn.execute(
            QUERIES["insert_payload_dictionary"], dictionary_id, trained.as_bytes(), len(samples)
        )
    finally:
        await conn.close()


def _produce(bootstrap: str, topic: str, producer_factory) -> tuple[int, int]:
    producer = producer_factory(**{"linger.ms": 20, "batch.size": 1_000_000})
    count = size = 0
    for app in range(RUNS):
        for body in _padded(app):
            producer.produce(topic, body, key=str(app).encode(), partition=app % PARTITIONS)
            count += 1
            size += len(body)
        producer.poll(0)
    assert producer.flush(60) == 0, "the producer did not deliver every event"
    return count, size


def _metrics(port: int) -> dict[str, float]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("headwater_kafka")
    }


def _rss(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


async def test_frozen_database_under_a_backlog_pauses_and_memory_stays_bounded(
    kafka, topic, database, consumers
):
    name = topic(PARTITIONS)
    group = f"g-{name}"
    count, backlog = _produce(kafka.bootstrap, name, kafka.producer)
    assert backlog > 10 * IN_FLIGHT
    await _store_a_dictionary(database)

    # The database frozen for ingest: a lock every write waits on (under the statement timeout).
    metrics_port = free_port()
    blocker = await asyncpg.connect(database)
    transaction = blocker.transaction()
    await transaction.start()
    await blocker.execute("LOCK TABLE raw_events IN ACCESS EXCLUSIVE MODE")
    try:
        consumer = consumers(
            database,
            kafka.bootstrap,
            "--topic",
            name,
            "--group",
            group,
            "--batch-size",
            "100",
            "--metrics-port",
            str(metrics_port),
            env={"HEADWATER_KAFKA_MAX_IN_FLIGHT_BYTES": str(IN_FLIGHT)},
        )

        async def started() -> bool:
            return "consuming from" in consumer.output()

        await wait_for(started, what="the consumer to start", alive=[consumer])
        baseline = _rss(consumer.proc.pid)

        async def throttled() -> bool:
            return "backpressure:" in consumer.output()

        await wait_for(throttled, what="the consumer to pause on backpressure", alive=[consumer])
        at_pause = _rss(consumer.proc.pid)
        # Frozen for a while: the consumer polls its paused partitions and holds no more.
        peak = at_pause
        deadline = time.monotonic() + FROZEN_S
        while time.monotonic() < deadline:
            consumer.check_running()
            peak = max(peak, _rss(consumer.proc.pid))
            await asyncio.sleep(0.2)
        offsets = await committed_offsets(kafka.bootstrap, group, name, PARTITIONS)
        assert all(o <= 0 for o in offsets.values()), offsets
        metrics = _metrics(metrics_port)
        assert metrics['headwater_kafka_pauses_total{reason="backpressure"}'] == 1
        assert metrics["headwater_kafka_paused"] == 1
        assert IN_FLIGHT <= metrics["headwater_kafka_in_flight_bytes"] < 2 * IN_FLIGHT
        lag = sum(v for k, v in metrics.items() if k.startswith("headwater_kafka_consumer_lag{"))
        assert lag == count
        frozen_peak = peak
    finally:
        await transaction.rollback()
        await blocker.close()

    async def caught_up() -> bool:
        nonlocal peak
        peak = max(peak, _rss(consumer.proc.pid))
        return await count_events(database) == count

    await wait_for(caught_up, timeout=240, what="every event of the backlog", alive=[consumer])
    check = await asyncpg.connect(database)
    try:
        # The consumer wrote with the stored dictionary and trained none of its own.
        assert await check.fetchval("SELECT count(*) FROM payload_dictionaries") == 1
    finally:
        await check.close()
    output = consumer.output()
    assert "backpressure over" in output
    metrics = _metrics(metrics_port)
    assert metrics["headwater_kafka_paused"] == 0
    assert metrics[f'headwater_kafka_events_total{{status="created",topic="{name}"}}'] == count
    # The consumer held at most its in-flight bound (decoded) and a fetch per partition, not the
    # backlog: without the bound it reads the whole backlog (several times its size once decoded)
    # while the database is frozen. Measured with 2 MiB in flight and writes of 100 messages,
    # decoded in a thread of its own: no more while frozen than at the pause, 44 to 57 MiB more
    # than at start overall.
    frozen = frozen_peak - at_pause
    assert frozen < 16 * 2**20, f"memory grew by {frozen / 2**20:.0f} MiB while frozen"
    overall = peak - baseline
    assert overall < MAX_GROWTH, (
        f"memory grew by {overall / 2**20:.0f} MiB for a {backlog / 2**20:.0f} MiB backlog"
    )
    print(
        f"backlog {backlog / 2**20:.0f} MiB ({count} events): consumer RSS "
        f"{baseline / 2**20:.0f} MiB at start, {at_pause / 2**20:.0f} MiB at the pause, {frozen_peak / 2**20:.0f} MiB at most while the "
        f"database was frozen, {peak / 2**20:.0f} MiB at most overall"
    )
    assert consumer.stop() == 0
