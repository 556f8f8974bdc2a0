"""What happened over time: the stored events of a window, and counts by hour or day."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from headwater.db.queries import QUERIES
from headwater.store.payloads import payload_texts

if TYPE_CHECKING:
    import asyncpg

Bucket = Literal["hour", "day"]
Created = Literal["datasets", "jobs", "sources"]


@dataclass(frozen=True)
class EventCounts:
    start: dt.datetime
    end: dt.datetime
    fail: int
    started: int
    complete: int
    abort: int


@dataclass(frozen=True)
class CreatedCount:
    start: dt.datetime
    end: dt.datetime
    count: int


async def page_raw_events(
    conn: asyncpg.Connection,
    after: dt.datetime,
    before: dt.datetime,
    *,
    ascending: bool,
    limit: int,
    offset: int,
) -> tuple[list[str], int]:
    """Stored events (their JSON as received) with eventTime in [after, before), newest first
    unless ``ascending``, and how many the window holds."""
    rows = await conn.fetch(
        QUERIES["page_raw_events"], after, before, "asc" if ascending else "desc", limit, offset
    )
    total = await conn.fetchval(QUERIES["count_raw_events"], after, before)
    return await payload_texts(conn, rows), int(total)


async def count_events_by_type(
    conn: asyncpg.Connection, start: dt.datetime, bucket: Bucket, timezone: str, buckets: int
) -> list[EventCounts]:
    """FAIL, START, COMPLETE and ABORT events in each of ``buckets`` hours or days (in
    ``timezone``) from the one holding ``start``."""
    rows = await conn.fetch(QUERIES["count_events_by_type"], start, bucket, timezone, buckets)
    return [
        EventCounts(
            r["start_interval"], r["end_interval"], r["fail"], r["start"], r["complete"], r["abort"]
        )
        for r in rows
    ]


async def count_created(
    conn: asyncpg.Connection,
    what: Created,
    start: dt.datetime,
    bucket: Bucket,
    timezone: str,
    buckets: int,
) -> list[CreatedCount]:
    """How many datasets, jobs or sources existed at the end of each bucket (as count_events_by_type)."""
    rows = await conn.fetch(QUERIES["count_created"], start, bucket, timezone, buckets, what)
    return [CreatedCount(r["start_interval"], r["end_interval"], int(r["count"])) for r in rows]
