"""Fold: what an event makes of what is already stored. Pure, no I/O.

The writers read what an event builds on (a run's state and datasets so far, the output schemas
its column lineage is judged by), fold the event into it here, and write the outcome: the
decisions live in plain functions that are tested without a database, and each row is written
once per event with its final values instead of being written and then corrected.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from headwater.ingest.normalize import TERMINAL_STATES

if TYPE_CHECKING:
    from headwater.ingest.normalize import ColumnEdgeDef, NormalizedEvent

ACTIVE_STATES = frozenset({"START", "RUNNING"})

# A dataset as a job version names it: (namespace, name, dataset uuid).
VersionDataset = tuple[str, str, uuid.UUID]


@dataclass(frozen=True)
class RunState:
    """A run's state and the eventTime it was reported at; ``state`` is None for a run not yet seen
    (or only seen without an eventType)."""

    state: str | None
    at: dt.datetime | None


def run_state_after(before: RunState, event_type: str | None, at: dt.datetime) -> RunState:
    """The run's state once an event of ``event_type`` at ``at`` is folded in.

    The state follows eventTime, except that a terminal state (COMPLETE, FAIL, ABORT) is never
    replaced by an active one (START, RUNNING), and OTHER never sets the state of a run that has
    one: events of a run may arrive in any order and give the same run.
    """
    if before.state is None:
        return RunState(event_type, at)
    later = before.at is None or at >= before.at
    if event_type in TERMINAL_STATES and (before.state not in TERMINAL_STATES or later):
        return RunState(event_type, at)
    if (
        event_type in ACTIVE_STATES
        and before.state not in TERMINAL_STATES
        and (before.state == "OTHER" or later)
    ):
        return RunState(event_type, at)
    return before


def touches_parent(event: NormalizedEvent, parents_created: dict[tuple[str, str], dt.datetime]) -> bool:
    """Whether writing an event must upsert its parent job too, or only name it.

    A parent job is upserted (created, or made older) when it is not stored yet or was created
    after the event's time; ``parents_created`` tells when the stored ones were created. A parent
    stored as created at or before the event would not change: the event only names it, and does
    not share its row with the events that write it.
    """
    parent = event.parent_job
    if parent is None or parent == (event.job_namespace, event.job_name):
        return False
    created = parents_created.get(parent)
    return created is None or created > event.event_time


def run_lineage(
    so_far: list[tuple[VersionDataset, str]], reported: list[tuple[VersionDataset, str]]
) -> tuple[list[VersionDataset], list[VersionDataset]]:
    """A run's inputs and outputs over all its events: what it touched so far and what this event
    reports, each as (dataset, INPUT|OUTPUT); sorted, without repeats."""
    touched = so_far + reported
    inputs = sorted({d for d, direction in touched if direction == "INPUT"})
    outputs = sorted({d for d, direction in touched if direction == "OUTPUT"})
    return inputs, outputs


def job_version_hash(
    inputs: list[tuple[str, str]], outputs: list[tuple[str, str]], code_hash: str | None
) -> str:
    """A job version: SHA-256 over its sorted input and output identities and its code (SQL/source)."""
    body = json.dumps(
        {"inputs": sorted(inputs), "outputs": sorted(outputs), "code": code_hash}, sort_keys=True
    )
    return hashlib.sha256(body.encode()).hexdigest()


def names_unknown_fields(column_edges: list[ColumnEdgeDef], schema: set[str] | None) -> bool:
    """Whether the producer's column lineage names output fields the output's schema does not have.

    Some producers name SQL projections instead of target columns (``_0`` for ``SUM(x)``); their
    lineage then loses to the lineage derived from the SQL itself.
    """
    if not column_edges:
        return True
    if schema is None:
        return False
    return any(e.output_field not in schema for e in column_edges)
