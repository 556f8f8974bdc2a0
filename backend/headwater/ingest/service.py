"""ingest_events: validated events -> raw_events + model rows + change log, in one transaction.

Retries are harmless: an event whose content hash is already stored changes nothing. Events of a
run may come in any order; every write below is a merge that respects eventTime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import msgspec

from headwater.errors import FieldError
from headwater.ingest.dataset_writes import DatasetWriter
from headwater.ingest.job_writes import JobWriter
from headwater.ingest.normalize import AliasRule, normalize_event
from headwater.ingest.sql_facets import derive_from_sql
from headwater.store import changes as change_store
from headwater.store import events as event_store
from headwater.store.changes import Change

if TYPE_CHECKING:
    import asyncpg

    from headwater.ingest.validate import ValidEvent

_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class IngestResult:
    """What happened to one event."""

    status: Literal["created", "duplicate"]
    kind: str
    run_id: str | None
    warnings: list[FieldError] = field(default_factory=list)


async def ingest_events(
    conn: asyncpg.Connection, events: list[ValidEvent], alias_rules: list[AliasRule] | None = None
) -> list[IngestResult]:
    """Store events in one transaction (all or none); duplicates are reported, not stored twice."""
    async with conn.transaction():
        return [await _ingest_one(conn, event, alias_rules or []) for event in events]


async def _ingest_one(
    conn: asyncpg.Connection, event: ValidEvent, rules: list[AliasRule]
) -> IngestResult:
    run = getattr(event.model, "run", None)
    run_id = str(run.run_id) if run else None
    raw_id = await event_store.insert_raw_event(conn, event, _encoder.encode(event.raw).decode())
    if raw_id is None:
        return IngestResult("duplicate", event.kind, run_id)
    n = normalize_event(event, rules)
    for error in derive_from_sql(n, rules):
        n.warnings.append(FieldError("$.job.facets.sql.query", f"SQL lineage not derived: {error}"))
    changes: list[Change] = []
    datasets = DatasetWriter(conn, n, rules, changes)
    await datasets.write_datasets()
    versions = await datasets.write_schemas_and_versions()
    if n.kind in ("RUN", "JOB"):
        await JobWriter(conn, n, datasets, changes).write(versions)
    await change_store.insert_changes(conn, changes)
    return IngestResult("created", event.kind, run_id, n.warnings)
