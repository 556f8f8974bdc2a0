"""A real PySpark job whose lineage goes through Kafka: Headwater's listener, configured with
openlineage-python's variables, produces to the topic; `headwater consume` stores every event."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.integrations.spark.conftest import JOB, spark_missing
from tests.kafka.running import count_events, fetchval, wait_for

pytestmark = [pytest.mark.db, pytest.mark.slow]

NAMESPACE = "spark_kafka"
APP = "headwater_e2_e"  # the job's appName, "Headwater E2E", as the listener names it


def _messages(bootstrap: str, topic: str, partitions: int) -> list[dict]:
    """Every message of the topic: read until the broker has nothing more for 3 s."""
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}"})
    try:
        reader.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out = []
        while (message := reader.poll(3)) is not None:
            assert message.error() is None, message.error()
            out.append(json.loads(message.value()))
        return out
    finally:
        reader.close()


async def test_pyspark_job_lineage_through_kafka(kafka, topic, database, consumers, tmp_path):
    reason = spark_missing()
    if reason:
        pytest.skip(reason)
    name = topic(2)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENLINEAGE", "HEADWATER_", "SPARK_"))
    }
    env.update(
        HEADWATER_SPARK_LINEAGE="1",
        OPENLINEAGE__TRANSPORT__TYPE="kafka",
        OPENLINEAGE__TRANSPORT__TOPIC=name,
        OPENLINEAGE__TRANSPORT__CONFIG=json.dumps({"bootstrap.servers": kafka.bootstrap}),
        OPENLINEAGE_NAMESPACE=NAMESPACE,
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
    )
    proc = subprocess.run(
        [sys.executable, str(JOB), str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-6000:]
    assert "Lineage: could not" not in log
    assert "not acknowledged" not in log

    # The job ended only after the broker had every event: they are all on the topic.
    messages = _messages(kafka.bootstrap, name, 2)
    # The application's run (in the partition of its key: in order) and one child run per action.
    application = [m for m in messages if m["job"]["name"] == APP]
    assert [m["eventType"] for m in application] == ["START", "COMPLETE"]
    app_run = application[0]["run"]["runId"]
    actions = [m for m in messages if m not in application]
    assert actions
    sent = next(json.loads(line) for line in proc.stdout.splitlines() if "timings" in line)
    assert sent["timings"]["sent"] == len(messages)
    assert all(m["run"]["facets"]["parent"]["run"]["runId"] == app_run for m in actions)
    assert all(m["job"]["namespace"] == NAMESPACE for m in messages)

    consumer = consumers(database, kafka.bootstrap, "--topic", name, "--group", f"g-{name}")

    async def all_in() -> bool:
        return await count_events(database) == len(messages)

    await wait_for(all_in, what="the job's events", alive=[consumer])
    assert await fetchval(database, "SELECT count(*) FROM kafka_dead_letters") == 0
    # The table the job wrote has its lineage, as over HTTP.
    edges = await fetchval(
        database,
        "SELECT count(*) FROM datasets WHERE name LIKE '%dept_totals'",
    )
    assert edges >= 1
    assert consumer.stop() == 0
