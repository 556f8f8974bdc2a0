"""The broker goes away and comes back: the consumer says so, does not spin, and consumes again.

Tansu keeps topics in memory, so the broker that comes back has lost them: the test recreates the
topic and checks reconnection and continued consumption, not the broker's durability.
"""

from __future__ import annotations

import asyncio
import os
import time

import psutil
import pytest

from tests.kafka.conftest import tansu_broker
from tests.kafka.events import spark_run, transport
from tests.kafka.running import count_events, emit_all, wait_for
from tests.server import free_port

pytestmark = [pytest.mark.db, pytest.mark.slow]


def _cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


async def test_consumer_reconnects_when_the_broker_comes_back(database, consumers):
    if os.environ.get("HEADWATER_TEST_KAFKA"):
        pytest.skip("stops and restarts its own broker: runs on the Tansu broker only")
    port = free_port()
    name, group = "lineage-restarted", "g-restarted"
    before = [e for app in range(5) for e in spark_run(app, 0)]
    after = [e for app in range(5, 10) for e in spark_run(app, 0)]
    with tansu_broker(port) as broker:
        broker.create_topic(name, 2)
        consumer = consumers(database, broker.bootstrap, "--topic", name, "--group", group)
        emit_all(transport(broker.bootstrap, name), before)

        async def first_in() -> bool:
            return await count_events(database) == len(before)

        await wait_for(first_in, what="the events sent before the outage", alive=[consumer])

    async def lost() -> bool:
        return "lost Kafka at" in consumer.output()

    await wait_for(lost, timeout=30, what="the consumer to notice", alive=[consumer])
    # Down for a while: the consumer waits, backing off, instead of spinning.
    cpu = _cpu_seconds(consumer.proc.pid)
    await asyncio.sleep(5)
    consumer.check_running()
    spent = _cpu_seconds(consumer.proc.pid) - cpu
    assert spent < 1.0, f"{spent:.2f} s of CPU in 5 s while the broker was down"

    with tansu_broker(port) as broker:
        started = time.monotonic()
        broker.create_topic(name, 2)
        emit_all(transport(broker.bootstrap, name), after)

        async def back() -> bool:
            return await count_events(database) == len(before) + len(after)

        await wait_for(back, timeout=90, what="the events sent after the outage", alive=[consumer])
        assert "reachable again" in consumer.output()
        print(f"consuming again {time.monotonic() - started:.1f} s after the broker came back")
        assert consumer.stop() == 0


async def test_a_consumer_stopped_before_any_broker_answered_exits_cleanly(database, consumers):
    consumer = consumers(database, f"127.0.0.1:{free_port()}", "--topic", "never-reached")

    async def retrying() -> bool:
        return "cannot reach Kafka at" in consumer.output()

    await wait_for(retrying, timeout=30, what="the consumer to retry", alive=[consumer])
    assert consumer.stop() == 0, consumer.output()[-3000:]
    # The client of the start that failed is closed, not left for the garbage collector.
    assert "Unclosed" not in consumer.output(), consumer.output()[-3000:]
