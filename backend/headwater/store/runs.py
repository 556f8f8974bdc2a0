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
class RunSoFar:
    """What is stored of a run before an event of it is written (state None: a new run)."""

    state: str | None
    state_at: dt.datetime | None
    datasets: list[RunDataset]


async def read_runs(conn: asyncpg.Connection, requests: list[uuid.UUID]) -> list[RunSoFar]:
    """Each run's state and every dataset it touched so far; the runs' rows stay locked until the
    transaction ends, so that what is folded into them is what they hold when written."""
    found: dict[uuid.UUID, RunSoFar] = {}
    for r in await conn.fetch(QUERIES["read_runs"], requests):
        run = found.setdefault(r["run_uuid"], RunSoFar(r["current_state"], r["current_state_at"], []))
        if r["dataset_uuid"] is not None:
            run.datasets.append(
                RunDataset(r["dataset_uuid"], r["direction"], r["node_id"], r["namespace"], r["name"])
            )
    return [found.get(run, RunSoFar(None, None, [])) for run in requests]


@dataclass(frozen=True)
class RunEventWrite:
    """One event of a run: the run's job, its warnings, the (dataset, INPUT|OUTPUT, version)
    touched, the run's state after the event (and since when) and, once the run is finished, the
    job version it ran as."""

    event: RunEvent
    job_uuid: uuid.UUID
    warnings: list[dict[str, Any]]
    datasets: list[tuple[uuid.UUID, str, uuid.UUID | None]]
    state: str | None
    state_at: dt.datetime | None
    job_version_uuid: uuid.UUID | None


async def write_run_events(conn: asyncpg.Connection, requests: list[RunEventWrite]) -> list[None]:
    """Upsert the runs, record the state events, merge the datasets touched into the runs'."""
    events = [r.event for r in requests]
    runs = [
        {
            "run_uuid": e.run_id,
            "job_uuid": r.job_uuid,
            "parent_run_uuid": e.parent_run_id,
            "root_run_uuid": e.root_run_id,
            "event_type": e.event_type,
            "at": e.event_time,
            "state": r.state,
            "state_at": r.state_at,
            "job_version_uuid": r.job_version_uuid,
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
    await conn.execute(QUERIES["write_run_events"], json_text(runs), json_text(touched))
    return [None] * len(requests)
