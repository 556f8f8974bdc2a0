"""Runs: state, datasets touched and job version."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    import asyncpg

    from headwater.ingest.normalize import NormalizedEvent


@dataclass(frozen=True)
class RunStateChange:
    previous_state: str | None
    current_state: str | None
    current_state_at: dt.datetime | None


@dataclass(frozen=True)
class RunDataset:
    dataset_uuid: uuid.UUID
    direction: str
    node_id: int
    namespace: str
    name: str


async def write_run_event(
    conn: asyncpg.Connection,
    event: NormalizedEvent,
    job_uuid: uuid.UUID,
    warnings: list[dict[str, Any]],
    datasets: list[tuple[uuid.UUID, str, uuid.UUID | None]],
) -> RunStateChange:
    """Upsert the run, record the state event, merge (dataset, INPUT|OUTPUT, version) into the run's."""
    row = await conn.fetchrow(
        QUERIES["write_run_event"],
        event.run_id,
        job_uuid,
        event.parent_run_id,
        event.root_run_id,
        event.event_type,
        event.event_time,
        event.nominal_start_time,
        event.nominal_end_time,
        event.error_message,
        event.error_language,
        event.error_stack_trace,
        event.run_facets,
        warnings,
        [d[0] for d in datasets],
        [d[1] for d in datasets],
        [d[2] for d in datasets],
    )
    assert row is not None
    return RunStateChange(row["previous_state"], row["current_state"], row["current_state_at"])


async def fetch_run_datasets(conn: asyncpg.Connection, run_uuid: uuid.UUID) -> list[RunDataset]:
    """Every dataset the run touched so far, over all its events."""
    rows = await conn.fetch(QUERIES["fetch_run_datasets"], run_uuid)
    return [
        RunDataset(r["dataset_uuid"], r["direction"], r["node_id"], r["namespace"], r["name"])
        for r in rows
    ]


async def set_run_job_version(
    conn: asyncpg.Connection, run_uuid: uuid.UUID, version_uuid: uuid.UUID
) -> None:
    """Attach the job version computed from the run's datasets."""
    await conn.execute(QUERIES["set_run_job_version"], run_uuid, version_uuid)
