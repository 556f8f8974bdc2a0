"""Runtime settings, read once from HEADWATER_* environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

# The largest PostgreSQL integer (statement_timeout and every count here must fit).
_INT4_MAX = 2**31 - 1
# The most days of history retention may keep: a century. Beyond it the horizon would fall before
# the first representable time.
MAX_RETENTION_DAYS = 36_500


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "headwater"


@dataclass(frozen=True)
class Settings:
    """Everything the server needs to start; defaults suit a laptop."""

    database_url: str | None = None
    data_dir: Path = field(default_factory=_default_data_dir)
    host: str = "127.0.0.1"
    port: int = 5000
    api_key: str | None = None
    pool_min_size: int = 2
    pool_max_size: int = 10
    statement_timeout_ms: int = 30_000
    pool_acquire_timeout_ms: int = 5_000
    # How long `serve` waits for an unreachable or starting PostgreSQL before giving up (an
    # orchestrator often starts both at once); 0 fails at once.
    database_wait_s: int = 60
    ingest_group_events: int = 500
    # Measured with tests/benchmarks/ingest.py: groups form by themselves while the previous one
    # commits, so waiting for more only delays a lone client (2 ms: 123 -> 86-97 events/s, no gain
    # at 32 or 128 clients); a second writer makes groups race on the same rows (32 clients: 286 ->
    # 272 events/s, 128: 415 -> 274, p99 over a second).
    ingest_group_wait_ms: int = 0
    ingest_writers: int = 1
    ingest_queue_events: int = 10_000
    ingest_timeout_ms: int = 10_000
    retry_after_s: int = 1
    # Seconds a websocket send may wait on a client that reads nothing before it is disconnected.
    subscriber_stall_s: int = 10
    # Open subscriptions per server process, and per websocket. Every change is offered to every
    # subscription that may want it, on the event loop: 200,000 subscriptions opened by one client
    # made a change take 42 s to fan out and held up other requests for a second at a time.
    max_subscriptions: int = 10_000
    max_subscriptions_per_connection: int = 1_000
    # Open websockets per server process: each holds a file descriptor and some 75 KB, subscribing
    # or not, for as long as its client likes.
    max_websockets: int = 5_000
    # Messages a websocket's client may send a second, after a burst of as many as it may hold
    # subscriptions: the server reads the others more slowly (api/graphql/stalled.py).
    websocket_messages_per_s: int = 100
    # Seconds a client has to send a whole request (line, headers and body) once it has begun; a
    # connection that begins none is closed as an idle one is, after uvicorn's keep-alive timeout.
    request_read_timeout_s: int = 60
    # Seconds a response may wait on a client that reads none of it (its send buffer full); then the
    # connection is dropped with what it holds, as a subscription's is after subscriber_stall_s.
    response_stall_s: int = 10
    # The least a client must read of a waiting response over each such period, in bytes a second:
    # forty clients reading a 13.8 MB answer at 1 KB/s held 570 MB for hours. 0: no floor.
    response_min_bytes_per_s: int = 32 * 1024
    max_body_bytes: int = 64 * 1024 * 1024
    # JSON values in one request body, counted before decoding: decoded, each takes 30 to 70 bytes,
    # so this bounds a request's memory (about 128 MB) whatever the shape of its 64 MB.
    max_body_values: int = 2_000_000
    max_lineage_depth: int = 100
    max_lineage_nodes: int = 10_000
    # Lineage reads a server process builds at once (api/read_turns.py); the others wait their turn.
    lineage_reads_at_once: int = 2
    alias_rules_file: Path | None = None
    # The governance policy (TOML): levels, classifying tags, masking and rules; None: the default.
    policies_file: Path | None = None
    # Prometheus scrapers often cannot send a key: /metrics can be left open on its own.
    metrics_open: bool = False
    # The MCP endpoint /mcp on `serve`; HEADWATER_MCP=0 leaves it out.
    mcp: bool = True
    # A log line per HTTP request (uvicorn's access log); HEADWATER_ACCESS_LOG=0 leaves it out.
    access_log: bool = True
    # Days of history `serve` keeps, removing the rest once an hour; None keeps everything.
    retention_days: int | None = None
    # `serve` runs the consumer of `headwater consume` too when HEADWATER_KAFKA_BOOTSTRAP_SERVERS is
    # set (its other HEADWATER_KAFKA_* settings as for `headwater consume`).
    kafka_consume: bool = False

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        """Build settings from an environment mapping (os.environ by default)."""
        env = dict(os.environ if env is None else env)
        defaults = cls()

        def get_int(key: str, default: int, low: int = 1, high: int = _INT4_MAX) -> int:
            # Bounded: a pool of -1 connections, a body limit of -5 bytes or a statement timeout
            # PostgreSQL cannot hold would otherwise fail later, and less clearly (or not at all).
            raw = env.get(key)
            if raw is None or raw == "":
                return default
            try:
                value = int(raw)
            except ValueError as exc:
                raise ValueError(f"{key} must be an integer, got {raw!r}") from exc
            if not low <= value <= high:
                raise ValueError(f"{key} must be {low:,} to {high:,}, got {raw}")
            return value

        def on_unless_off(key: str) -> bool:
            # A switch that is on unless set to 0, false, no or off.
            return env.get(key, "1").lower() not in ("0", "false", "no", "off")

        pool_min_size = get_int("HEADWATER_POOL_MIN_SIZE", defaults.pool_min_size, low=0)
        pool_max_size = get_int("HEADWATER_POOL_MAX_SIZE", defaults.pool_max_size)
        if pool_min_size > pool_max_size:
            raise ValueError(
                f"HEADWATER_POOL_MIN_SIZE ({pool_min_size}) must be at most HEADWATER_POOL_MAX_SIZE "
                f"({pool_max_size})"
            )
        rules = env.get("HEADWATER_ALIAS_RULES_FILE")
        retention_days = None
        if env.get("HEADWATER_RETENTION_DAYS"):
            retention_days = get_int("HEADWATER_RETENTION_DAYS", 0, high=MAX_RETENTION_DAYS)
        return cls(
            database_url=env.get("HEADWATER_DATABASE_URL") or None,
            data_dir=Path(env["HEADWATER_DATA_DIR"])
            if env.get("HEADWATER_DATA_DIR")
            else defaults.data_dir,
            host=env.get("HEADWATER_HOST", defaults.host),
            port=get_int("HEADWATER_PORT", defaults.port, high=65_535),
            api_key=env.get("HEADWATER_API_KEY") or None,
            pool_min_size=pool_min_size,
            pool_max_size=pool_max_size,
            # 0: no timeout, as PostgreSQL's statement_timeout
            statement_timeout_ms=get_int(
                "HEADWATER_STATEMENT_TIMEOUT_MS", defaults.statement_timeout_ms, low=0
            ),
            pool_acquire_timeout_ms=get_int(
                "HEADWATER_POOL_ACQUIRE_TIMEOUT_MS", defaults.pool_acquire_timeout_ms
            ),
            database_wait_s=get_int("HEADWATER_DATABASE_WAIT_S", defaults.database_wait_s, low=0),
            ingest_group_events=get_int("HEADWATER_INGEST_GROUP_EVENTS", defaults.ingest_group_events),
            ingest_group_wait_ms=get_int(
                "HEADWATER_INGEST_GROUP_WAIT_MS", defaults.ingest_group_wait_ms, low=0
            ),
            ingest_writers=get_int("HEADWATER_INGEST_WRITERS", defaults.ingest_writers),
            ingest_queue_events=get_int("HEADWATER_INGEST_QUEUE_EVENTS", defaults.ingest_queue_events),
            ingest_timeout_ms=get_int("HEADWATER_INGEST_TIMEOUT_MS", defaults.ingest_timeout_ms),
            retry_after_s=get_int("HEADWATER_RETRY_AFTER_S", defaults.retry_after_s, low=0),
            subscriber_stall_s=get_int("HEADWATER_SUBSCRIBER_STALL_S", defaults.subscriber_stall_s),
            max_subscriptions=get_int("HEADWATER_MAX_SUBSCRIPTIONS", defaults.max_subscriptions),
            max_subscriptions_per_connection=get_int(
                "HEADWATER_MAX_SUBSCRIPTIONS_PER_CONNECTION", defaults.max_subscriptions_per_connection
            ),
            max_websockets=get_int("HEADWATER_MAX_WEBSOCKETS", defaults.max_websockets),
            websocket_messages_per_s=get_int(
                "HEADWATER_WEBSOCKET_MESSAGES_PER_S", defaults.websocket_messages_per_s
            ),
            request_read_timeout_s=get_int(
                "HEADWATER_REQUEST_READ_TIMEOUT_S", defaults.request_read_timeout_s
            ),
            response_stall_s=get_int("HEADWATER_RESPONSE_STALL_S", defaults.response_stall_s),
            response_min_bytes_per_s=get_int(
                "HEADWATER_RESPONSE_MIN_BYTES_PER_S", defaults.response_min_bytes_per_s, low=0
            ),
            max_body_bytes=get_int("HEADWATER_MAX_BODY_BYTES", defaults.max_body_bytes),
            max_body_values=get_int("HEADWATER_MAX_BODY_VALUES", defaults.max_body_values),
            max_lineage_depth=get_int("HEADWATER_MAX_LINEAGE_DEPTH", defaults.max_lineage_depth),
            max_lineage_nodes=get_int("HEADWATER_MAX_LINEAGE_NODES", defaults.max_lineage_nodes),
            lineage_reads_at_once=get_int(
                "HEADWATER_LINEAGE_READS_AT_ONCE", defaults.lineage_reads_at_once, low=1
            ),
            alias_rules_file=Path(rules) if rules else None,
            policies_file=Path(env["HEADWATER_POLICIES"]) if env.get("HEADWATER_POLICIES") else None,
            metrics_open=env.get("HEADWATER_METRICS_OPEN", "").lower() in ("1", "true", "yes"),
            mcp=on_unless_off("HEADWATER_MCP"),
            access_log=on_unless_off("HEADWATER_ACCESS_LOG"),
            retention_days=retention_days,
            kafka_consume=bool(env.get("HEADWATER_KAFKA_BOOTSTRAP_SERVERS", "").strip()),
        )


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Settings of this process, read from the environment on first use."""
    return Settings.from_env()
