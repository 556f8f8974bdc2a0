"""The fold step without a database: a run's state and lineage after an event, job versions."""

from __future__ import annotations

import datetime as dt
import itertools
import uuid

import pytest

from headwater.ingest.fold import (
    RunState,
    job_version_hash,
    names_unknown_fields,
    run_lineage,
    run_state_after,
    touches_parent,
)
from headwater.ingest.normalize import ColumnEdgeDef, NormalizedEvent

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
T1 = T0 + dt.timedelta(minutes=1)
T2 = T0 + dt.timedelta(minutes=2)
STATES = ["START", "RUNNING", "COMPLETE", "FAIL", "ABORT", "OTHER", None]


def fold(*events: tuple[str | None, dt.datetime]) -> RunState:
    state = RunState(None, None)
    for event_type, at in events:
        state = run_state_after(state, event_type, at)
    return state


def test_a_new_run_takes_the_state_of_its_first_event():
    assert fold(("RUNNING", T1)) == RunState("RUNNING", T1)
    assert fold(("OTHER", T1)) == RunState("OTHER", T1)


def test_the_state_follows_event_time_whatever_the_order_of_arrival():
    assert fold(("START", T0), ("COMPLETE", T2)) == RunState("COMPLETE", T2)
    assert fold(("COMPLETE", T2), ("START", T0)) == RunState("COMPLETE", T2)
    assert fold(("RUNNING", T1), ("START", T0)) == RunState("RUNNING", T1)
    assert fold(("START", T0), ("RUNNING", T1)) == RunState("RUNNING", T1)


def test_a_terminal_state_is_never_replaced_by_an_active_one_even_a_later_one():
    assert fold(("FAIL", T1), ("RUNNING", T2)) == RunState("FAIL", T1)
    assert fold(("COMPLETE", T1), ("START", T2)) == RunState("COMPLETE", T1)


def test_a_later_terminal_state_replaces_an_earlier_one_and_an_earlier_does_not():
    assert fold(("FAIL", T1), ("COMPLETE", T2)) == RunState("COMPLETE", T2)
    assert fold(("COMPLETE", T2), ("FAIL", T1)) == RunState("COMPLETE", T2)
    assert fold(("ABORT", T1), ("FAIL", T1)) == RunState("FAIL", T1)  # same time: the latest arrival


def test_other_never_sets_the_state_of_a_run_that_has_one_but_yields_to_any_active_state():
    assert fold(("START", T1), ("OTHER", T2)) == RunState("START", T1)
    assert fold(("OTHER", T2), ("START", T0)) == RunState("START", T0)
    assert fold(("START", T0), (None, T2)) == RunState("START", T0)


@pytest.mark.parametrize("order", list(itertools.permutations([0, 1, 2])))
def test_a_run_with_one_terminal_event_ends_in_it_in_any_order(order):
    events = [("START", T0), ("RUNNING", T1), ("COMPLETE", T2)]
    assert fold(*(events[i] for i in order)) == RunState("COMPLETE", T2)


@pytest.mark.parametrize(("first", "second"), list(itertools.product(STATES, STATES)))
def test_every_pair_of_states_ends_in_one_of_them(first, second):
    after = fold((first, T1), (second, T2))
    assert after in (RunState(first, T1), RunState(second, T2))


def test_run_lineage_merges_what_the_run_touched_with_what_the_event_reports():
    a, b, c = (("warehouse", n, uuid.uuid5(uuid.NAMESPACE_URL, n)) for n in "abc")
    inputs, outputs = run_lineage([(b, "INPUT"), (c, "OUTPUT")], [(a, "INPUT"), (b, "INPUT")])
    assert inputs == [a, b]
    assert outputs == [c]
    # A dataset read and written by the run is both an input and an output.
    assert run_lineage([], [(a, "INPUT"), (a, "OUTPUT")]) == ([a], [a])


def test_a_job_version_depends_on_lineage_and_code_not_on_order():
    one = job_version_hash([("w", "a"), ("w", "b")], [("w", "c")], "sql1")
    assert one == job_version_hash([("w", "b"), ("w", "a")], [("w", "c")], "sql1")
    assert one != job_version_hash([("w", "a")], [("w", "c")], "sql1")
    assert one != job_version_hash([("w", "a"), ("w", "b")], [("w", "c")], "sql2")
    assert one != job_version_hash([("w", "a"), ("w", "b")], [("w", "c")], None)
    assert len(one) == 64


def edge(output_field: str) -> ColumnEdgeDef:
    return ColumnEdgeDef(output_field, "w", "src", "x", "IDENTITY", None, None, None)


def test_reported_column_lineage_naming_projections_loses_to_the_sql():
    assert names_unknown_fields([edge("_0")], {"total"})
    assert not names_unknown_fields([edge("total")], {"total"})
    # Without a schema nothing tells the names are wrong; without edges there is nothing to keep.
    assert not names_unknown_fields([edge("_0")], None)
    assert names_unknown_fields([], {"total"})


def child_event(parent: tuple[str, str] | None, at: dt.datetime) -> NormalizedEvent:
    return NormalizedEvent(
        kind="RUN",
        event_type="START",
        event_time=at,
        producer="https://example.com/producer",
        job_namespace="pipelines",
        job_name="app.step",
        parent_job=parent,
    )


def test_a_parent_is_upserted_unless_stored_as_created_at_or_before_the_event():
    app = ("pipelines", "app")
    assert touches_parent(child_event(app, T1), {})  # not stored: created by the event
    assert touches_parent(child_event(app, T1), {app: T2})  # the event makes it older
    assert not touches_parent(child_event(app, T1), {app: T1})
    assert not touches_parent(child_event(app, T2), {app: T0})
    assert not touches_parent(child_event(None, T1), {})
    # A job naming itself as its parent is written as the job.
    assert not touches_parent(child_event(("pipelines", "app.step"), T1), {})
