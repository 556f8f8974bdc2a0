"""Events written straight through ingest's write path, without a server: what tests and benchmarks
use to fill a database the way ingest does."""

from __future__ import annotations

from typing import TYPE_CHECKING

from headwater.ingest.service import ingest_prepared, prepare_events

if TYPE_CHECKING:
    import asyncpg

    from headwater.ingest.normalize import AliasRule
    from headwater.ingest.service import IngestResult
    from headwater.ingest.validate import ValidEvent


async def ingest_events(
    conn: asyncpg.Connection, events: list[ValidEvent], alias_rules: list[AliasRule] | None = None
) -> list[IngestResult]:
    """Store validated events in one transaction (all or none), as the server's writer does."""
    rules = alias_rules or []
    return await ingest_prepared(conn, prepare_events(events, rules), rules)
