"""Runs: state, datasets touched and job version."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from headwater.db.pool import json_text
from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    import asyncpg


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


# The functions below are batch operations (see ``headwater.ingest.rounds``): the requests of several
# events, one statement, one result per request.


class RunEvent(Protocol):
    """What the store reads of an event of a run (ingest's normalized events have it)."""

    run_id: uuid.UUID | None  # always set on an event of a run
    parent_run_id: uuid.UUID | None
    root_run_id: uuid.UUID | None
    event_type: str | None
    event_time: dt.datetime
    nominal_start_time: dt.datetime | None
    nominal_end_time: dt.datetime | None
    error_message: str | None
    error_language: str | None
    error_stack_trace: str | None
    run_facets: dict[str, Any]
    reported_run_id: str | None


@dataclass(frozen=True)
class RunEventWrite:
    """One event of a run: the run's job, its warnings, the (dataset, INPUT|OUTPUT, version) touched."""

    event: RunEvent
    job_uuid: uuid.UUID
    warnings: list[dict[str, Any]]
    datasets: list[tuple[uuid.UUID, str, uuid.UUID | None]]


async def write_run_events(
    conn: asyncpg.Connection, requests: list[RunEventWrite]
) -> list[RunStateChange]:
    """Upsert the runs, record the state events, merge the datasets touched into the runs'."""
    events = [r.event for r in requests]
    # The state before, read (and the rows locked) by a statement of its own: within the upsert, a
    # row it has already updated is no longer visible to a locking read.
    previous = {
        r["run_uuid"]: r["current_state"]
        for r in await conn.fetch(QUERIES["lock_runs"], [e.run_id for e in events])
    }
    runs = [
        {
            "run_uuid": e.run_id,
            "job_uuid": r.job_uuid,
            "parent_run_uuid": e.parent_run_id,
            "root_run_uuid": e.root_run_id,
            "state": e.event_type,
            "at": e.event_time,
            "nominal_start_time": e.nominal_start_time,
            "nominal_end_time": e.nominal_end_time,
            "error_message": e.error_message,
            "error_language": e.error_language,
            "error_stack_trace": e.error_stack_trace,
            "facets": e.run_facets,
            "warnings": r.warnings,
            "reported_run_id": e.reported_run_id,
        }
        for r, e in zip(requests, events, strict=True)
    ]
    touched = [
        {"run_uuid": r.event.run_id, "dataset_uuid": d[0], "direction": d[1], "version_uuid": d[2]}
        for r in requests
        for d in r.datasets
    ]
    rows = await conn.fetch(QUERIES["write_run_events"], json_text(runs), json_text(touched))
    found = {
        r["run_uuid"]: RunStateChange(
            previous.get(r["run_uuid"]), r["current_state"], r["current_state_at"]
        )
        for r in rows
    }
    return [found[e.run_id] for e in events]


async def fetch_run_datasets(
    conn: asyncpg.Connection, requests: list[uuid.UUID]
) -> list[list[RunDataset]]:
    """Every dataset each run touched so far, over all its events."""
    rows = await conn.fetch(QUERIES["fetch_run_datasets"], requests)
    found: dict[uuid.UUID, list[RunDataset]] = {run: [] for run in requests}
    for r in rows:
        found[r["run_uuid"]].append(
            RunDataset(r["dataset_uuid"], r["direction"], r["node_id"], r["namespace"], r["name"])
        )
    return [found[run] for run in requests]
