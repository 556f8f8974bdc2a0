"""`serve`'s periodic upkeep: raw-event partitions made ahead, payload dictionaries kept fresh, and
retention when it is configured.

Once at start and then every hour, one server process of the cluster at a time (an advisory lock
picks it; the others skip that round) creates the coming months' partitions of raw_events, trains a
new payload dictionary from the latest events when the newest is a week old (``store.payloads``)
and, with HEADWATER_RETENTION_DAYS set, runs a retention pass keeping that many days.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import asyncpg

from headwater.operations.partitions import prepare_partitions
from headwater.operations.retention import run_retention
from headwater.store import payloads

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from litestar import Litestar

    from headwater.settings import Settings

log = logging.getLogger(__name__)

INTERVAL_S = 3600.0
# Any fixed 64-bit number, other than the migration runner's.
_LOCK_KEY = 0x4845_4144_5245_5445


async def upkeep(settings: Settings) -> None:
    """One round: partitions ahead, then retention if configured; skipped if another process has it."""
    # A connection of its own: the pool's statement timeout is for requests, and a pass's first
    # read over a large database can take longer.
    conn = await asyncpg.connect(settings.database_url)
    try:
        if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", _LOCK_KEY):
            return
        try:
            created = await prepare_partitions(conn)
            if created:
                log.info("raw_events partitions created: %s", ", ".join(f"{m:%Y-%m}" for m in created))
            if await payloads.dictionary_due(conn):
                await payloads.train_dictionary(conn, force=True)
            if settings.retention_days:
                report = await run_retention(conn, settings.retention_days)
                log.info(
                    "retention kept %d days (history before %s): removed %s",
                    report.keep_days,
                    report.horizon.isoformat(),
                    ", ".join(f"{t} {n}" for t, n in report.rows.items() if n) or "nothing",
                )
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    finally:
        await conn.close()


async def _every(settings: Settings, interval_s: float) -> None:
    while True:
        try:
            await upkeep(settings)
        except Exception:
            # Whatever went wrong (the database away, a lock not granted), the loop must go on:
            # upkeep that stopped silently would let raw_events fill the default partition.
            log.exception("upkeep failed; tried again in %.0f s", interval_s)
        await asyncio.sleep(interval_s)


@asynccontextmanager
async def periodic_upkeep(app: Litestar) -> AsyncIterator[None]:
    """Run upkeep in the background for as long as the app runs."""
    task = asyncio.create_task(_every(app.state.settings, INTERVAL_S))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
