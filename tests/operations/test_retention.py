"""Retention removes history before the horizon and never what is current; asOf before it is refused."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from litestar.datastructures import State
from litestar.testing import AsyncTestClient

from headwater.api.graphql.context import Context
from headwater.api.graphql.loaders import Loaders
from headwater.api.graphql.schema import schema
from headwater.app import create_app
from headwater.db.pool import register_codecs
from headwater.feed.hub import ChangeFeed
from headwater.feed.scopes import LineageScopes
from headwater.lineage.columns import fetch_column_lineage
from headwater.lineage.graph import fetch_lineage
from headwater.operations import retention
from headwater.operations.command import report_lines
from headwater.operations.retention import TABLES, RetentionReport, run_retention
from headwater.settings import Settings
from tests.client import execute
from tests.factories import job_run, mixed_history, parent_facet, rid, run_event, sql_facet
from tests.operations.conftest import ingest
from tests.snapshot import model_snapshot

pytestmark = pytest.mark.db

KEEP_DAYS = 30
# mixed_history() happens on 2026-01-01, long before the horizon; this run of `report` is recent.
RECENT_RUN = uuid.UUID("0194a0c4-1f0e-7cc5-a1b5-4b3c7a9c2d11")
ROOTS = ["dataset:warehouse:daily", "dataset:warehouse:audit_log", "dataset:warehouse:orders"]


def history() -> list[dict[str, Any]]:
    recent = job_run(
        "report",
        inputs=["orders"],
        outputs=["daily"],
        run_id=RECENT_RUN,
        job_facets=sql_facet("SELECT * FROM orders"),
    )
    now = dt.datetime.now(dt.UTC)
    for offset, event in enumerate(recent):
        event["eventTime"] = (now - dt.timedelta(days=1, minutes=-offset)).isoformat()
    return mixed_history() + recent


async def current_lineage(conn: asyncpg.Connection) -> Any:
    graph = await fetch_lineage(conn, ROOTS, depth=10)
    columns = await fetch_column_lineage(conn, ["dataset:warehouse:orders"], depth=10)
    return sorted((n.id, n.data_json) for n in graph.nodes), sorted(graph.edges), columns.edges


async def dangling(conn: asyncpg.Connection) -> dict[str, int]:
    """Current things pointing at rows that are gone (all must be 0)."""
    return dict(
        await conn.fetchrow(
            """
            SELECT
              (SELECT count(*) FROM jobs j WHERE j.current_version_uuid IS NOT NULL AND NOT EXISTS
                 (SELECT 1 FROM job_versions v WHERE v.job_version_uuid = j.current_version_uuid)) AS job_versions,
              (SELECT count(*) FROM datasets d WHERE d.current_version_uuid IS NOT NULL AND NOT EXISTS
                 (SELECT 1 FROM dataset_versions v WHERE v.dataset_version_uuid = d.current_version_uuid))
                 AS dataset_versions,
              (SELECT count(*) FROM jobs j WHERE j.latest_run_uuid IS NOT NULL AND NOT EXISTS
                 (SELECT 1 FROM runs r WHERE r.run_uuid = j.latest_run_uuid)) AS latest_runs,
              (SELECT count(*) FROM lineage_edges e WHERE e.valid_to IS NULL AND e.last_run_uuid IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_uuid = e.last_run_uuid)) AS edge_runs,
              (SELECT count(*) FROM runs r WHERE r.job_version_uuid IS NOT NULL AND NOT EXISTS
                 (SELECT 1 FROM job_versions v WHERE v.job_version_uuid = r.job_version_uuid)) AS run_versions,
              (SELECT count(*) FROM run_states s WHERE NOT EXISTS
                 (SELECT 1 FROM runs r WHERE r.run_uuid = s.run_uuid)) AS orphan_states
            """
        )
    )


async def test_a_pass_removes_old_history_and_keeps_what_is_current(
    ops: asyncpg.Connection, ops_url: str
) -> None:
    await ingest(ops, history())
    lineage_before = await current_lineage(ops)

    planned = await run_retention(ops, KEEP_DAYS, dry_run=True)
    snapshot = await model_snapshot(ops_url)
    # The dry run removes nothing, and says what would go.
    assert await model_snapshot(ops_url) == snapshot
    assert planned.partitions == ["raw_events_2026_01"]
    assert planned.rows["raw_events"] == await ops.fetchval(
        "SELECT count(*) FROM raw_events WHERE event_time < '2026-02-01Z'"
    )
    assert planned.rows["runs"] > 0
    assert planned.rows["lineage_edges"] > 0
    assert await ops.fetchval("SELECT count(*) FROM retention_passes") == 0

    removed = await run_retention(ops, KEEP_DAYS, batch_size=2)
    assert removed.rows == planned.rows
    assert removed.partitions == planned.partitions

    # Every dataset and job keeps its current version and current lineage, however old.
    assert await current_lineage(ops) == lineage_before
    assert set((await dangling(ops)).values()) == {0}
    runs = {r["run_uuid"] for r in await ops.fetch("SELECT run_uuid FROM runs")}
    # The first run of `app.load_orders` is history. The second is the job's latest; the audit's
    # only run is its latest; report-1 made the current version of `daily` (the same ever since),
    # report-2 the job version the recent run still has: they stay, however old.
    assert rid("load-1") not in runs
    assert {rid("load-2"), rid("audit-1"), rid("report-1"), rid("report-2"), RECENT_RUN} <= runs
    # The edge from customers, closed on 2026-01-01, is gone with the events of that month.
    assert not await ops.fetchval(
        "SELECT count(*) FROM lineage_edges WHERE valid_to IS NOT NULL AND valid_to < $1",
        removed.horizon,
    )
    assert await ops.fetchval("SELECT to_regclass('raw_events_2026_01')") is None
    assert await ops.fetchval("SELECT count(*) FROM raw_events") == 2

    # One change-log entry tells subscribers.
    change = await ops.fetchrow("SELECT kind, details FROM change_log ORDER BY change_id DESC LIMIT 1")
    assert change["kind"] == "RETENTION_APPLIED"
    assert change["details"]["rows"] == removed.rows
    # A second pass finds nothing more.
    again = await run_retention(ops, KEEP_DAYS, dry_run=True)
    assert set(again.rows.values()) == {0}


@pytest.fixture
async def app(ops_url: str) -> AsyncIterator[AsyncTestClient[Any]]:
    settings = Settings(database_url=ops_url, pool_min_size=1, pool_max_size=3)
    async with AsyncTestClient(app=create_app(settings)) as client:
        yield client


LINEAGE = """query($asOf: DateTime) {
  lineage(nodeId: "dataset:warehouse:daily", depth: 3, direction: UPSTREAM, asOf: $asOf) {
    __typename
    ... on LineageGraph { nodes { id } }
    ... on Problem { code message }
  }
}"""


async def test_a_question_before_the_horizon_is_refused_naming_it(
    ops: asyncpg.Connection, app: AsyncTestClient[Any]
) -> None:
    await ingest(ops, history())
    before = "2026-01-01T12:05:00Z"
    answered = await app.get(
        "/api/v1/lineage", params={"nodeId": "dataset:warehouse:daily", "asOf": before}
    )
    assert answered.status_code == 200

    report = await run_retention(ops, KEEP_DAYS)
    horizon = report.horizon.isoformat()
    for path, params in [
        ("/api/v1/lineage", {"nodeId": "dataset:warehouse:daily", "asOf": before}),
        ("/api/v1/column-lineage", {"nodeId": "dataset:warehouse:orders", "asOf": before}),
        (
            "/api/v1/lineage/path",
            {"from": "dataset:warehouse:orders", "to": "dataset:warehouse:daily", "asOf": before},
        ),
    ]:
        refused = await app.get(path, params=params)
        assert refused.status_code == 400, (path, refused.text)
        problem = refused.json()
        assert problem["code"] == "before_retention_horizon", problem
        assert horizon in problem["detail"]

    data = (await execute(app, LINEAGE, asOf=before))["data"]["lineage"]
    assert data["__typename"] == "InvalidInputError"
    assert data["code"] == "before_retention_horizon"
    assert horizon in data["message"]

    # From the horizon on, the past is answered.
    after = (report.horizon + dt.timedelta(seconds=1)).isoformat()
    data = (await execute(app, LINEAGE, asOf=after))["data"]["lineage"]
    assert data["__typename"] == "LineageGraph"
    assert "job:pipelines:report" in {n["id"] for n in data["nodes"]}


def _headwater(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env["HEADWATER_DATABASE_URL"] = url
    return subprocess.run(
        [sys.executable, "-m", "headwater.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_the_command_prints_per_table_what_goes_and_the_dry_run_keeps_it(
    ops: asyncpg.Connection, ops_url: str
) -> None:
    await ingest(ops, history())
    stored = await ops.fetchval("SELECT count(*) FROM raw_events")
    dry = await asyncio.to_thread(
        _headwater, ops_url, "retention", "--keep", str(KEEP_DAYS), "--dry-run"
    )
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert "(dry run: nothing removed)" in lines[0]
    assert [line.split()[0] for line in lines[2 : 2 + len(TABLES)]] == list(TABLES)
    assert "raw_events partitions to drop: raw_events_2026_01" in lines
    assert await ops.fetchval("SELECT count(*) FROM raw_events") == stored

    done = await asyncio.to_thread(_headwater, ops_url, "retention", "--keep", str(KEEP_DAYS))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[2:] == [
        line for line in lines[2:] if not line.startswith("raw_events partitions")
    ] + ["raw_events partitions dropped: raw_events_2026_01"]
    assert await ops.fetchval("SELECT count(*) FROM raw_events") == 2

    refused = await asyncio.to_thread(_headwater, ops_url, "retention", "--keep", "0")
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith("error: argument --keep: must be 1 or more, got 0")
    refused = await asyncio.to_thread(_headwater, ops_url, "retention", "--keep", "99999999999")
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith(
        "error: argument --keep: must be at most 36,500, got 99999999999"
    )


def test_the_report_lines_name_every_table() -> None:
    report = RetentionReport(dt.datetime(2026, 1, 1, tzinfo=dt.UTC), 7, dry_run=False)
    report.rows["runs"] = 1234
    lines = report_lines(report)
    assert lines[0] == "retention keeping 7 days: history before 2026-01-01T00:00:00+00:00"
    assert lines[3].split() == ["runs", "1,234"]


async def test_serve_runs_retention_when_configured(ops: asyncpg.Connection, ops_url: str) -> None:
    await ingest(ops, history())
    settings = Settings(database_url=ops_url, pool_min_size=1, pool_max_size=3, retention_days=KEEP_DAYS)
    async with AsyncTestClient(app=create_app(settings)):
        for _ in range(100):
            if await ops.fetchval("SELECT count(*) FROM retention_passes WHERE finished_at IS NOT NULL"):
                break
            await asyncio.sleep(0.1)
    row = await ops.fetchrow("SELECT keep_days, removed FROM retention_passes")
    assert row["keep_days"] == KEEP_DAYS
    assert row["removed"]["partitions"] == ["raw_events_2026_01"]


def test_the_retention_setting_is_read_and_checked() -> None:
    assert Settings.from_env({}).retention_days is None
    assert Settings.from_env({"HEADWATER_RETENTION_DAYS": "90"}).retention_days == 90
    for days in ("0", "99999999999"):
        with pytest.raises(ValueError, match="HEADWATER_RETENTION_DAYS must be 1 to 36,500, got"):
            Settings.from_env({"HEADWATER_RETENTION_DAYS": days})


async def test_a_partition_the_table_is_too_busy_to_drop_is_left_for_the_next_pass(
    ops: asyncpg.Connection, ops_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention, "LOCK_TIMEOUT", "100ms")
    monkeypatch.setattr(retention, "DROP_TRIES", 1)
    await ingest(ops, history())
    reader = await asyncpg.connect(ops_url)
    try:
        # A long read of raw_events: the pass does not wait for it, and removes the rest.
        async with reader.transaction():
            await reader.execute("SELECT count(*) FROM raw_events")
            busy = await run_retention(ops, KEEP_DAYS)
    finally:
        await reader.close()
    assert busy.busy_partitions == ["raw_events_2026_01"]
    assert busy.partitions == []
    assert busy.rows["raw_events"] == 0
    assert busy.rows["runs"] > 0
    assert "raw_events was busy, left for the next pass: raw_events_2026_01" in report_lines(busy)

    later = await run_retention(ops, KEEP_DAYS)
    assert later.partitions == ["raw_events_2026_01"]
    assert later.rows["runs"] == 0


async def test_old_events_in_the_default_partition_go_too(ops: asyncpg.Connection) -> None:
    await ingest(ops, history())
    # Stored without ingest's partition check: to the default partition, as when a month's
    # partition could not be made.
    await ops.execute(
        "INSERT INTO raw_events (content_hash, event_kind, event_time, payload)"
        " VALUES ('\\x01', 'RUN', '2025-07-07Z', '{}'), ('\\x02', 'RUN', '2999-01-01Z', '{}')"
    )
    planned = await run_retention(ops, KEEP_DAYS, dry_run=True)
    removed = await run_retention(ops, KEEP_DAYS)
    assert removed.rows["raw_events"] == planned.rows["raw_events"]
    assert await ops.fetchval("SELECT array_agg(event_time) FROM raw_events_default") == [
        dt.datetime(2999, 1, 1, tzinfo=dt.UTC)
    ]


async def test_two_passes_at_once_remove_everything_once(ops: asyncpg.Connection, ops_url: str) -> None:
    await ingest(ops, history())
    planned = await run_retention(ops, KEEP_DAYS, dry_run=True)
    other = await asyncpg.connect(ops_url)
    try:
        first, second = await asyncio.gather(
            run_retention(ops, KEEP_DAYS), run_retention(other, KEEP_DAYS)
        )
    finally:
        await other.close()
    for table in TABLES:
        assert first.rows[table] + second.rows[table] == planned.rows[table], table
    assert sorted(first.partitions + second.partitions) == planned.partitions


async def test_the_parent_of_a_kept_run_is_kept(ops: asyncpg.Connection) -> None:
    # The first application run started `export`, whose only run it is; the second did not, and
    # read and wrote something else (a job version of its own: the first made no current version).
    first, second = rid("app-first"), rid("app-second")
    events = [run_event("app", "START", run_id=first, time=0)]
    events += job_run(
        "app.export", inputs=["a"], outputs=["b"], start=1, end=2, run_facets=parent_facet(first, "app")
    )
    events += [run_event("app", "COMPLETE", run_id=first, time=3)]
    events += job_run("app", inputs=["x"], outputs=["y"], start=10, end=11, run_id=second)
    await ingest(ops, events)
    await run_retention(ops, KEEP_DAYS)
    runs = {r["run_uuid"] for r in await ops.fetch("SELECT run_uuid FROM runs")}
    assert first in runs
    assert second in runs
    assert set((await dangling(ops)).values()) == {0}
    assert not await ops.fetchval(
        "SELECT count(*) FROM runs c WHERE c.parent_run_uuid IS NOT NULL"
        " AND NOT EXISTS (SELECT 1 FROM runs p WHERE p.run_uuid = c.parent_run_uuid)"
    )


async def test_old_changes_go_and_a_cursor_before_them_is_refused(
    ops: asyncpg.Connection, ops_url: str, settings: Settings
) -> None:
    await ingest(ops, history())
    ids = [r["change_id"] for r in await ops.fetch("SELECT change_id FROM change_log ORDER BY 1")]
    # The log keeps when a change was recorded, not the event's time: the first half is made old.
    old = ids[: len(ids) // 2]
    await ops.execute(
        "UPDATE change_log SET created_at = now() - interval '400 days' WHERE change_id = ANY($1)", old
    )
    planned = await run_retention(ops, KEEP_DAYS, dry_run=True)
    assert planned.rows["change_log"] == len(old)
    removed = await run_retention(ops, KEEP_DAYS, batch_size=2)
    assert removed.rows["change_log"] == len(old)
    kept = [r["change_id"] for r in await ops.fetch("SELECT change_id FROM change_log ORDER BY 1")]
    assert kept[:-1] == ids[len(old) :]
    assert (await ops.fetchval("SELECT kind FROM change_log WHERE change_id = $1", kept[-1])) == (
        "RETENTION_APPLIED"
    )

    # Resuming after a removed change would miss the rest of them: refused, naming retention. From
    # the last removed one on, nothing is missed.
    pool = await asyncpg.create_pool(ops_url, min_size=1, max_size=2, init=register_codecs)
    feed = ChangeFeed(pool)
    await feed.start()
    context = Context(
        state=State(
            {
                "pool": pool,
                "settings": settings,
                "feed": feed,
                "lineage_scopes": LineageScopes(pool, feed),
            }
        ),
        loaders=Loaders(pool),
    )
    try:
        for cursor, refused in ((old[0], True), (old[-2], True), (old[-1], False)):
            stream = await schema.subscribe(
                "subscription($after: String) { lineageChanges(after: $after) { cursor kind } }",
                variable_values={"after": str(cursor)},
                context_value=context,
            )
            first = await asyncio.wait_for(anext(stream), 10)  # type: ignore[arg-type]
            await stream.aclose()  # type: ignore[union-attr]
            errors = [e.extensions["code"] for e in first.errors or []]  # type: ignore[union-attr]
            assert errors == (["before_retention_horizon"] if refused else []), cursor
            if not refused:
                assert first.data["lineageChanges"]["cursor"] == str(ids[len(old)])  # type: ignore[union-attr]
    finally:
        await feed.close()
        await pool.close()
