"""Prometheus metrics: request metrics from Litestar's middleware, plus what ingest did."""

from __future__ import annotations

from litestar.plugins.prometheus import PrometheusConfig, PrometheusController
from prometheus_client import Counter

EVENTS = Counter(
    "headwater_events_total",
    "OpenLineage events received, by kind and outcome (created, duplicate, invalid).",
    ["kind", "status"],
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
