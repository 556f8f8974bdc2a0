"""`headwater serve` and `headwater migrate`: resolve the database, migrate, run the ASGI server."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

import asyncpg
import uvicorn

from headwater.db.migrate import migrate
from headwater.settings import get_settings

log = logging.getLogger("headwater")

# Open requests and subscriptions get this long to finish once a stop is asked for; then they are
# cancelled, so that a stop always ends within a bounded time.
SHUTDOWN_GRACE_S = 10


async def apply_migrations(url: str) -> list[str]:
    """Apply pending migrations on the database at ``url``; returns the names applied."""
    conn = await asyncpg.connect(url)
    try:
        result = await migrate(conn)
        await warn_if_autovacuum_is_off(conn)
    finally:
        await conn.close()
    return result.applied


async def warn_if_autovacuum_is_off(conn: asyncpg.Connection) -> bool:
    """Say so when nothing reclaims dead rows: every event rewrites its job, run and dataset rows."""
    if await conn.fetchval("SELECT current_setting('autovacuum')::boolean"):
        return False
    log.warning(
        "PostgreSQL's autovacuum is off: the row versions ingest leaves behind are never reclaimed, "
        "and ingest and lineage queries slow down as they pile up. Turn autovacuum on, or run "
        "VACUUM (ANALYZE) on the database regularly (headwater spark backfill vacuums as it writes)."
    )
    return True


async def run_migrations() -> int:
    """`headwater migrate`: needs HEADWATER_DATABASE_URL (or the embedded default's data dir)."""
    settings = get_settings()
    embedded = None
    url = settings.database_url
    if not url:
        from headwater.embedded import start_embedded

        embedded = start_embedded(settings.data_dir)
        url = embedded.url
        print(f"headwater: using the embedded PostgreSQL: {embedded.how}", file=sys.stderr)
    try:
        applied = await apply_migrations(url)
    finally:
        if embedded is not None:
            embedded.stop()
    print(
        f"headwater: {len(applied)} migration(s) applied"
        + (f": {', '.join(applied)}" if applied else "")
    )
    return 0


def serve(host: str | None, port: int | None, workers: int) -> int:
    """Start on the configured database, or on an embedded one kept in HEADWATER_DATA_DIR."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # uvicorn drains on SIGTERM as on SIGINT, then raises the signal again once it has put the
    # previous handlers back. SIGTERM's default action would then end the process on the spot,
    # before the embedded PostgreSQL is stopped; as KeyboardInterrupt, like SIGINT, it unwinds
    # through the cleanup below and `headwater serve` exits 0 either way.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    settings = get_settings()
    embedded = None
    url = settings.database_url
    if not url:
        from headwater.embedded import start_embedded

        embedded = start_embedded(settings.data_dir)
        url = embedded.url
        print(
            "headwater: HEADWATER_DATABASE_URL is not set; started an embedded PostgreSQL: "
            + embedded.how,
            file=sys.stderr,
            flush=True,
        )
    try:
        applied = asyncio.run(apply_migrations(url))
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
            proxy_headers=False,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )
    finally:
        if embedded is not None:
            embedded.stop()
            print("headwater: embedded PostgreSQL stopped", file=sys.stderr)
    return 0
