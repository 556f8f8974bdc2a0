"""What `headwater consume` connects to: command-line options, else HEADWATER_KAFKA_* variables."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from headwater.command_base import int_between, is_integer_text, time_argument

DEFAULT_GROUP = "headwater"
# Messages per poll, and so per transaction: large enough that a write's fixed costs are shared,
# small enough that a poll's events stay a few MiB in memory.
DEFAULT_BATCH_SIZE = 1000
# Messages a write may take: a batch is held in memory whole, and HEADWATER_KAFKA_MAX_IN_FLIGHT_BYTES
# bounds it too.
MAX_BATCH_SIZE = 100_000
# How long the group waits for a silent member (a killed consumer) before handing its partitions
# to the others; heartbeats go at a third of it.
DEFAULT_SESSION_TIMEOUT_MS = 10_000
# What a dead letter keeps of its message; a longer one is cut and can no longer be replayed.
DEFAULT_DEAD_LETTER_MAX_BYTES = 1024 * 1024
# Bytes of messages polled but not yet written: past it the consumer pauses its partitions until the
# writes have taken half of it, so that a slow or frozen database bounds the memory, not the backlog.
# Decoded events take several times their bytes; 16 MiB still queues several polls of ordinary events
# behind the one being written.
DEFAULT_MAX_IN_FLIGHT_BYTES = 16 * 1024 * 1024

_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class OptionError(ValueError):
    """A missing or malformed option, worded for the user."""


@dataclass(frozen=True)
class ConsumeOptions:
    bootstrap_servers: list[str]
    topics: list[str]
    trino_topics: list[str] = field(default_factory=list)
    group: str = DEFAULT_GROUP
    batch_size: int = DEFAULT_BATCH_SIZE
    dead_letter_max_bytes: int = DEFAULT_DEAD_LETTER_MAX_BYTES
    max_in_flight_bytes: int = DEFAULT_MAX_IN_FLIGHT_BYTES
    metrics_port: int | None = None
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None

    @property
    def all_topics(self) -> list[str]:
        return [*self.topics, *self.trino_topics]

    def client_options(self) -> dict[str, Any]:
        """Connection and security arguments of aiokafka's clients."""
        options: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap_servers,
            "security_protocol": self.security_protocol,
        }
        if self.security_protocol in ("SSL", "SASL_SSL"):
            from aiokafka.helpers import create_ssl_context

            options["ssl_context"] = create_ssl_context(
                cafile=self.ssl_cafile, certfile=self.ssl_certfile, keyfile=self.ssl_keyfile
            )
        if self.security_protocol.startswith("SASL_"):
            options.update(
                sasl_mechanism=self.sasl_mechanism or "PLAIN",
                sasl_plain_username=self.sasl_username,
                sasl_plain_password=self.sasl_password,
            )
        return options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `headwater consume`; each falls back to its HEADWATER_KAFKA_* variable."""
    parser.add_argument(
        "--bootstrap-servers",
        help="HOST:PORT[,...] of the Kafka brokers (HEADWATER_KAFKA_BOOTSTRAP_SERVERS)",
    )
    parser.add_argument(
        "--topic",
        action="append",
        dest="topics",
        help="topic of OpenLineage events; repeatable (HEADWATER_KAFKA_TOPICS, comma-separated)",
    )
    parser.add_argument(
        "--trino-topic",
        action="append",
        dest="trino_topics",
        help="topic of Trino's Kafka event listener; repeatable (HEADWATER_KAFKA_TRINO_TOPICS)",
    )
    parser.add_argument(
        "--group", help=f"consumer group (HEADWATER_KAFKA_GROUP, default {DEFAULT_GROUP})"
    )
    parser.add_argument(
        "--batch-size",
        help=f"most messages per write (HEADWATER_KAFKA_BATCH_SIZE, default {DEFAULT_BATCH_SIZE})",
    )
    parser.add_argument(
        "--metrics-port",
        help="serve Prometheus metrics on this port (HEADWATER_KAFKA_METRICS_PORT; default none)",
    )
    parser.add_argument(
        "--security-protocol",
        choices=_SECURITY_PROTOCOLS,
        help="PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL (HEADWATER_KAFKA_SECURITY_PROTOCOL)",
    )
    parser.add_argument(
        "--sasl-mechanism",
        choices=_SASL_MECHANISMS,
        help="PLAIN (default), SCRAM-SHA-256 or SCRAM-SHA-512 (HEADWATER_KAFKA_SASL_MECHANISM)",
    )
    parser.add_argument(
        "--sasl-username",
        help="SASL user (HEADWATER_KAFKA_SASL_USERNAME; the password only from "
        "HEADWATER_KAFKA_SASL_PASSWORD)",
    )
    parser.add_argument("--ssl-cafile", help="CA bundle (HEADWATER_KAFKA_SSL_CAFILE)")
    parser.add_argument("--ssl-certfile", help="client certificate (HEADWATER_KAFKA_SSL_CERTFILE)")
    parser.add_argument("--ssl-keyfile", help="client key (HEADWATER_KAFKA_SSL_KEYFILE)")


def _names(values: list[str] | None, env_value: str | None) -> list[str]:
    raw = values if values else [env_value or ""]
    names: list[str] = []
    for value in raw:
        names.extend(n.strip() for n in value.split(",") if n.strip())
    return list(dict.fromkeys(names))


def _int(
    value: Any, name: str, default: int | None, minimum: int, maximum: int = 2**63 - 1
) -> int | None:
    if value is None or value == "":
        return default
    if not isinstance(value, int) and not is_integer_text(str(value)):
        raise OptionError(f"{name} must be an integer, got {value!r}")
    number = int(value)
    if not minimum <= number <= maximum:
        raise OptionError(f"{name} must be {minimum} to {maximum}, got {number}")
    return number


def _check_broker_address(server: str) -> None:
    """HOST:PORT (an IPv6 host in brackets), as Kafka clients read a bootstrap server."""
    host, _, port = server.rpartition(":")
    if not host.strip("[]") or not re.fullmatch(r"[0-9]{1,5}", port) or not 1 <= int(port) <= 65_535:
        raise OptionError(
            f"a bootstrap server is HOST:PORT, e.g. kafka:9092, got {server!r} "
            "(--bootstrap-servers, HEADWATER_KAFKA_BOOTSTRAP_SERVERS)"
        )


def _group(given: str | None, from_env: str | None) -> str:
    """The consumer group: given, else from the environment, else the default; never empty."""
    group = given if given is not None else (from_env or None)
    if group is None:
        return DEFAULT_GROUP
    if not group.strip():
        raise OptionError("the consumer group must not be empty (--group, HEADWATER_KAFKA_GROUP)")
    return group.strip()


def _choice(value: str | None, name: str, choices: tuple[str, ...]) -> str | None:
    if not value:
        return None
    if value.upper() not in choices:
        raise OptionError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value.upper()


def resolve(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> ConsumeOptions:
    """Options from the command line, else the environment; OptionError says what is missing."""
    env = os.environ if env is None else env
    servers = _names(
        [args.bootstrap_servers] if args.bootstrap_servers else None,
        env.get("HEADWATER_KAFKA_BOOTSTRAP_SERVERS"),
    )
    if not servers:
        raise OptionError(
            "no Kafka brokers: give --bootstrap-servers HOST:PORT or set HEADWATER_KAFKA_BOOTSTRAP_SERVERS"
        )
    for server in servers:
        _check_broker_address(server)
    topics = _names(args.topics, env.get("HEADWATER_KAFKA_TOPICS"))
    trino_topics = _names(args.trino_topics, env.get("HEADWATER_KAFKA_TRINO_TOPICS"))
    if not topics and not trino_topics:
        raise OptionError(
            "no topics: give --topic NAME (or --trino-topic NAME), or set HEADWATER_KAFKA_TOPICS"
        )
    both = set(topics) & set(trino_topics)
    if both:
        raise OptionError(f"a topic is either OpenLineage's or Trino's, not both: {', '.join(both)}")
    protocol = _choice(
        args.security_protocol or env.get("HEADWATER_KAFKA_SECURITY_PROTOCOL"),
        "HEADWATER_KAFKA_SECURITY_PROTOCOL",
        _SECURITY_PROTOCOLS,
    )
    return ConsumeOptions(
        bootstrap_servers=servers,
        topics=topics,
        trino_topics=trino_topics,
        group=_group(args.group, env.get("HEADWATER_KAFKA_GROUP")),
        batch_size=_int(
            args.batch_size if args.batch_size is not None else env.get("HEADWATER_KAFKA_BATCH_SIZE"),
            "the batch size",
            DEFAULT_BATCH_SIZE,
            1,
            MAX_BATCH_SIZE,
        )
        or DEFAULT_BATCH_SIZE,
        dead_letter_max_bytes=_int(
            env.get("HEADWATER_KAFKA_DEAD_LETTER_MAX_BYTES"),
            "HEADWATER_KAFKA_DEAD_LETTER_MAX_BYTES",
            DEFAULT_DEAD_LETTER_MAX_BYTES,
            0,
        )
        or 0,
        max_in_flight_bytes=_int(
            env.get("HEADWATER_KAFKA_MAX_IN_FLIGHT_BYTES"),
            "HEADWATER_KAFKA_MAX_IN_FLIGHT_BYTES",
            DEFAULT_MAX_IN_FLIGHT_BYTES,
            1,
        )
        or DEFAULT_MAX_IN_FLIGHT_BYTES,
        session_timeout_ms=_int(
            env.get("HEADWATER_KAFKA_SESSION_TIMEOUT_MS"),
            "HEADWATER_KAFKA_SESSION_TIMEOUT_MS",
            DEFAULT_SESSION_TIMEOUT_MS,
            1000,
        )
        or DEFAULT_SESSION_TIMEOUT_MS,
        metrics_port=_int(
            args.metrics_port
            if args.metrics_port is not None
            else env.get("HEADWATER_KAFKA_METRICS_PORT"),
            "the metrics port",
            None,
            1,
            65_535,
        ),
        security_protocol=protocol or "PLAINTEXT",
        sasl_mechanism=_choice(
            args.sasl_mechanism or env.get("HEADWATER_KAFKA_SASL_MECHANISM"),
            "HEADWATER_KAFKA_SASL_MECHANISM",
            _SASL_MECHANISMS,
        ),
        sasl_username=args.sasl_username or env.get("HEADWATER_KAFKA_SASL_USERNAME") or None,
        sasl_password=env.get("HEADWATER_KAFKA_SASL_PASSWORD") or None,
        ssl_cafile=args.ssl_cafile or env.get("HEADWATER_KAFKA_SSL_CAFILE") or None,
        ssl_certfile=args.ssl_certfile or env.get("HEADWATER_KAFKA_SSL_CERTFILE") or None,
        ssl_keyfile=args.ssl_keyfile or env.get("HEADWATER_KAFKA_SSL_KEYFILE") or None,
    )


def from_environment(env: Mapping[str, str] | None = None) -> ConsumeOptions:
    """Options from HEADWATER_KAFKA_* alone, as `serve` reads them."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return resolve(parser.parse_args([]), env)


def add_dead_letter_arguments(parser: argparse.ArgumentParser) -> None:
    """`headwater dead-letters list|replay|purge` and what each selects."""
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (
        ("list", "show dead letters, oldest first"),
        ("replay", "ingest dead letters again; those stored are removed"),
        ("purge", "remove dead letters"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument(
            "--id",
            type=int_between(1),
            action="append",
            dest="ids",
            help="this dead letter (repeatable)",
        )
        action.add_argument("--topic", help="only the dead letters of this topic")
        if name != "replay":
            action.add_argument(
                "--before",
                type=time_argument,
                help="only those recorded before this RFC 3339 time (UTC if it has no offset)",
            )
        if name == "list":
            action.add_argument(
                "--limit", type=int_between(1), default=100, help="most to show (default 100)"
            )
            action.add_argument("--json", action="store_true", help="print a JSON array")
        if name == "purge":
            action.add_argument("--all", action="store_true", help="remove every dead letter")
