"""`headwater serve` with HEADWATER_KAFKA_* set consumes too: one process, HTTP and Kafka into one model."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from tests.kafka.events import spark_run, transport, wire
from tests.kafka.running import count_events, emit_all, post_batches, same_model, wait_for
from tests.server import REPO, running_headwater
from tests.snapshot import model_snapshot

pytestmark = [pytest.mark.db, pytest.mark.slow]


async def test_serve_consumes_kafka_beside_http(kafka, topic, make_database, tmp_path):
    over_kafka = [e for app in range(6) for a in range(3) for e in spark_run(app, a)]
    over_http = [e for app in range(6, 9) for a in range(3) for e in spark_run(app, a)]
    name = topic(2)
    trino = topic(1, prefix="trino")
    emit_all(transport(kafka.bootstrap, name), over_kafka)
    env = {
        "HEADWATER_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "HEADWATER_KAFKA_TOPICS": name,
        "HEADWATER_KAFKA_TRINO_TOPICS": trino,
        "HEADWATER_KAFKA_GROUP": f"g-{name}",
        "HEADWATER_KAFKA_SESSION_TIMEOUT_MS": "2000",
    }
    async with make_database() as served, make_database() as baseline:
        with running_headwater(served, tmp_path / "serve.log", env=env) as server:
            headers = {"Authorization": f"Bearer {server.api_key}"}
            body = b"[" + b",".join(wire(e) for e in over_http) + b"]"
            response = httpx.post(
                f"{server.url}/api/v1/lineage/batch",
                content=body,
                headers={**headers, "content-type": "application/json"},
                timeout=30,
            )
            assert response.status_code == 200, response.text

            async def all_in() -> bool:
                return await count_events(served) == len(over_kafka) + len(over_http)

            await wait_for(all_in, what="the events over Kafka and over HTTP")
            metrics = httpx.get(f"{server.url}/metrics", headers=headers, timeout=10).text
            log = server.log.read_text()
        await post_batches(baseline, [wire(e) for e in over_kafka + over_http])
        same_model(await model_snapshot(served), await model_snapshot(baseline))
    assert f"topics {name}, Trino topics {trino}, group g-{name}" in log
    assert f"assignment of group g-{name}: " in log
    assert (
        f'headwater_kafka_events_total{{status="created",topic="{name}"}} {len(over_kafka)}.0' in metrics
    )
    assert "headwater_kafka_assigned_partitions 3.0" in metrics
    assert f'headwater_kafka_consumer_lag{{partition="0",topic="{name}"}}' in metrics


def test_serve_refuses_kafka_settings_without_topics(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "headwater.cli", "serve"],
        env={
            "PATH": "/usr/bin:/bin",
            "HEADWATER_DATABASE_URL": "postgresql://127.0.0.1:1/none",
            "HEADWATER_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092",
            "HOME": str(tmp_path),
        },
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "serve with HEADWATER_KAFKA_BOOTSTRAP_SERVERS set: no topics" in result.stderr
