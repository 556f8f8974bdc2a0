"""`headwater serve` and `headwater migrate`, on the database every command resolves the same way
(headwater.command_base)."""

from __future__ import annotations

import asyncio
import logging
import os

import uvicorn

from headwater.api.graphql.schema import MAX_BODY_BYTES as GRAPHQL_MAX_BODY_BYTES
from headwater.command_base import alias_rules_or_error, apply_migrations, database, load_settings
from headwater.settings import get_settings

log = logging.getLogger("headwater")

# Open requests and subscriptions get this long to finish once a stop is asked for; then they are
# cancelled, so that a stop always ends within a bounded time.
SHUTDOWN_GRACE_S = 10


def run_migrations() -> int:
    """`headwater migrate`: on HEADWATER_DATABASE_URL, or on the embedded default's data dir."""
    settings = load_settings()
    with database(settings.database_url, settings.data_dir) as url:
        applied = asyncio.run(apply_migrations(url))
    print(
        f"headwater: {len(applied)} migration(s) applied"
        + (f": {', '.join(applied)}" if applied else "")
    )
    return 0


def serve(host: str | None, port: int | None, workers: int) -> int:
    """Start on the configured database, or on an embedded one kept in HEADWATER_DATA_DIR."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # uvicorn drains on SIGTERM as on SIGINT, then raises the signal again once it has put the
    # previous handlers back; `headwater` turns that into KeyboardInterrupt (see cli.main), which
    # uvicorn.run swallows, so the embedded PostgreSQL is stopped below and serve exits 0.
    settings = load_settings()
    # A wrong policy file stops serve here, with its reason, rather than in each worker process.
    from headwater.governance.command import policy_or_error

    policy_or_error(settings.policies_file)
    alias_rules_or_error(settings.alias_rules_file)
    if settings.kafka_consume:
        from headwater.consume.command import check_serve_options

        check_serve_options()
    with database(settings.database_url, settings.data_dir) as url:
        # A server configured with a database waits for it (an orchestrator may start both at
        # once); the embedded one is already running.
        wait_s = settings.database_wait_s if settings.database_url else 0
        applied = asyncio.run(apply_migrations(url, wait_s))
        if applied:
            log.info("applied migrations: %s", ", ".join(applied))
        # Worker processes build the app from the environment, so they must see the same database.
        os.environ["HEADWATER_DATABASE_URL"] = url
        get_settings.cache_clear()
        uvicorn.run(
            "headwater.app:create_app",
            factory=True,
            host=host or settings.host,
            port=port or settings.port,
            workers=workers,
            log_level="info",
            access_log=settings.access_log,
            # uvicorn's protocol with deadlines for a request to arrive (see http_protocol).
            http="headwater.http_protocol:DeadlineProtocol",
            proxy_headers=False,
            # A websocket message is a GraphQL request too: no larger than one over HTTP.
            ws_max_size=GRAPHQL_MAX_BODY_BYTES,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )
    return 0
