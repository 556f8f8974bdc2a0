"""Prometheus metrics: request metrics from Litestar's middleware, plus what ingest did."""

from __future__ import annotations

import os
from typing import Any

import asyncpg
from litestar import Response, get
from litestar.datastructures import State
from litestar.plugins.prometheus import PrometheusConfig, PrometheusController
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    generate_latest,
    multiprocess,
)

EVENTS = Counter(
    "headwater_events_total",
    "OpenLineage events received, by kind and outcome (created, duplicate, invalid).",
    ["kind", "status"],
)

# `headwater consume` (its own process: served on HEADWATER_KAFKA_METRICS_PORT).
KAFKA_MESSAGES = Counter(
    "headwater_kafka_messages_total",
    "Kafka messages consumed, by topic and outcome (ingested, skipped, dead_letter).",
    ["topic", "outcome"],
)
KAFKA_EVENTS = Counter(
    "headwater_kafka_events_total",
    "OpenLineage events from Kafka written, by topic and status (created, duplicate).",
    ["topic", "status"],
)
KAFKA_EVENTS_PER_SECOND = Gauge(
    "headwater_kafka_events_per_second", "Events from Kafka written per second, over the last 10 s."
)
KAFKA_LAG = Gauge(
    "headwater_kafka_consumer_lag",
    "Messages of an assigned partition not yet committed (high watermark minus committed offset).",
    ["topic", "partition"],
)
KAFKA_DEAD_LETTERS = Counter(
    "headwater_kafka_dead_letters_total",
    "Kafka messages sent to the dead-letter table, by topic.",
    ["topic"],
)
KAFKA_PAUSES = Counter(
    "headwater_kafka_pauses_total",
    "Times the consumer paused its partitions, by reason: the database unavailable, or backpressure "
    "(more polled bytes waiting for their write than HEADWATER_KAFKA_MAX_IN_FLIGHT_BYTES).",
    ["reason"],
)
KAFKA_PAUSED = Gauge("headwater_kafka_paused", "1 while the consumer's partitions are paused, else 0.")
KAFKA_ASSIGNED = Gauge("headwater_kafka_assigned_partitions", "Partitions assigned to this consumer.")
KAFKA_BROKER_UP = Gauge(
    "headwater_kafka_broker_reachable", "0 while the consumer cannot reach any Kafka broker, else 1."
)
KAFKA_IN_FLIGHT = Gauge(
    "headwater_kafka_in_flight_bytes", "Bytes of messages polled and not yet written and committed."
)

# The server's view of the dead-letter table, read when /metrics is scraped.
DEAD_LETTERS_STORED = Gauge(
    "headwater_kafka_dead_letters_stored",
    "Dead letters stored in the database (not replayed or purged yet), by topic.",
    ["topic"],
)

prometheus_config = PrometheusConfig(
    app_name="headwater",
    prefix="headwater",
    group_path=True,
    exclude=["/metrics", "/healthz", "/readyz"],
)


class MetricsController(PrometheusController):
    """GET /metrics in the Prometheus text format."""

    path = "/metrics"

    @get()
    async def get(self, state: State) -> Response[Any]:
        await _read_dead_letters(state)
        registry = REGISTRY
        if "prometheus_multiproc_dir" in os.environ or "PROMETHEUS_MULTIPROC_DIR" in os.environ:
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
        return Response(generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _read_dead_letters(state: State) -> None:
    """Refresh the stored dead letters per topic; an unavailable database leaves the last figures."""
    pool: asyncpg.Pool | None = getattr(state, "pool", None)
    if pool is None:
        return
    try:
        async with pool.acquire(timeout=2) as conn:
            rows = await conn.fetch(
                "SELECT topic, count(*) AS n FROM kafka_dead_letters GROUP BY topic", timeout=2
            )
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
        return
    DEAD_LETTERS_STORED.clear()
    for row in rows:
        DEAD_LETTERS_STORED.labels(row["topic"]).set(row["n"])
