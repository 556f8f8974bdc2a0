"""Crashes, scale-out and an unavailable database: every event in the model once, nothing lost."""

from __future__ import annotations

import asyncio

import pytest

from tests.kafka.events import spark_run, transport, wire
from tests.kafka.running import (
    committed_offsets,
    count_events,
    emit_all,
    execute,
    post_batches,
    same_model,
    wait_for,
)
from tests.snapshot import model_snapshot

pytestmark = [pytest.mark.db, pytest.mark.slow]

PARTITIONS = 4


def _events(apps: range, actions: int = 10) -> list:
    return [e for app in apps for action in range(actions) for e in spark_run(app, action)]


async def _baseline(make_database, events: list) -> dict:
    async with make_database() as url:
        await post_batches(url, [wire(e) for e in events])
        return await model_snapshot(url)


async def test_consumer_killed_under_load_and_restarted_stores_every_event_once(
    kafka, topic, database, make_database, consumers
):
    events = _events(range(40))
    name = topic(PARTITIONS)
    emit_all(transport(kafka.bootstrap, name), events)
    args = ("--topic", name, "--group", f"g-{name}", "--batch-size", "40")
    first = consumers(database, kafka.bootstrap, *args)

    async def some_in() -> bool:
        return await count_events(database) >= len(events) // 4

    await wait_for(some_in, what="a quarter of the events", alive=[first])
    first.kill()
    assert await count_events(database) < len(events), "the consumer finished before it was killed"
    second = consumers(database, kafka.bootstrap, *args)

    async def all_in() -> bool:
        return await count_events(database) == len(events)

    await wait_for(all_in, what="every event", alive=[second])
    same_model(await model_snapshot(database), await _baseline(make_database, events))
    # Everything is committed once it is written.
    offsets = await committed_offsets(kafka.bootstrap, f"g-{name}", name, PARTITIONS)

    async def committed() -> bool:
        offsets.update(await committed_offsets(kafka.bootstrap, f"g-{name}", name, PARTITIONS))
        return sum(offsets.values()) == len(events)

    await wait_for(committed, what="the offsets of every event")
    assert second.stop() == 0


async def test_two_consumers_share_partitions_and_one_killed_loses_nothing(
    kafka, topic, database, make_database, consumers
):
    events = _events(range(40))
    name = topic(PARTITIONS)
    args = ("--topic", name, "--group", f"g-{name}", "--batch-size", "40")
    one, two = consumers(database, kafka.bootstrap, *args), consumers(database, kafka.bootstrap, *args)

    async def shared() -> bool:
        logs = [p.output() for p in (one, two)]
        return all(f"assignment of group g-{name}: {name}[" in log for log in logs)

    await wait_for(shared, what="both consumers to get partitions", alive=[one, two])
    emit_all(transport(kafka.bootstrap, name), events)

    async def some_in() -> bool:
        return await count_events(database) >= len(events) // 4

    await wait_for(some_in, what="a quarter of the events", alive=[one, two])
    one.kill()

    async def all_in() -> bool:
        return await count_events(database) == len(events)

    await wait_for(all_in, what="every event", alive=[two])
    same_model(await model_snapshot(database), await _baseline(make_database, events))
    everything = ", ".join(f"{name}[{p}]" for p in range(PARTITIONS))
    assert f"assignment of group g-{name}: {everything}" in two.output()


async def test_database_unavailable_pauses_commits_nothing_more_and_catches_up(
    kafka, topic, database, consumers, pg_server
):
    before, during = _events(range(10)), _events(range(10, 20))
    name = topic(PARTITIONS)
    group = f"g-{name}"
    emit_all(transport(kafka.bootstrap, name), before)
    consumer = consumers(database, kafka.bootstrap, "--topic", name, "--group", group)

    async def first_in() -> bool:
        return await count_events(database) == len(before)

    await wait_for(first_in, what="the first events", alive=[consumer])

    async def first_committed() -> bool:
        offsets = await committed_offsets(kafka.bootstrap, group, name, PARTITIONS)
        return sum(offsets.values()) == len(before)

    await wait_for(first_committed, what="the first offsets")
    db_name = database.rsplit("/", 1)[1]
    await execute(
        pg_server,
        f'ALTER DATABASE "{db_name}" ALLOW_CONNECTIONS false;'
        f" SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{db_name}'",
    )
    try:
        emit_all(transport(kafka.bootstrap, name), during)

        async def paused() -> bool:
            return "partitions paused" in consumer.output()

        await wait_for(paused, what="the consumer to pause", alive=[consumer])
        await asyncio.sleep(1.5)  # retries while the database is away: still nothing committed
        offsets = await committed_offsets(kafka.bootstrap, group, name, PARTITIONS)
        assert sum(offsets.values()) == len(before)
    finally:
        await execute(pg_server, f'ALTER DATABASE "{db_name}" ALLOW_CONNECTIONS true')

    async def caught_up() -> bool:
        return await count_events(database) == len(before) + len(during)

    await wait_for(caught_up, what="the events sent during the outage", alive=[consumer])
    assert "database available again: partitions resumed" in consumer.output()
