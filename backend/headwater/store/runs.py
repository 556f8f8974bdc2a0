"""Runs: state, datasets touched and job version."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

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
    """What is stored of a run before an event of it is written (state None: a new run). ``stored``:
    whether the run was stored before the transaction (else its events so far are held in
    ``NewRuns``)."""

    state: str | None
    state_at: dt.datetime | None
    datasets: list[RunDataset]
    stored: bool = True


class RunRead(NamedTuple):
    """A request to ``read_runs``: the run, and the runs its transaction has created so far."""

    run_id: uuid.UUID
    new_runs: NewRuns


async def read_runs(conn: asyncpg.Connection, requests: list[RunRead]) -> list[RunSoFar]:
    """Each run's state and every dataset it touched so far; the stored runs' rows stay locked until
    the transaction ends, so that what is folded into them is what they hold when written. A run the
    transaction created is answered from its ``NewRuns``."""
    wanted = [r.run_id for r in requests if r.run_id not in r.new_runs.runs]
    found: dict[uuid.UUID, RunSoFar] = {}
    if wanted:
        for r in await conn.fetch(QUERIES["read_runs"], wanted):
            run = found.setdefault(
                r["run_uuid"], RunSoFar(r["current_state"], r["current_state_at"], [])
            )
            if r["dataset_uuid"] is not None:
                run.datasets.append(
                    RunDataset(
                        r["dataset_uuid"], r["direction"], r["node_id"], r["namespace"], r["name"]
                    )
                )
    return [
        r.new_runs.so_far(r.run_id)
        if r.run_id in r.new_runs.runs
        else found.get(r.run_id) or RunSoFar(None, None, [], stored=False)
        for r in requests
    ]


@dataclass(frozen=True)
class RunEventWrite:
    """One event of a run: the run's job, its warnings, the datasets touched (as ``read_runs`` would
    give them back) with the version written, the run's state after the event (and since when), once
    the run is finished the job version it ran as, when the event says the run was running or ended
    (its time, else None), and whether the run was stored before the transaction
    (``RunSoFar.stored``) or is one of its ``new_runs``."""

    event: RunEvent
    job_uuid: uuid.UUID
    warnings: list[dict[str, Any]]
    datasets: list[tuple[RunDataset, uuid.UUID | None]]
    state: str | None
    state_at: dt.datetime | None
    job_version_uuid: uuid.UUID | None
    started_at: dt.datetime | None
    ended_at: dt.datetime | None
    stored: bool
    new_runs: NewRuns


async def write_run_events(conn: asyncpg.Connection, requests: list[RunEventWrite]) -> list[None]:
    """Upsert the stored runs, record their state events, merge the datasets touched into the runs';
    fold the events of runs the transaction creates into its ``NewRuns``, written at its end."""
    written = []
    for r in requests:
        if r.stored:
            written.append(r)
        else:
            r.new_runs.fold(r)
    if written:
        await conn.execute(
            QUERIES["write_run_events"],
            json_text([_run_row(r) for r in written]),
            json_text([_state_row(r) for r in written]),
            json_text([row for r in written for row in _dataset_rows(r)]),
        )
    return [None] * len(requests)


async def write_new_runs(conn: asyncpg.Connection, new_runs: NewRuns) -> None:
    """Write the runs a transaction created, each once with all its events folded in."""
    if not new_runs.runs:
        return
    runs = new_runs.runs.values()
    await conn.execute(
        QUERIES["write_run_events"],
        json_text([run.row for run in runs]),
        json_text(new_runs.states),
        json_text([row for run in runs for _, row in run.datasets.values()]),
    )
    new_runs.runs.clear()
    new_runs.states.clear()


class NewRuns:
    """The runs an ingest transaction creates, held until its end and then written once each
    (``write_new_runs``).

    A run's START and COMPLETE usually come in one transaction (a /batch array, the group of
    concurrent requests a writer takes, a Kafka poll). Written event by event, the COMPLETE rewrote the
    row its START had just inserted, leaving the first version behind for VACUUM; here the events are
    folded into the row as the upsert's ON CONFLICT clauses of ``write_run_events`` would merge them,
    one by one in the order written, and the row is inserted with the outcome. Exact only for a run
    not stored before (the upsert merges facets by the time of the whole row, which is not
    associative): a stored run is written event by event as before.
    """

    def __init__(self) -> None:
        self.runs: dict[uuid.UUID, _NewRun] = {}
        self.states: list[dict[str, Any]] = []

    def so_far(self, run_id: uuid.UUID) -> RunSoFar:
        run = self.runs[run_id]
        return RunSoFar(
            run.row["state"],
            run.row["state_at"],
            [dataset for dataset, _ in run.datasets.values()],
            stored=False,
        )

    def fold(self, write: RunEventWrite) -> None:
        event_row = _run_row(write)
        self.states.append(_state_row(write))
        run = self.runs.get(event_row["run_uuid"])
        if run is None:
            run = self.runs[event_row["run_uuid"]] = _NewRun(event_row)
        else:
            _merge_run(run.row, event_row)
        for (dataset, _), row in zip(write.datasets, _dataset_rows(write), strict=True):
            key = (dataset.dataset_uuid, dataset.direction)
            if key in run.datasets:
                _merge_run_dataset(run.datasets[key][1], row)
            else:
                run.datasets[key] = (dataset, row)


@dataclass
class _NewRun:
    row: dict[str, Any]  # the run's row as write_run_events takes it
    # (dataset, direction) -> the dataset as read_runs gives it back, and its run_datasets row as
    # write_run_events takes it
    datasets: dict[tuple[uuid.UUID, str], tuple[RunDataset, dict[str, Any]]] = field(
        default_factory=dict
    )


def _run_row(r: RunEventWrite) -> dict[str, Any]:
    """The row an event of a run inserts (when the run is new) or merges into the stored one."""
    e = r.event
    at = e.event_time
    return {
        "run_uuid": e.run_id,
        "job_uuid": r.job_uuid,
        "parent_run_uuid": e.parent_run_id,
        "root_run_uuid": e.root_run_id,
        "state": r.state,
        "state_at": r.state_at,
        "job_version_uuid": r.job_version_uuid,
        "started_at": r.started_at,
        "ended_at": r.ended_at,
        "nominal_start_time": e.nominal_start_time,
        "nominal_end_time": e.nominal_end_time,
        "error_message": e.error_message,
        "error_language": e.error_language,
        "error_stack_trace": e.error_stack_trace,
        "facets": e.run_facets,
        "facets_at": at,
        "warnings": r.warnings,
        "created_at": at,
        "updated_at": at,
        "reported_run_id": e.reported_run_id,
    }


def _state_row(r: RunEventWrite) -> dict[str, Any]:
    return {"run_uuid": r.event.run_id, "state": r.event.event_type, "event_time": r.event.event_time}


def _dataset_rows(r: RunEventWrite) -> list[dict[str, Any]]:
    at = r.event.event_time
    return [
        {
            "run_uuid": r.event.run_id,
            "dataset_uuid": d.dataset_uuid,
            "direction": d.direction,
            "version_uuid": version,
            "first_seen_at": at,
            "last_seen_at": at,
        }
        for d, version in r.datasets
    ]


def _first(a: Any, b: Any) -> Any:
    """SQL's coalesce(a, b)."""
    return a if a is not None else b


