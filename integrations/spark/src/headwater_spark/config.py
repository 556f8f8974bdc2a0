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


def _number(
    value: Any, name: str, kind: Callable[[str], float], minimum: float, *, inclusive: bool
) -> Any:
    """``value`` read as ``kind``; a ValueError naming the setting when it is not one, or is below
    ``minimum`` (or equal to it, unless ``inclusive``)."""
    try:
        number = kind(str(value).strip())
    except ValueError:
        whole = "whole " if kind is int else ""
        raise ValueError(f"{name} must be a {whole}number, not {value!r}") from None
    if number < minimum or (number == minimum and not inclusive):
        bound = f"at least {minimum:g}" if inclusive else f"more than {minimum:g}"
        raise ValueError(f"{name} must be {bound}, not {value!r}")
    return number


def _http_url(url: str) -> str:
    """``url`` without surrounding blanks; a ValueError saying what is wrong when it cannot be
    posted to (a host with no scheme is the usual mistake)."""
    from urllib.parse import urlsplit

    cleaned = url.strip()
    try:
        parts = urlsplit(cleaned)
        parts.port  # noqa: B018 - raises on a port that is not a number or out of range
    except ValueError as exc:
        raise ValueError(f"the lineage URL {url!r} is not valid: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"the lineage URL {url!r} needs http:// or https:// and a host, for example {DEFAULT_URL}"
        )
    return cleaned


def _api_key(key: str | None) -> str | None:
    """The key without surrounding blanks (a key file's last line break); a ValueError when a
    control character is left, which no HTTP header may hold."""
    if key is None:
        return None
    cleaned = key.strip()
    if any(ord(char) < 32 or ord(char) == 127 for char in cleaned):
        raise ValueError("the API key holds a line break or another control character")
    return cleaned or None


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
    Raises ValueError, saying which setting is wrong, when one cannot work: the Kafka transport
    without a topic or brokers, a URL with no http(s) scheme or host, an API key with a line break,
    a timeout of 0 or less, a negative flush timeout, a queue size below 1.
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
    http_url = str(_first(url, conf(CONF_URL), env.get(ENV_URL), DEFAULT_URL))
    if transport == "http":
        http_url = _http_url(http_url)
    if timeout is not None:
        request_timeout = _number(timeout, "timeout", float, 0, inclusive=False)
    elif timeout_ms:
        request_timeout = _number(timeout_ms, CONF_TIMEOUT_MS, float, 0, inclusive=False) / 1000
    else:
        request_timeout = 5.0
    return LineageConfig(
        url=http_url,
        endpoint=str(_first(endpoint, conf(CONF_ENDPOINT), env.get(ENV_ENDPOINT), DEFAULT_ENDPOINT)),
        api_key=_api_key(_first(api_key, conf(CONF_API_KEY), env.get(ENV_API_KEY))),
        namespace=str(
            _first(namespace, conf(CONF_NAMESPACE), env.get(ENV_NAMESPACE), DEFAULT_NAMESPACE)
        ),
        app_name=_first(app_name, conf(CONF_APP_NAME)),
        compression=None
        if str(raw_compression).lower() in ("none", "off", "false")
        else str(raw_compression),
        timeout=request_timeout,
        queue_size=_number(
            _first(queue_size, conf(CONF_QUEUE_SIZE), 1000), "queue size", int, 1, inclusive=True
        ),
        flush_timeout=_number(
            _first(flush_timeout, conf(CONF_FLUSH_TIMEOUT), 10.0),
            "flush timeout",
            float,
            0,
            inclusive=True,
        ),
        parent=_parent(conf, CONF_PARENT_JOB_NAMESPACE, CONF_PARENT_JOB_NAME, CONF_PARENT_RUN_ID),
        root_parent=_parent(conf, CONF_ROOT_JOB_NAMESPACE, CONF_ROOT_JOB_NAME, CONF_ROOT_RUN_ID),
        transport=transport,
        topic=topic,
        kafka_properties=properties,
        message_key=_first(conf(CONF_MESSAGE_KEY), env.get(ENV_MESSAGE_KEY)),
    )
