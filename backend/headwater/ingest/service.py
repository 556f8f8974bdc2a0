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
from headwater.ingest.normalize import AliasRule, NormalizedEvent, normalize_event
from headwater.ingest.rounds import Rounds
from headwater.ingest.sql_facets import derive_from_sql
from headwater.ingest.waves import event_identities, plan_waves
from headwater.store import changes as change_store
from headwater.store import datasets as dataset_store
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
    """Store events in one transaction (all or none); duplicates are reported, not stored twice.

    The result is the same as storing the events one by one in the order given: events that share a
    run, job or dataset are written in that order, the others a wave at a time (``waves``, ``rounds``),
    and the change log lists the changes of each event in the order given.
    """
    rules = alias_rules or []
    async with conn.transaction():
        raw_ids = await event_store.insert_raw_events(
            conn, [(e, _encoder.encode(e.raw).decode()) for e in events]
        )
        results: list[IngestResult] = []
        fresh: list[tuple[int, NormalizedEvent]] = []
        for index, (event, raw_id) in enumerate(zip(events, raw_ids, strict=True)):
            run = getattr(event.model, "run", None)
            run_id = str(run.run_id) if run else None
            if raw_id is None:
                results.append(IngestResult("duplicate", event.kind, run_id))
                continue
            n = normalize_event(event, rules)
            for error in derive_from_sql(n, rules):
                n.warnings.append(
                    FieldError("$.job.facets.sql.query", f"SQL lineage not derived: {error}")
                )
            fresh.append((index, n))
            results.append(IngestResult("created", event.kind, run_id, n.warnings))
        if not fresh:
            return results
        normalized = [n for _, n in fresh]
        [stored_aliases] = await dataset_store.find_dataset_aliases(
            conn, [event_identities(normalized, rules)]
        )
        changes: list[list[Change]] = [[] for _ in fresh]
        for wave in plan_waves(normalized, rules, stored_aliases):
            rounds = Rounds(conn)
            written = await rounds.run([_write(rounds, normalized[i], rules) for i in wave])
            for i, event_changes in zip(wave, written, strict=True):
                changes[i] = event_changes
        await change_store.insert_changes(conn, [c for event_changes in changes for c in event_changes])
        return results


async def _write(db: Rounds, n: NormalizedEvent, rules: list[AliasRule]) -> list[Change]:
    """The model rows of one event; returns the changes it made."""
    changes: list[Change] = []
    datasets = DatasetWriter(db, n, rules, changes)
    await datasets.write_datasets()
    versions = await datasets.write_schemas_and_versions()
    if n.kind in ("RUN", "JOB"):
        await JobWriter(db, n, datasets, changes).write(versions)
    return changes
