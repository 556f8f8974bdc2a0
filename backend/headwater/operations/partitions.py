"""Month partitions of raw_events made ahead of need, and for the events the default one caught.

Ingest creates a missing month's partition itself when it can do so at once (see
``views/raw_event_partitions.sql``); what it could not, and the months to come, are made here, by
`serve` every hour and by every retention pass.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import asyncpg

from headwater.store import events as event_store

if TYPE_CHECKING:
    import datetime as dt

log = logging.getLogger(__name__)

# Months made ahead of the current one, so that ingest at a month's turn finds its partition ready.
MONTHS_AHEAD = 3
# Creating a partition locks raw_events, and waits for the transactions using it to end: a wait
# this long at most, so that ingest queued behind the lock is held up no longer than that.
LOCK_TIMEOUT = "2s"


async def prepare_partitions(conn: asyncpg.Connection, ahead: int = MONTHS_AHEAD) -> list[dt.datetime]:
    """Create the missing partitions of this month and ``ahead`` more, and of the months of the
    events in the default partition (moving them in); returns the months created. A month whose
    lock was not granted in time is left for the next time, and logged."""
    created = []
    for month in await event_store.fetch_missing_partitions(conn, ahead):
        try:
            async with conn.transaction():
                await conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
                await conn.execute("LOCK TABLE raw_events IN ACCESS EXCLUSIVE MODE")
                if await event_store.create_partition(conn, month):
                    created.append(month)
        except asyncpg.LockNotAvailableError:
            log.warning(
                "raw_events is busy: the partition of %s is left for the next time", f"{month:%Y-%m}"
            )
    return created
