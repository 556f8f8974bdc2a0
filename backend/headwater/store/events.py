"""Raw events: the append-only record of everything accepted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    import asyncpg

    from headwater.ingest.validate import ValidEvent


async def insert_raw_events(
    conn: asyncpg.Connection, events: list[tuple[ValidEvent, str]]
) -> list[int | None]:
    """Store (event, payload) pairs in order; None for an event whose content is already stored."""
    models = [e.model for e, _ in events]
    runs = [getattr(m, "run", None) for m in models]
    jobs = [getattr(m, "job", None) for m in models]
    rows = await conn.fetch(
        QUERIES["insert_raw_events"],
        [e.content_hash for e, _ in events],
        [e.kind for e, _ in events],
        [getattr(m, "event_type", None) for m in models],
        [m.event_time for m in models],
        [r.run_id if r else None for r in runs],
        [j.namespace if j else None for j in jobs],
        [j.name if j else None for j in jobs],
        [m.producer or None for m in models],
        [payload for _, payload in events],
    )
    stored = {bytes(r["content_hash"]): r["raw_event_id"] for r in rows}
    # An event given twice is stored once: the first time.
    return [stored.pop(bytes(e.content_hash), None) for e, _ in events]
