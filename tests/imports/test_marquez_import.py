"""`headwater import marquez`: a database in Marquez's `lineage_events` layout, replayed into Headwater.

The model it builds equals posting the same events in eventTime order; killed half way and run
again, it ends the same; invalid events are refused with their reason and never stop it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import pytest

from tests.client import post_all
from tests.factories import job_run, run_event
from tests.marquez import fill_marquez, history, in_ingest_order
from tests.pg import migrated_database
from tests.snapshot import model_snapshot

pytestmark = pytest.mark.db


def headwater_import(target: str, *args: str, cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env["HEADWATER_DATABASE_URL"] = target
    return subprocess.Popen(
        [sys.executable, "-m", "headwater.cli", "import", "marquez", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )


def finish(proc: subprocess.Popen[str]) -> str:
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    return err


async def test_the_import_builds_the_model_posting_builds(
    client, database_url, marquez, pg_server, tmp_path
):
    events = history()
    await fill_marquez(marquez, events, duplicates=3)
    await post_all(client, in_ingest_order(events))
    async with migrated_database(pg_server, "headwater_mqz_target") as target:
        err = finish(headwater_import(target, "--from", marquez, "--batch-size", "7", cwd=tmp_path))
        assert f"read {len(events) + 3:,} of {len(events) + 3:,} events" in err
        assert f"imported {len(events) - 1:,}, already stored 4, refused 0" in err  # the tie is one
        assert not (tmp_path / "marquez-refused.jsonl").exists()
        imported, posted = await model_snapshot(target), await model_snapshot(database_url)
        assert {k: len(v) for k, v in imported.items()} == {k: len(v) for k, v in posted.items()}
        assert imported == posted

        # Run again: it resumes after its last batch and adds nothing.
        err = finish(headwater_import(target, "--from", marquez, cwd=tmp_path))
        assert "imported 0," in err
        assert await model_snapshot(target) == posted


async def test_killed_half_way_and_run_again_it_ends_the_same(marquez, pg_server, tmp_path):
    events = [
        e
        for i in range(150)
        for e in job_run(
            f"job-{i % 7}", inputs=[f"in-{i}"], outputs=[f"out-{i % 11}"], start=i, end=i + 0.5
        )
    ]
    await fill_marquez(marquez, events)
    async with (
        migrated_database(pg_server, "headwater_mqz_target") as whole,
        migrated_database(pg_server, "headwater_mqz_target") as interrupted,
    ):
        finish(headwater_import(whole, "--from", marquez, "--batch-size", "5", cwd=tmp_path))

        proc = headwater_import(interrupted, "--from", marquez, "--batch-size", "1", cwd=tmp_path)
        conn = await asyncpg.connect(interrupted)
        try:
            deadline = time.monotonic() + 60
            while not await conn.fetchval("SELECT count(*) FROM runs") and time.monotonic() < deadline:
                time.sleep(0.01)
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            stored = await conn.fetchval("SELECT count(*) FROM raw_events")
            assert 0 < stored < len(events), "the import was killed half way"
        finally:
            await conn.close()

        err = finish(headwater_import(interrupted, "--from", marquez, "--batch-size", "5", cwd=tmp_path))
        assert "(resumed: events from " in err
        assert await model_snapshot(interrupted) == await model_snapshot(whole)


async def insert_received_now(url: str, event: dict, event_time: str | None = None) -> None:
    """A row as Marquez writes one when it receives the event: created_at is now()."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(
            "INSERT INTO lineage_events (event_time, event, event_type) VALUES ($1::text::timestamptz, $2::jsonb, 'START')",
            event_time or event["eventTime"],
            json.dumps(event),
        )
    finally:
        await conn.close()


async def test_an_event_received_later_is_imported_whatever_its_time(marquez, pg_server, tmp_path):
    # One event dated 2099 by a wrong clock made every later import resume after it, and the
    # events Marquez took meanwhile (dated 2025) were never read.
    await fill_marquez(marquez, [])
    first = run_event("load", inputs=["a"], outputs=["b"])
    first["eventTime"] = "2025-01-01T00:00:00Z"
    wrong_clock = run_event("skewed", inputs=["a"], outputs=["c"])
    wrong_clock["eventTime"] = "2099-01-01T00:00:00Z"
    meanwhile = run_event("late", inputs=["a"], outputs=["d"])
    meanwhile["eventTime"] = "2025-01-02T00:00:00Z"
    for event in (first, wrong_clock):
        await insert_received_now(marquez, event)
    async with migrated_database(pg_server, "headwater_mqz_target") as target:
        assert "imported 2," in finish(headwater_import(target, "--from", marquez, cwd=tmp_path))
        await insert_received_now(marquez, meanwhile)
        err = finish(headwater_import(target, "--from", marquez, cwd=tmp_path))
        assert (
            "(resumed: events from 2099-01-01T00:00:00+00:00 on, and those Marquez received after "
            in err
        )
        # What was read again (received within the margin) is a duplicate.
        assert "imported 1, already stored 2," in err
        conn = await asyncpg.connect(target)
        try:
            assert await conn.fetchval("SELECT count(*) FROM jobs WHERE name = 'late'") == 1
        finally:
            await conn.close()


