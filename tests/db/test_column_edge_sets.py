"""Column edges confirmed as sets: a run that reports a job's column lineage again rewrites one row
per output, not every edge, and what readers see of each edge (column_lineage_confirmed) is what
confirming every edge one by one gives."""

from __future__ import annotations

import random
import uuid

import asyncpg
import pytest

from headwater.db.pool import register_codecs
from headwater.ingest.validate import validate_event
from tests.client import post_all
from tests.factories import T0, dataset, job_run, run_event
from tests.writes import ingest_events

pytestmark = pytest.mark.db

LINEAGE = {
    "id": [("warehouse", "orders", "id")],
    "total": [("warehouse", "orders", "amount"), ("warehouse", "rates", "rate")],
}


def totals(lineage: dict[str, list[tuple[str, str, str]]] = LINEAGE) -> dict:
    return dataset("totals", fields=["id", "total"], column_lineage=lineage)


def runs_of_load(first: int, count: int, lineage=LINEAGE) -> tuple[list[dict], list[uuid.UUID]]:
    """``count`` runs of one job, ten minutes apart from minute ``10 * first``, each reporting
    ``lineage`` on its START and COMPLETE."""
    events, ids = [], []
    for n in range(first, first + count):
        run = uuid.uuid4()
        ids.append(run)
        for kind, minute in (("START", 10 * n), ("COMPLETE", 10 * n + 1)):
            events.append(
                run_event(
                    "load",
                    kind,
                    run_id=run,
                    inputs=["orders", "rates"],
                    outputs=[totals(lineage)],
                    time=minute,
                )
            )
    return events, ids


EDGES = """
SELECT c.output_field, i.name AS input, c.input_field, c.ctid::text AS ctid, c.valid_to,
       v.first_seen_at, v.last_seen_at, v.last_run_uuid
FROM column_lineage c
JOIN column_lineage_confirmed v USING (column_edge_id)
JOIN datasets i ON i.dataset_uuid = c.input_dataset_uuid
ORDER BY 1, 2, 3, c.column_edge_id
"""


async def test_later_runs_of_the_same_lineage_rewrite_no_column_edge(client, conn):
    events, runs = runs_of_load(0, 4)
    await post_all(client, events[:2])
    first = await conn.fetch(EDGES)
    await post_all(client, events[2:])
    later = await conn.fetch(EDGES)
    assert len(later) == 3
    # Each edge is the row the first run wrote, never rewritten...
    assert [r["ctid"] for r in later] == [r["ctid"] for r in first]
    # ...and is seen as last confirmed by the last run, at its first sighting (its START).
    assert {(r["last_run_uuid"], r["last_seen_at"]) for r in later} == {
        (runs[-1], T0.replace(minute=30))
    }
    assert {r["first_seen_at"] for r in later} == {T0}
    [one_set] = await conn.fetch("SELECT * FROM column_edge_sets")
    assert one_set["last_run_uuid"] == runs[-1]


async def test_an_edge_a_run_no_longer_reports_closes_and_the_others_keep_their_confirmation(
    client, conn
):
    events, runs = runs_of_load(0, 3)
    narrower = {"id": LINEAGE["id"], "total": LINEAGE["total"][:1]}
    later, later_runs = runs_of_load(3, 1, narrower)
    await post_all(client, events + later)
    rows = await conn.fetch(EDGES)
    closed = [r for r in rows if r["valid_to"] is not None]
    open_ = [r for r in rows if r["valid_to"] is None]
    assert [(r["output_field"], r["input"]) for r in closed] == [("total", "rates")]
    # Closed when the run that dropped it completed; last seen by the run before it.
    assert closed[0]["valid_to"] == T0.replace(minute=31)
    assert (closed[0]["last_run_uuid"], closed[0]["last_seen_at"]) == (runs[-1], T0.replace(minute=20))
    assert {(r["last_run_uuid"], r["last_seen_at"]) for r in open_} == {
        (later_runs[0], T0.replace(minute=30))
    }

    # The wider lineage again: the closed edge opens anew; the edges move to the new set, and the
    # next run of the same lineage rewrites none of them.
    again, _ = runs_of_load(4, 1)
    await post_all(client, again)
    rows_after = await conn.fetch(EDGES)
    reopened = [
        r
        for r in rows_after
        if r["valid_to"] is None and (r["output_field"], r["input"]) == ("total", "rates")
    ]
    assert len(reopened) == 1
    assert reopened[0]["first_seen_at"] == T0.replace(minute=40)
    assert {r["first_seen_at"] for r in rows_after if r["input"] == "orders"} == {T0}
    next_run, next_runs = runs_of_load(5, 1)
    await post_all(client, next_run)
    rows_last = await conn.fetch(EDGES)
    assert [r["ctid"] for r in rows_last] == [r["ctid"] for r in rows_after]
    assert {r["last_run_uuid"] for r in rows_last if r["valid_to"] is None} == {next_runs[0]}


