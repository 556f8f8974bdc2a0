"""Headwater's PySpark listener over Kafka: its settings, and its background emitter into `headwater consume`."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("headwater_spark", reason="headwater-spark is not installed")

from headwater_spark.config import resolve_config
from headwater_spark.emitter import Emitter, kafka_transport

from tests.kafka.events import spark_run, wire
from tests.kafka.running import count_events, post_batches, same_model, wait_for
from tests.snapshot import model_snapshot


def _conf(values: dict[str, str]):
    return values.get


def test_kafka_transport_from_the_official_spark_keys():
    conf = {
        "spark.openlineage.transport.type": "kafka",
        "spark.openlineage.transport.topicName": "openlineage",
        "spark.openlineage.transport.properties.bootstrap.servers": "k1:9092,k2:9092",
        "spark.openlineage.transport.properties.security.protocol": "SASL_SSL",
        "spark.openlineage.namespace": "etl",
    }
    config = resolve_config(_conf(conf), {}, conf_items=conf)
    assert config.transport == "kafka"
    assert config.topic == "openlineage"
    assert config.kafka_properties == {
        "bootstrap.servers": "k1:9092,k2:9092",
        "security.protocol": "SASL_SSL",
    }
    assert config.message_key is None
    assert config.destination == "Kafka topic openlineage at k1:9092,k2:9092"


def test_kafka_transport_from_openlineage_python_variables():
    env = {
        "OPENLINEAGE__TRANSPORT__TYPE": "kafka",
        "OPENLINEAGE__TRANSPORT__TOPIC": "lineage",
        "OPENLINEAGE__TRANSPORT__CONFIG": json.dumps({"bootstrap.servers": "k:9092", "acks": "1"}),
        "OPENLINEAGE__TRANSPORT__MESSAGE_KEY": "fixed",
    }
    config = resolve_config(_conf({}), env)
    assert (config.transport, config.topic, config.message_key) == ("kafka", "lineage", "fixed")
    assert config.kafka_properties == {"bootstrap.servers": "k:9092", "acks": "1"}
    # Without a transport type the listener posts over HTTP, as before.
    assert resolve_config(_conf({}), {}).transport == "http"


@pytest.mark.parametrize(
    ("conf", "env", "message"),
    [
        ({"spark.openlineage.transport.type": "kafka"}, {}, "needs a topic"),
        (
            {
                "spark.openlineage.transport.type": "kafka",
                "spark.openlineage.transport.topicName": "t",
            },
            {},
            "needs brokers",
        ),
        (
            {},
            {
                "OPENLINEAGE__TRANSPORT__TYPE": "kafka",
                "OPENLINEAGE__TRANSPORT__TOPIC": "t",
                "OPENLINEAGE__TRANSPORT__CONFIG": "bootstrap.servers=k:9092",
            },
            "is not a JSON object",
        ),
        ({"spark.openlineage.transport.type": "kinesis"}, {}, "http or kafka"),
    ],
)
def test_incomplete_kafka_settings_are_refused(conf, env, message):
    with pytest.raises(ValueError, match=message):
        resolve_config(_conf(conf), env, conf_items=conf)


@pytest.mark.db
@pytest.mark.slow
async def test_emitter_sends_through_kafka_into_headwater(
    kafka, topic, database, make_database, consumers
):
    events = [json.loads(wire(e)) for app in range(4) for a in range(5) for e in spark_run(app, a)]
    name = topic(2)
    transport = kafka_transport(name, {"bootstrap.servers": kafka.bootstrap}, None)
    emitter = Emitter(transport, lambda record: [], queue_size=1000)
    for event in events:
        assert emitter.submit(event)
    # Closing waits until the broker has acknowledged every event, as it waits for the server over HTTP.
    assert emitter.close(20)
    assert (emitter.stats.sent, emitter.stats.failed, emitter.stats.dropped) == (len(events), 0, 0)

    # Keyed as KafkaTransport keys event objects: an application's actions share its partition.
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": f"reader-{name}"})
    reader.assign([TopicPartition(name, p, 0) for p in range(2)])
    partitions: dict[str, set[int]] = {}
    read = 0
    try:
        while read < len(events):
            message = reader.poll(10)
            assert message is not None, "not every event is on the topic"
            assert message.error() is None, message.error()
            partitions.setdefault(message.key().decode(), set()).add(message.partition())
            read += 1
    finally:
        reader.close()
    assert set(partitions) == {f"run:spark://cluster/etl_app_{app}" for app in range(4)}
    assert all(len(p) == 1 for p in partitions.values())

    consumer = consumers(database, kafka.bootstrap, "--topic", name, "--group", f"g-{name}")

    async def all_in() -> bool:
        return await count_events(database) == len(events)

    await wait_for(all_in, what="the listener's events", alive=[consumer])
    async with make_database() as over_http:
        await post_batches(over_http, [json.dumps(e).encode() for e in events])
        same_model(await model_snapshot(database), await model_snapshot(over_http))
    assert consumer.stop() == 0
