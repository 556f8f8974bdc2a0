"""Trino's Kafka event listener on a Trino topic: the lineage the HTTP bridge gives."""

from __future__ import annotations

import json

import pytest
from litestar.testing import AsyncTestClient

from headwater.app import create_app
from headwater.settings import Settings
from tests.integrations.trino.events import http_example, query_completed
from tests.kafka.running import count_events, fetchval, same_model, wait_for
from tests.snapshot import model_snapshot

pytestmark = pytest.mark.db


def _queries() -> list[dict]:
    return [
        http_example(),
        query_completed(
            "INSERT INTO hive.sales.daily SELECT id, amount FROM hive.sales.orders",
            query_id="20250601_101600_00043_abcde",
            inputs={"hive.sales.orders": ["id", "amount"]},
            output="hive.sales.daily",
            columns=[
                ("id", "bigint", ["hive.sales.orders.id"]),
                ("amount", "double", ["hive.sales.orders.amount"]),
            ],
        ),
        # A SELECT is not reported (the listener's default query types): skipped, not a dead letter.
        query_completed("SELECT 1", query_id="20250601_101700_00044_abcde", query_type="SELECT"),
        query_completed(
            "INSERT INTO hive.sales.daily SELECT * FROM hive.sales.gone",
            query_id="20250601_101800_00045_abcde",
            inputs={"hive.sales.gone": ["id"]},
            output="hive.sales.daily",
            failure="Table hive.sales.gone does not exist",
        ),
    ]


async def test_trino_topic_gives_the_lineage_of_the_http_bridge(kafka, topic, make_database, consumers):
    queries = _queries()
    name = topic(1, prefix="trino")
    producer = kafka.producer()
    for query in queries:
        # What the Kafka event listener writes: the event under eventPayload, metadata beside it.
        producer.produce(
            name, value=json.dumps({"eventPayload": query, "eventMetadata": {"env": "test"}})
        )
    assert producer.flush(10) == 0
    async with make_database() as over_http, make_database() as over_kafka:
        settings = Settings(database_url=over_http, pool_min_size=1, pool_max_size=2)
        async with AsyncTestClient(app=create_app(settings)) as client:
            for query in queries:
                response = await client.post("/api/v1/integrations/trino", json=query)
                assert response.status_code in (200, 201), response.text
        expected = await count_events(over_http)
        assert expected == 6  # START and COMPLETE (or FAIL) of three queries
        consumer = consumers(over_kafka, kafka.bootstrap, "--trino-topic", name, "--group", f"g-{name}")

        async def all_in() -> bool:
            return await count_events(over_kafka) == expected

        await wait_for(all_in, what="the Trino queries as runs", alive=[consumer])
        same_model(await model_snapshot(over_kafka), await model_snapshot(over_http), ordered=True)
        assert await fetchval(over_kafka, "SELECT count(*) FROM kafka_dead_letters") == 0
        assert f"Trino topics {name}, group g-{name}" in consumer.output()