async def test_rows_without_an_event_or_a_time_are_refused_not_a_traceback(marquez, pg_server, tmp_path):
    good = run_event("load", inputs=["a"], outputs=["b"])
    await fill_marquez(marquez, [good])
    conn = await asyncpg.connect(marquez)
    try:
        await conn.execute("INSERT INTO lineage_events (event_time, event) VALUES (now(), NULL)")
        await conn.execute(
            "INSERT INTO lineage_events (event_time, event) VALUES (NULL, $1::jsonb)",
            json.dumps(run_event("untimed", inputs=["a"], outputs=["c"], time=5)),
        )
    finally:
        await conn.close()
    async with migrated_database(pg_server, "headwater_mqz_target") as target:
        err = finish(headwater_import(target, "--from", marquez, cwd=tmp_path))
        # A row without event_time still holds an event with its eventTime: it is imported.
        assert "imported 2, already stored 0, refused 1" in err
        assert "refused, event: null: 1" in err
        assert "imported 0," in finish(headwater_import(target, "--from", marquez, cwd=tmp_path))


async def test_refused_events_are_counted_and_kept_with_their_reason(marquez, pg_server, tmp_path):
    good = run_event("load", inputs=["a"], outputs=["b"])
    unknown_type = run_event("load", "FINISHED", inputs=["a"], outputs=["c"], time=1)
    no_job_name = run_event("", inputs=["a"], outputs=["d"], time=2)
    await fill_marquez(marquez, [good, unknown_type, no_job_name])
    async with migrated_database(pg_server, "headwater_mqz_target") as target:
        err = finish(headwater_import(target, "--from", marquez, cwd=tmp_path))
        assert "imported 1, already stored 0, refused 2" in err
        refused = [
            json.loads(line) for line in (tmp_path / "marquez-refused.jsonl").read_text().splitlines()
        ]
        assert [r["event"] for r in refused] == [unknown_type, no_job_name]
        assert [e["path"] for r in refused for e in r["errors"]] == ["$.eventType", "$.job.name"]


async def test_events_jsonb_holds_but_json_cannot_be_read_are_refused(marquez, pg_server, tmp_path):
    """jsonb keeps integers longer than Python reads and nesting deeper than a decoder goes."""
    good = run_event("load", inputs=["a"], outputs=["b"])
    await fill_marquez(marquez, [good])
    huge = json.dumps(run_event("huge", time=1)).replace('"eventType"', '"x": 1e5000, "eventType"', 1)
    deep = json.dumps(run_event("deep", time=2)).replace(
        '"eventType"', '"x": ' + "[" * 5000 + "]" * 5000 + ', "eventType"', 1
    )
    conn = await asyncpg.connect(marquez)
    try:
        for text in (huge, deep):
            await conn.execute(
                "INSERT INTO lineage_events (event_time, event, event_type) "
                "VALUES (($1::jsonb->>'eventTime')::timestamptz, $1::jsonb, 'START')",
                text,
            )
    finally:
        await conn.close()
    async with migrated_database(pg_server, "headwater_mqz_target") as target:
        err = finish(headwater_import(target, "--from", marquez, cwd=tmp_path))
        assert "imported 1, already stored 0, refused 2" in err
        refused = [
            json.loads(line) for line in (tmp_path / "marquez-refused.jsonl").read_text().splitlines()
        ]
        assert [r["reason"].split(" (")[0] for r in refused] == [
            "The event is valid JSON with a number too large to read",
            "The event is not valid JSON: nested too deeply to decode",
        ]


async def test_a_database_that_is_not_marquez_is_one_clear_line(pg_server, marquez, tmp_path):
    async with migrated_database(pg_server, "headwater_mqz_target") as target:
        proc = headwater_import(target, "--from", marquez, cwd=tmp_path)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 1
        assert (
            err.strip()
            .splitlines()[-1]
            .endswith("it has no table lineage_events: is it Marquez's database?")
        )
        assert "Traceback" not in err
