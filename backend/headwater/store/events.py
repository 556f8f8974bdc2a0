"""Raw events: the append-only record of everything accepted, in one partition per month."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from headwater.db.pool import database_key
from headwater.db.queries import QUERIES
from headwater.store import payloads

if TYPE_CHECKING:
    import asyncpg


@dataclass(frozen=True)
class RawEventRow:
    """An accepted event as stored: its content hash, what it is about, and its JSON as received
    (compressed when stored: ``store.payloads``)."""

    content_hash: bytes
    kind: str
    event_type: str | None
    event_time: dt.datetime
    run_uuid: uuid.UUID | None
    job_namespace: str | None
    job_name: str | None
    producer: str | None
    payload: str


_PARTITION_NAME = re.compile(r"raw_events_[0-9]{4}_[0-9]{2}")

# Starts of the months this process saw a partition of raw_events for, per database (a process
# may use several: tests, `headwater import` reading one and writing another): those need no check
# before an insert. Retention dropping one here forgets it; dropped by another process, events of
# that month go to the default partition until retention removes them.
_months_ready: dict[tuple[object, str], set[dt.datetime]] = defaultdict(set)


def month_of(at: dt.datetime) -> dt.datetime:
    """The first instant of the month (UTC) of a time: the lower bound of its partition."""
    utc = at.astimezone(dt.UTC)
    return dt.datetime(utc.year, utc.month, 1, tzinfo=dt.UTC)


async def ensure_partitions(conn: asyncpg.Connection, times: list[dt.datetime]) -> None:
    """Create the month partitions these event times need and do not have yet (ingest, on demand)."""
    ready = _months_ready[database_key(conn)]
    missing = {month_of(t) for t in times} - ready
    if missing:
        months = [m.isoformat() for m in sorted(missing)]
        ready.update(await conn.fetchval(QUERIES["ensure_raw_event_partitions"], months))


async def insert_raw_events(conn: asyncpg.Connection, rows: list[RawEventRow]) -> list[int | None]:
    """Store events in order; None for an event whose content is already stored."""
    await ensure_partitions(conn, [r.event_time for r in rows])
    frames = payloads.compress(conn, [r.payload for r in rows])
    stored_rows = await conn.fetch(
        QUERIES["insert_raw_events"],
        [r.content_hash for r in rows],
        [r.kind for r in rows],
        [r.event_type for r in rows],
        [r.event_time for r in rows],
        [r.run_uuid for r in rows],
        [r.job_namespace for r in rows],
        [r.job_name for r in rows],
        [r.producer for r in rows],
        frames,
    )
    stored = {bytes(r["content_hash"]): r["raw_event_id"] for r in stored_rows}
    # An event given twice is stored once: the first time.
    return [stored.pop(bytes(r.content_hash), None) for r in rows]


@dataclass(frozen=True)
class Partition:
    """A month partition of raw_events: its table and its time range [starts, ends)."""

    name: str
    starts: dt.datetime
    ends: dt.datetime


async def fetch_partitions(conn: asyncpg.Connection) -> list[Partition]:
    """The month partitions of raw_events, oldest first."""
    rows = await conn.fetch(QUERIES["fetch_raw_event_partitions"])
    return [Partition(r["name"], r["starts"], r["ends"]) for r in rows]


async def fetch_missing_partitions(conn: asyncpg.Connection, ahead: int) -> list[dt.datetime]:
    """Months that should have a partition and have none: this one, ``ahead`` more, and those of
    the events in the default partition."""
    return [r["month"] for r in await conn.fetch(QUERIES["fetch_missing_raw_event_partitions"], ahead)]


async def create_partition(conn: asyncpg.Connection, month: dt.datetime) -> bool:
    """Create one month's partition; the caller's transaction holds raw_events' lock. True if new."""
    created = bool(await conn.fetchval(QUERIES["create_raw_event_partition"], month.isoformat()))
    _months_ready[database_key(conn)].add(month)
    return created


def _partition_table(name: str) -> str:
    """A month partition's name, checked, for the statements that cannot take it as a parameter."""
    if not _PARTITION_NAME.fullmatch(name):
        raise ValueError(f"not a month partition of raw_events: {name!r}")
    return f'"{name}"'


async def count_partition_rows(conn: asyncpg.Connection, name: str) -> int:
    """How many events a month partition holds."""
    return int(await conn.fetchval(f"SELECT count(*) FROM {_partition_table(name)}"))


async def drop_partition(conn: asyncpg.Connection, partition: Partition) -> None:
    """Drop a month partition with its events: instant, but it needs raw_events' lock for a moment."""
    await conn.execute(f"DROP TABLE {_partition_table(partition.name)}")
    _months_ready[database_key(conn)].discard(partition.starts)


async def visit_rewritten_rows(
    conn: asyncpg.Connection, runs: list[uuid.UUID], jobs: list[tuple[str, str]]
) -> None:
    """Read the runs and jobs an earlier ingest transaction wrote, so that PostgreSQL prunes their
    pages (see the query)."""
    await conn.fetchval(
        QUERIES["visit_rewritten_rows"], runs, [j[0] for j in jobs], [j[1] for j in jobs]
    )


async def begin_ingest_writes(conn: asyncpg.Connection) -> None:
    """Wait for this transaction's turn among every process's ingest writes, and let its statements
    plan once per connection, without sequential scans or JIT (see the query); its payloads are
    compressed against the newest dictionary, as the database has it now."""
    row = await conn.fetchrow(QUERIES["begin_ingest_writes"])
    assert row is not None
    await payloads.use_newest(conn, row["dictionary_id"], row["created_at"])
