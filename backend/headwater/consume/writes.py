"""Writing a poll's events: one transaction, or in parts when some of them cannot be stored.

A failure is either the database's (unreachable, shutting down, refusing connections, out of
resources, a statement timeout, a race that kept failing: ``DatabaseUnavailableError``, the caller
pauses and retries) or one of the events' own (bad data, a constraint, a trigger, a defect: the
poll is written again in halves, down to the messages that fail alone, which become dead letters)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import asyncpg

from headwater.ingest.service import (
    IngestResult,
    PreparedEvent,
    ingest_prepared,
    is_transient,
    retrying_races,
    sliced,
    writing_apart,
)
from headwater.store import payloads

if TYPE_CHECKING:
    import datetime as dt

    from headwater.consume.messages import Format
    from headwater.ingest.normalize import AliasRule


class DatabaseUnavailableError(Exception):
    """The database cannot take writes now; nothing of the batch was committed."""


@dataclass
class Item:
    """One message of a poll and what becomes of it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    format: Format
    timestamp: dt.datetime | None
    events: list[PreparedEvent] = field(default_factory=list)
    # Why the message is a dead letter; None while it may still be ingested.
    dead: str | None = None
    results: list[IngestResult] = field(default_factory=list)


async def store(
    conn: asyncpg.Connection, events: list[PreparedEvent], rules: list[AliasRule]
) -> list[IngestResult]:
    """The one place events from Kafka are written (one transaction for the list)."""
    results = await ingest_prepared(conn, events, rules)
    if payloads.wants_dictionary(conn):
        # Once per database, after its first events (payloads.TRAIN_AFTER): a tenth of a second.
        await payloads.train_dictionary_beside_ingest(conn)
    return results


async def _write(
    pool: asyncpg.Pool, events: list[PreparedEvent], rules: list[AliasRule]
) -> list[IngestResult]:
    async def write() -> list[IngestResult]:
        async with pool.acquire() as conn:
            return await store(conn, events, rules)

    return await retrying_races(write, pause=0.01)


async def write_items(pool: asyncpg.Pool, items: list[Item], rules: list[AliasRule]) -> None:
    """Store the events of every live item, setting its results, or its ``dead`` reason when it fails alone.

    Raises DatabaseUnavailableError when the database cannot take writes; items already written then
    are duplicates on the next attempt, which changes nothing.
    """
    live = [i for i in items if i.dead is None and i.events]
    if not live:
        return

    async def write(batch: list[Item]) -> list[list[IngestResult]]:
        results = await _write(pool, [e for i in batch for e in i.events], rules)
        return sliced(results, (len(i.events) for i in batch))

    def refused(item: Item, exc: Exception) -> list[IngestResult]:
        item.dead = f"write failed: {describe(exc)}"
        return []

    try:
        # A message that cannot be stored is found in halves of the poll (service.writing_apart).
        outcomes = await writing_apart(live, write, refused)
    except Exception as exc:
        if is_transient(exc):
            raise DatabaseUnavailableError(describe(exc)) from exc
        raise
    for item, results in zip(live, outcomes, strict=True):
        item.results = results


def describe(exc: BaseException) -> str:
    state = getattr(exc, "sqlstate", None)
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__} ({state}): {text}" if state else f"{type(exc).__name__}: {text}"


_INSERT_DEAD_LETTERS = """
INSERT INTO kafka_dead_letters
    (topic, "partition", "offset", message_key, payload, payload_size, payload_sha256, format, reason,
     message_time)
SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[], $4::bytea[], $5::bytea[], $6::int[],
                     $7::bytea[], $8::text[], $9::text[], $10::timestamptz[])
ON CONFLICT DO NOTHING
"""


async def store_dead_letters(conn: asyncpg.Connection, items: list[Item], max_bytes: int) -> int:
    """Record the dead items (a re-delivered one once); returns how many were new."""
    dead = [i for i in items if i.dead is not None]
    if not dead:
        return 0
    values = [i.value or b"" for i in dead]
    status = await conn.execute(
        _INSERT_DEAD_LETTERS,
        [i.topic for i in dead],
        [i.partition for i in dead],
        [i.offset for i in dead],
        [i.key for i in dead],
        [None if i.value is None else i.value[:max_bytes] for i in dead],
        [len(v) for v in values],
        [hashlib.sha256(v).digest() for v in values],
        [i.format for i in dead],
        [i.dead for i in dead],
        [i.timestamp for i in dead],
    )
    return int(status.split()[-1])