async def test_a_late_event_still_moves_an_edge_first_sighting_earlier(client, conn):
    events, runs = runs_of_load(1, 2)
    await post_all(client, events)
    late = job_run(
        "load", inputs=["orders", "rates"], outputs=[totals()], start=0, end=1
    )  # COMPLETE at 1
    await post_all(client, late)
    rows = await conn.fetch(EDGES)
    assert {r["first_seen_at"] for r in rows} == {T0.replace(minute=1)}
    # The late run does not become the last to confirm the edges.
    assert {(r["last_run_uuid"], r["last_seen_at"]) for r in rows} == {(runs[-1], T0.replace(minute=20))}


async def test_a_start_after_its_complete_leaves_the_set_whole(client, conn):
    """Concurrent clients can deliver a run's COMPLETE before its START: the START moves each edge's
    first sighting earlier (one rewrite), and the set stays whole with the confirmation its edges
    kept, so the next run confirms it on its one row instead of rewriting every edge again."""
    events, runs = runs_of_load(0, 2)
    start, complete = events[0], events[1]
    await post_all(client, [complete])
    await post_all(client, [start])
    after_first = await conn.fetch(EDGES)
    assert {r["first_seen_at"] for r in after_first} == {T0}
    assert {(r["last_run_uuid"], r["last_seen_at"]) for r in after_first} == {
        (runs[0], T0.replace(minute=1))
    }
    [one_set] = await conn.fetch("SELECT * FROM column_edge_sets")
    assert one_set["whole"]
    assert (one_set["last_run_uuid"], one_set["last_seen_at"]) == (runs[0], T0.replace(minute=1))

    await post_all(client, events[2:])
    later = await conn.fetch(EDGES)
    assert [r["ctid"] for r in later] == [r["ctid"] for r in after_first]
    assert {(r["last_run_uuid"], r["last_seen_at"]) for r in later} == {(runs[1], T0.replace(minute=10))}


def random_history(seed: int) -> list[dict]:
    """Two jobs writing one table, ten runs each, every run reporting one of four column lineages
    (some outputs left out), a fifth of them failing, and some of their events missing."""
    rng = random.Random(seed)
    pool = [("warehouse", n, f) for n in ("orders", "rates", "users") for f in ("id", "amount", "rate")]
    variants = []
    for _ in range(4):
        lineage = {out: rng.sample(pool, rng.randrange(1, 4)) for out in ("id", "total", "extra")}
        variants.append({k: v for k, v in lineage.items() if rng.random() < 0.8} or {"id": pool[:1]})
    events = []
    for job in ("load", "load2"):
        for n in range(10):
            lineage = variants[rng.randrange(4)]
            run = uuid.UUID(int=rng.getrandbits(128))
            end = "COMPLETE" if rng.random() < 0.8 else "FAIL"
            for kind, minute in (("START", 10 * n), ("RUNNING", 10 * n + 0.5), (end, 10 * n + 1)):
                if rng.random() < 0.15:
                    continue
                target = dataset("totals", fields=["id", "total", "extra"], column_lineage=lineage)
                events.append(
                    run_event(
                        job,
                        kind,
                        run_id=run,
                        inputs=["orders", "rates", "users"],
                        outputs=[target],
                        time=minute,
                    )
                )
    return events


COLUMN_LINEAGE = """
SELECT o.name AS output, c.output_field, i.name AS input, c.input_field, j.name AS job, c.transformation_type,
       c.derived, c.superseded, c.description, c.first_seen_at, c.last_seen_at, c.valid_from, c.valid_to,
       c.last_run_uuid
FROM {table} c
JOIN datasets o ON o.dataset_uuid = c.output_dataset_uuid
JOIN datasets i ON i.dataset_uuid = c.input_dataset_uuid
LEFT JOIN jobs j ON j.job_uuid = c.job_uuid
ORDER BY 1, 2, 3, 4, 5, 6, 7, c.first_seen_at, c.valid_to
"""


@pytest.mark.parametrize("seed", range(12))
async def test_sets_answer_what_confirming_every_edge_answers(make_database, seed):
    """Against a store where no set outlives its event (its row deleted after each one), so that
    every event confirms edge by edge: the same column lineage, first and last sightings, runs
    and validity, in any arrival order."""
    events = random_history(seed)
    random.Random(seed).shuffle(events)
    async with make_database() as with_sets, make_database() as edge_by_edge:
        a = await asyncpg.connect(with_sets)
        b = await asyncpg.connect(edge_by_edge)
        try:
            await register_codecs(a)
            await register_codecs(b)
            whole_sets = 0
            for e in events:
                await ingest_events(a, [validate_event(e)])
                await ingest_events(b, [validate_event(e)])
                await b.execute("DELETE FROM column_edge_sets")
                whole_sets += await a.fetchval("SELECT count(*) FROM column_edge_sets WHERE whole")
            # Sets were confirmed as a whole on the one side (else this compares nothing).
            assert whole_sets > 0
            confirmed = await a.fetch(COLUMN_LINEAGE.format(table="column_lineage_confirmed"))
            reference = await b.fetch(COLUMN_LINEAGE.format(table="column_lineage"))
        finally:
            await a.close()
            await b.close()
    assert [tuple(r) for r in confirmed] == [tuple(r) for r in reference]
