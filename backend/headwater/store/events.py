"""Raw events: the append-only record of everything accepted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    import asyncpg

    from headwater.ingest.validate import ValidEvent


async def insert_raw_event(conn: asyncpg.Connection, event: ValidEvent, payload: str) -> int | None:
    """Store an event as received; None when the same content is already stored (a retry)."""
    model = event.model
    run = getattr(model, "run", None)
    job = getattr(model, "job", None)
    return await conn.fetchval(
        QUERIES["insert_raw_event"],
        event.content_hash,
        event.kind,
        getattr(model, "event_type", None),
        model.event_time,
        run.run_id if run else None,
        job.namespace if job else None,
        job.name if job else None,
        model.producer or None,
        payload,
    )
