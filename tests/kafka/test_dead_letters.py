"""Poison messages go to the dead-letter table with their reason; their partition goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest
from litestar.testing import AsyncTestClient

from headwater.app import create_app
from headwater.settings import Settings
from tests.kafka.events import spark_run, wire
from tests.kafka.running import count_events, execute, fetchval, wait_for
from tests.server import REPO, free_port

pytestmark = pytest.mark.db

# A defect of the database that only some events meet, fixed later: a trigger refusing one job.
REFUSE_JOB = """
CREATE FUNCTION refuse_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.job_name LIKE '%.insert_into_table_7' THEN
        RAISE EXCEPTION 'job % refused', NEW.job_name;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER refuse_job BEFORE INSERT ON raw_events FOR EACH ROW EXECUTE FUNCTION refuse_job();
"""


def headwater(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env["HEADWATER_DATABASE_URL"] = url
    return subprocess.run(
        [sys.executable, "-m", "headwater.cli", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_each_poison_kind_is_a_dead_letter_and_later_events_are_ingested(
    kafka, topic, database, consumers
):
    name = topic(1)
    good = [wire(e) for a in range(3) for e in spark_run(9, a)]
    refused = [wire(e) for e in spark_run(9, 7)]
    invalid = json.loads(good[0])
    del invalid["eventTime"]
    invalid["run"]["runId"] = "not-a-uuid"
    messages: list[tuple[bytes | None, str]] = [
        (good[0], ""),
        (b'{"eventType": "START", "run": ', "not valid JSON"),
        (b'{"eventType": "START", "n": ' + b"9" * 5_000 + b"}", "valid JSON with a number too large"),
        (good[1], ""),
        (json.dumps(invalid).encode(), "Invalid RunEvent|eventTime"),
        (b'{"padding": "' + b"x" * 30_000 + b'"}', "message too large: 30015 bytes"),
        (None, "empty message"),
        (refused[0], "write failed: RaiseError (P0001): job"),
        (good[2], ""),
        (refused[1], "write failed: RaiseError (P0001): job"),
        *[(m, "") for m in good[3:]],
    ]
    await execute(database, REFUSE_JOB)
    producer = kafka.producer()
    for value, _ in messages:
        producer.produce(name, value=value, key=b"run:spark://cluster/etl_app_9")
    assert producer.flush(10) == 0
    metrics_port = free_port()
    consumer = consumers(
        database,
        kafka.bootstrap,
        "--topic",
        name,
        "--metrics-port",
        str(metrics_port),
        env={"HEADWATER_MAX_BODY_BYTES": "20000"},
    )
    poison = [(offset, reason) for offset, (_, reason) in enumerate(messages) if reason]

    async def all_done() -> bool:
        dead = await fetchval(database, "SELECT count(*) FROM kafka_dead_letters")
        return dead == len(poison) and await count_events(database) == len(good)

    await wait_for(all_done, what="dead letters and the events after them", alive=[consumer])

    listed = headwater(database, "dead-letters", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["topic"], r["partition"], r["offset"]) for r in rows] == [(name, 0, o) for o, _ in poison]
    for row, (_, reason) in zip(rows, poison, strict=True):
        assert all(part in row["reason"] for part in reason.split("|")), (row["reason"], reason)
    assert all(r["key"] == "run:spark://cluster/etl_app_9" for r in rows)
    assert [r["replayable"] for r in rows] == [True] * len(rows)

    # The consumer's metrics: dead letters counted, nothing left to read on the partition once the
    # offsets are committed (to Kafka, after the events are in PostgreSQL).
    lag_done = f'headwater_kafka_consumer_lag{{partition="0",topic="{name}"}} 0.0'

    async def offsets_committed() -> bool:
        return lag_done in httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text

    await wait_for(offsets_committed, timeout=10, what="no lag left", alive=[consumer])
    text = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text
    assert f'headwater_kafka_dead_letters_total{{topic="{name}"}} {float(len(poison))}' in text
    assert "headwater_kafka_paused 0.0" in text
    # The server's /metrics counts what the table holds.
    async with AsyncTestClient(app=create_app(Settings(database_url=database))) as client:
        served = (await client.get("/metrics")).text
    assert f'headwater_kafka_dead_letters_stored{{topic="{name}"}} {float(len(poison))}' in served

    # Once the defect is fixed, replaying the refused events stores them and removes their entries.
    await execute(database, "DROP TRIGGER refuse_job ON raw_events")
    refused_ids = [str(r["id"]) for r in rows if r["reason"].startswith("write failed")]
    replayed = headwater(
        database, "dead-letters", "replay", *[a for i in refused_ids for a in ("--id", i)]
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "2 dead letter(s) replayed (2 event(s)), 0 failed again" in replayed.stdout
    assert await count_events(database) == len(good) + len(refused)
    # The others fail again: still listed, the command says so.
    again = headwater(database, "dead-letters", "replay", "--topic", name)
    assert again.returncode == 1
    left = len(poison) - len(refused_ids)
    assert f"0 dead letter(s) replayed (0 event(s)), {left} failed again" in again.stdout
    refused_purge = headwater(database, "dead-letters", "purge")
    assert refused_purge.returncode == 2
    assert "purge needs --id, --topic or --before, or --all" in refused_purge.stderr
    purged = headwater(database, "dead-letters", "purge", "--topic", name)
    assert f"{left} dead letter(s) removed" in purged.stdout
    assert await fetchval(database, "SELECT count(*) FROM kafka_dead_letters") == 0
    consumer.check_running()
