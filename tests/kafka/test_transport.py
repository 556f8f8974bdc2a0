"""openlineage-python's KafkaTransport into `headwater consume`: the model is what HTTP builds."""

from __future__ import annotations

import pytest
from litestar.testing import AsyncTestClient

from headwater.app import create_app
from headwater.settings import Settings
from tests.kafka.events import corpus_events, spark_run, transport, wire
from tests.kafka.running import count_events, fetchval, same_model, wait_for
from tests.snapshot import model_snapshot

pytestmark = pytest.mark.db


async def _post_all(url: str, bodies: list[bytes]) -> None:
    settings = Settings(database_url=url, pool_min_size=1, pool_max_size=2)
    async with AsyncTestClient(app=create_app(settings)) as client:
        for body in bodies:
            response = await client.post(
                "/api/v1/lineage", content=body, headers={"content-type": "application/json"}
            )
            assert response.status_code == 201, response.text


async def test_kafka_transport_builds_the_model_http_builds(kafka, topic, make_database, consumers):
    events = corpus_events() + [e for app in range(3) for a in range(4) for e in spark_run(app, a)]
    # One partition: the order of the topic is the order of the posts.
    name = topic(1)
    emitter = transport(kafka.bootstrap, name)
    for event in events:
        emitter.emit(event)
    assert emitter.wait_for_completion(10)
    async with make_database() as over_http, make_database() as over_kafka:
        await _post_all(over_http, [wire(e) for e in events])
        expected = await count_events(over_http)
        consumer = consumers(over_kafka, kafka.bootstrap, "--topic", name, "--group", f"g-{name}")

        async def all_in() -> bool:
            return await count_events(over_kafka) == expected

        await wait_for(all_in, what=f"{expected} events", alive=[consumer])
        same_model(await model_snapshot(over_kafka), await model_snapshot(over_http), ordered=True)
        assert await fetchval(over_kafka, "SELECT count(*) FROM kafka_dead_letters") == 0
        assert consumer.stop() == 0
        log = consumer.output()
        assert f"topics {name}, group g-{name}" in log
        assert f"assignment of group g-{name}: {name}[0]" in log