def _least(a: Any, b: Any) -> Any:
    """SQL's least(a, b), which ignores NULLs."""
    return b if a is None else a if b is None else min(a, b)


def _greatest(a: Any, b: Any) -> Any:
    """SQL's greatest(a, b), which ignores NULLs."""
    return b if a is None else a if b is None else max(a, b)


def _merge_run(r: dict[str, Any], x: dict[str, Any]) -> None:
    """Merge the row of a later event ``x`` into the held row ``r`` as ``write_run_events``'s
    ON CONFLICT (run_uuid) DO UPDATE does (``r`` the stored row, ``x`` EXCLUDED)."""
    r["parent_run_uuid"] = _first(r["parent_run_uuid"], x["parent_run_uuid"])
    r["root_run_uuid"] = _first(r["root_run_uuid"], x["root_run_uuid"])
    r["reported_run_id"] = _first(r["reported_run_id"], x["reported_run_id"])
    r["state"] = x["state"]
    r["state_at"] = x["state_at"]
    r["job_version_uuid"] = _first(x["job_version_uuid"], r["job_version_uuid"])
    r["started_at"] = _least(r["started_at"], x["started_at"])
    r["ended_at"] = _greatest(r["ended_at"], x["ended_at"])
    for key in (
        "nominal_start_time",
        "nominal_end_time",
        "error_message",
        "error_language",
        "error_stack_trace",
    ):
        r[key] = _first(x[key], r[key])
    # merge_facets: the later report's facets win (jsonb ||), by the time of the whole row.
    if r["facets_at"] <= x["facets_at"]:
        r["facets"] = {**r["facets"], **x["facets"]}
    else:
        r["facets"] = {**x["facets"], **r["facets"]}
    r["facets_at"] = _greatest(r["facets_at"], x["facets_at"])
    r["warnings"] = r["warnings"] + x["warnings"]
    r["created_at"] = _least(r["created_at"], x["created_at"])
    r["updated_at"] = _greatest(r["updated_at"], x["updated_at"])


def _merge_run_dataset(r: dict[str, Any], x: dict[str, Any]) -> None:
    """Merge a later event's run_datasets row ``x`` into the held ``r`` as ``write_run_events``'s
    ON CONFLICT (run_uuid, direction, dataset_uuid) DO UPDATE does: the version of the latest sighting,
    the row left as it is unless that version or the first sighting changes."""
    if x["last_seen_at"] >= r["last_seen_at"]:
        version = _first(x["version_uuid"], r["version_uuid"])
    else:
        version = _first(r["version_uuid"], x["version_uuid"])
    if x["first_seen_at"] < r["first_seen_at"] or version != r["version_uuid"]:
        r["version_uuid"] = version
        r["first_seen_at"] = min(r["first_seen_at"], x["first_seen_at"])
        r["last_seen_at"] = max(r["last_seen_at"], x["last_seen_at"])
