"""A run created by an ingest transaction is written once, with all of its events in that transaction
folded in (store.runs.NewRuns), and holds exactly what writing its events one by one gives."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest

from headwater.ingest.validate import validate_event
from tests.db.test_batched_ingest import ingest
from tests.db.test_rows_left_alone import rewrites
from tests.factories import PRODUCER, dataset, parent_facet, run_event, sql_facet
from tests.snapshot import model_snapshot
from tests.writes import ingest_events

pytestmark = pytest.mark.db

RUN = uuid.UUID("01934f5e-0000-7000-8000-000000000001")


def facet(key: str, **values: Any) -> dict[str, Any]:
    return {key: {"_producer": PRODUCER, "_schemaURL": f"https://example.com/{key}.json", **values}}


def run_history() -> list[dict[str, Any]]:
    """One run's START, RUNNING and FAIL: facets replaced and added, a nominal time, an error, a warning
    (SQL that does not parse), datasets seen by several events with versions."""
    nominal = {"nominalTime": {"_producer": PRODUCER, "_schemaURL": "https://example.com/n.json",
                               "nominalStartTime": "2026-01-01T11:00:00Z"}}  # fmt: skip
    error = facet("errorMessage", message="out of memory", programmingLanguage="python")
    start = run_event(
        "load",
        "START",
        run_id=RUN,
        time=1,
        inputs=[dataset("orders", fields=["id"])],
        outputs=[dataset("totals", fields=["id"])],
        run_facets={**nominal, **facet("progress", step=1), **parent_facet(uuid.uuid5(RUN, "p"), "app")},
        job_facets=sql_facet("SELEC broken"),
    )
    running = run_event(
        "load",
        "RUNNING",
        run_id=RUN,
        time=2,
        inputs=[dataset("orders", fields=["id"]), dataset("rates")],
        run_facets={**facet("progress", step=2), **facet("host", name="a")},
    )
    failed = run_event(
        "load",
        "FAIL",
        run_id=RUN,
        time=3,
        # Another schema: another version of the output than the START's.
        outputs=[dataset("totals", fields=["id", "n"], outputStatistics=facet("s", rowCount=3)["s"])],
        run_facets={**error, **facet("host", name="b")},
    )
    return [start, running, failed]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
async def test_a_new_runs_events_in_one_transaction_build_what_they_build_one_by_one(
    make_database, order
):
    history = run_history()
    events = [history[i] for i in order]
    async with make_database() as serial, make_database() as folded:
        await ingest(serial, events, batch=1)
        await ingest(folded, events, batch=len(events))
        assert await model_snapshot(folded) == await model_snapshot(serial)


@pytest.mark.parametrize("stored", [1, 2])
async def test_a_stored_run_takes_the_rest_of_its_events_in_one_transaction(make_database, stored):
    events = run_history()
    async with make_database() as serial, make_database() as folded:
        await ingest(serial, events, batch=1)
        await ingest(folded, events[:stored], batch=stored)
        await ingest(folded, events[stored:], batch=len(events))
        assert await model_snapshot(folded) == await model_snapshot(serial)


async def test_a_run_created_in_a_transaction_is_written_once(conn):
    start, running, failed = run_history()
    assert await rewrites(conn, "runs", [start, running, failed]) == 0
    assert await rewrites(conn, "run_datasets", [start, running, failed]) == 0
    row = await conn.fetchrow(
        "SELECT current_state, error_message, facets FROM runs WHERE run_uuid = $1", RUN
    )
    assert row["current_state"] == "FAIL"
    assert row["error_message"] == "out of memory"
    assert row["facets"]["host"]["name"] == "b"
    assert row["facets"]["progress"]["step"] == 2
    states = await conn.fetch(
        "SELECT state FROM run_states WHERE run_uuid = $1 ORDER BY event_time", RUN
    )
    assert [s["state"] for s in states] == ["START", "RUNNING", "FAIL"]
    # A run already stored is merged event by event, as before.
    later = run_event("load", "COMPLETE", run_id=RUN, time=4)
    assert await rewrites(conn, "runs", [later]) == 1


async def test_every_run_of_a_transaction_is_written(conn):
    """Runs created, runs stored, events of both in one batch: none is lost at the transaction's end."""
    stored, new = uuid.UUID(int=10), uuid.UUID(int=11)
    await ingest_events(conn, [validate_event(run_event("a", "START", run_id=stored, time=1))])
    await ingest_events(
        conn,
        [
            validate_event(e)
            for e in [
                run_event("a", "COMPLETE", run_id=stored, time=2),
                run_event("b", "START", run_id=new, time=2),
                run_event("b", "COMPLETE", run_id=new, time=3, outputs=["t"]),
            ]
        ],
    )
    rows = await conn.fetch("SELECT run_uuid, current_state FROM runs ORDER BY run_uuid")
    assert [(r["run_uuid"], r["current_state"]) for r in rows] == [
        (stored, "COMPLETE"),
        (new, "COMPLETE"),
    ]
    assert await conn.fetchval("SELECT count(*) FROM run_datasets WHERE run_uuid = $1", new) == 1
