"""Raw events: the append-only record of everything accepted."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    import asyncpg


@dataclass(frozen=True)
class RawEventRow:
    """An accepted event as stored: its content hash, what it is about, and its JSON as received."""

    content_hash: bytes
    kind: str
    event_type: str | None
    event_time: dt.datetime
    run_uuid: uuid.UUID | None
    job_namespace: str | None
    job_name: str | None
    producer: str | None
    payload: str


async def insert_raw_events(conn: asyncpg.Connection, rows: list[RawEventRow]) -> list[int | None]:
    """Store events in order; None for an event whose content is already stored."""
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
        [r.payload for r in rows],
    )
    stored = {bytes(r["content_hash"]): r["raw_event_id"] for r in stored_rows}
    # An event given twice is stored once: the first time.
    return [stored.pop(bytes(r.content_hash), None) for r in rows]
