"""Where events go and how they are named: from arguments, else Spark conf, else environment."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_URL = "http://127.0.0.1:5000"
DEFAULT_ENDPOINT = "api/v1/lineage"
DEFAULT_NAMESPACE = "default"

# Spark conf keys of the official openlineage-spark listener, and the environment fallbacks of the
# OpenLineage clients. Extra keys of this package live under spark.openlineage.headwater.*.
CONF_URL = "spark.openlineage.transport.url"
CONF_ENDPOINT = "spark.openlineage.transport.endpoint"
CONF_API_KEY = "spark.openlineage.transport.auth.apiKey"
CONF_COMPRESSION = "spark.openlineage.transport.compression"
CONF_TIMEOUT_MS = "spark.openlineage.transport.timeoutInMillis"
CONF_NAMESPACE = "spark.openlineage.namespace"
CONF_APP_NAME = "spark.openlineage.appName"
CONF_PARENT_JOB_NAMESPACE = "spark.openlineage.parentJobNamespace"
CONF_PARENT_JOB_NAME = "spark.openlineage.parentJobName"
CONF_PARENT_RUN_ID = "spark.openlineage.parentRunId"
CONF_ROOT_JOB_NAMESPACE = "spark.openlineage.rootParentJobNamespace"
CONF_ROOT_JOB_NAME = "spark.openlineage.rootParentJobName"
CONF_ROOT_RUN_ID = "spark.openlineage.rootParentRunId"
CONF_TRANSPORT_TYPE = "spark.openlineage.transport.type"
CONF_TOPIC = "spark.openlineage.transport.topicName"
CONF_MESSAGE_KEY = "spark.openlineage.transport.messageKey"
CONF_PROPERTIES = "spark.openlineage.transport.properties."
CONF_QUEUE_SIZE = "spark.openlineage.headwater.queueSize"
CONF_FLUSH_TIMEOUT = "spark.openlineage.headwater.flushTimeoutSeconds"

ENV_URL = "OPENLINEAGE_URL"
ENV_ENDPOINT = "OPENLINEAGE_ENDPOINT"
ENV_API_KEY = "OPENLINEAGE_API_KEY"
ENV_NAMESPACE = "OPENLINEAGE_NAMESPACE"
# openlineage-python's dynamic variables for its Kafka transport (CONFIG is a JSON object).
ENV_TRANSPORT_TYPE = "OPENLINEAGE__TRANSPORT__TYPE"
ENV_TOPIC = "OPENLINEAGE__TRANSPORT__TOPIC"
ENV_MESSAGE_KEY = "OPENLINEAGE__TRANSPORT__MESSAGE_KEY"
ENV_KAFKA_CONFIG = "OPENLINEAGE__TRANSPORT__CONFIG"

ConfGetter = Callable[[str], str | None]


@dataclass(frozen=True)
class ParentRef:
    namespace: str
    name: str
    run_id: str


@dataclass(frozen=True)
class LineageConfig:
    url: str
    endpoint: str = DEFAULT_ENDPOINT
    api_key: str | None = None
    namespace: str = DEFAULT_NAMESPACE
    app_name: str | None = None
    compression: str | None = "gzip"
    timeout: float = 5.0
    queue_size: int = 1000
    flush_timeout: float = 10.0
    parent: ParentRef | None = None
    root_parent: ParentRef | None = None
    # "http", or "kafka": events go to ``topic`` through a producer configured by ``kafka_properties``
    # (librdkafka's keys: bootstrap.servers, security.protocol, sasl.*, ...).
    transport: str = "http"
    topic: str | None = None
    kafka_properties: dict[str, str] = field(default_factory=dict)
    message_key: str | None = None

    @property
    def destination(self) -> str:
        if self.transport == "kafka":
            servers = self.kafka_properties.get("bootstrap.servers", "?")
            return f"Kafka topic {self.topic} at {servers}"
        return self.url


def _first(*values: Any) -> Any:
    for value in values:
        if value is not None and value != "":
            return value
    return None


def _parent(conf: ConfGetter, ns_key: str, name_key: str, run_key: str) -> ParentRef | None:
    namespace, name, run_id = conf(ns_key), conf(name_key), conf(run_key)
    if namespace and name and run_id:
        return ParentRef(namespace, name, run_id)
    return None


def _kafka_properties(conf_items: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """spark.openlineage.transport.properties.* of the Spark conf, else OPENLINEAGE__TRANSPORT__CONFIG."""
    found = {
        key[len(CONF_PROPERTIES) :]: str(value)
        for key, value in conf_items.items()
        if key.startswith(CONF_PROPERTIES)
    }
    if found:
        return found
    raw = env.get(ENV_KAFKA_CONFIG)
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{ENV_KAFKA_CONFIG} is not a JSON object: {exc}") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"{ENV_KAFKA_CONFIG} must be a JSON object of producer settings")
    return {str(k): str(v) for k, v in parsed.items()}


def resolve_config(
    conf: ConfGetter,
    env: Mapping[str, str] | None = None,
    *,
    conf_items: Mapping[str, str] | None = None,
    url: str | None = None,
    api_key: str | None = None,
    namespace: str | None = None,
    endpoint: str | None = None,
    app_name: str | None = None,
    compression: str | None = None,
    timeout: float | None = None,
    queue_size: int | None = None,
    flush_timeout: float | None = None,
) -> LineageConfig:
    """Each setting comes from the argument, else the Spark conf, else the environment.

    ``conf_items`` is the whole Spark conf, for the keys under spark.openlineage.transport.properties.
    Raises ValueError when the Kafka transport is chosen without a topic or brokers.
    """
    env = os.environ if env is None else env
    transport = str(_first(conf(CONF_TRANSPORT_TYPE), env.get(ENV_TRANSPORT_TYPE), "http")).lower()
    if transport not in ("http", "kafka"):
        raise ValueError(f"transport type {transport!r} is not supported: http or kafka")
    topic = _first(conf(CONF_TOPIC), env.get(ENV_TOPIC))
    properties = _kafka_properties(conf_items or {}, env) if transport == "kafka" else {}
    if transport == "kafka" and not topic:
        raise ValueError(f"the Kafka transport needs a topic: {CONF_TOPIC} or {ENV_TOPIC}")
    if transport == "kafka" and not properties.get("bootstrap.servers"):
        raise ValueError(
            f"the Kafka transport needs brokers: {CONF_PROPERTIES}bootstrap.servers, or "
            f"bootstrap.servers in {ENV_KAFKA_CONFIG} (a JSON object)"
        )
    timeout_ms = conf(CONF_TIMEOUT_MS)
    raw_compression = _first(compression, conf(CONF_COMPRESSION), "gzip")
    return LineageConfig(
        url=str(_first(url, conf(CONF_URL), env.get(ENV_URL), DEFAULT_URL)),
        endpoint=str(_first(endpoint, conf(CONF_ENDPOINT), env.get(ENV_ENDPOINT), DEFAULT_ENDPOINT)),
        api_key=_first(api_key, conf(CONF_API_KEY), env.get(ENV_API_KEY)),
        namespace=str(
            _first(namespace, conf(CONF_NAMESPACE), env.get(ENV_NAMESPACE), DEFAULT_NAMESPACE)
        ),
        app_name=_first(app_name, conf(CONF_APP_NAME)),
        compression=None
        if str(raw_compression).lower() in ("none", "off", "false")
        else str(raw_compression),
        timeout=float(_first(timeout, float(timeout_ms) / 1000 if timeout_ms else None, 5.0)),
        queue_size=int(_first(queue_size, conf(CONF_QUEUE_SIZE), 1000)),
        flush_timeout=float(_first(flush_timeout, conf(CONF_FLUSH_TIMEOUT), 10.0)),
        parent=_parent(conf, CONF_PARENT_JOB_NAMESPACE, CONF_PARENT_JOB_NAME, CONF_PARENT_RUN_ID),
        root_parent=_parent(conf, CONF_ROOT_JOB_NAMESPACE, CONF_ROOT_JOB_NAME, CONF_ROOT_RUN_ID),
        transport=transport,
        topic=topic,
        kafka_properties=properties,
        message_key=_first(conf(CONF_MESSAGE_KEY), env.get(ENV_MESSAGE_KEY)),
    )
