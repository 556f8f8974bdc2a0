"""Retention: history older than a horizon is removed, what is current never is.

A pass with ``keep_days`` removes, before ``now - keep_days``:

- raw_events: the month partitions that end before the horizon, each dropped at once (a month
  partly before the horizon is kept whole), and the default partition's events before it;
- runs whose last event is before the horizon, with their state events and dataset links, unless
  something current points to them: the latest run of a job, the last run of an open edge or column
  edge, the run that made a current job or dataset version, the parent of a recent or latest run;
- job and dataset versions made before the horizon that are not current and that no kept run uses;
- edges and column edges closed before the horizon (valid at no time from the horizon on);
- change-log entries recorded before the horizon: the highest id removed is recorded first, so that
  a subscriber resuming from an older cursor is refused instead of silently missing changes.

Every dataset and job keeps its current version and its current lineage (open edges), however old.
The pass is recorded (``retention_passes``) before anything is removed, so that from then on a
point-in-time question before the horizon is refused; it ends with one change-log entry.

Deletes go in transactions of at most ``batch_size`` keys, so that no lock is held for long and
ingest goes on meanwhile; dropping a partition waits at most ``LOCK_TIMEOUT`` for raw_events' lock
and is left for the next pass when the table stays busy.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
from dataclasses import dataclass, field

import asyncpg

from headwater.db.queries import QUERIES
from headwater.operations.partitions import LOCK_TIMEOUT, prepare_partitions
from headwater.settings import MAX_RETENTION_DAYS
from headwater.store import events as event_store
from headwater.store.changes import Change, insert_changes

log = logging.getLogger(__name__)

BATCH_SIZE = 5_000
# Tries at raw_events' lock per partition before leaving it to the next pass.
DROP_TRIES = 3
CHANGE_KIND = "RETENTION_APPLIED"
# Any fixed 64-bit number, other than the migration runner's and serve's upkeep's.
_LOCK_KEY = 0x4845_4144_5245_544E

# What a pass collects candidates of, in order (versions after runs: a version a removed run used
# may go), and the query that collects each.
_COLLECTED = (
    ("runs", "collect_retention_runs"),
    ("job_versions", "collect_retention_job_versions"),
    ("dataset_versions", "collect_retention_dataset_versions"),
    ("lineage_edges", "collect_retention_edges"),
    ("column_lineage", "collect_retention_column_edges"),
)
# Tables in the order a pass reports them.
TABLES = (
    "raw_events",
    "runs",
    "run_states",
    "run_datasets",
    "job_versions",
    "dataset_versions",
    "lineage_edges",
    "column_lineage",
    "change_log",
)


@dataclass
class RetentionReport:
    """What a pass removed (or, for a dry run, would remove): rows per table, partitions dropped."""

    horizon: dt.datetime
    keep_days: int
    dry_run: bool
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    partitions: list[str] = field(default_factory=list)
    # Partitions before the horizon left for the next pass because raw_events stayed busy.
    busy_partitions: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return {
            "horizon": self.horizon.isoformat(),
            "keepDays": self.keep_days,
            "dryRun": self.dry_run,
            "rows": self.rows,
            "partitions": self.partitions,
            "busyPartitions": self.busy_partitions,
        }


def horizon_for(keep_days: int, now: dt.datetime | None = None) -> dt.datetime:
    """The instant before which history goes when ``keep_days`` days are kept."""
    if not 1 <= keep_days <= MAX_RETENTION_DAYS:
        raise ValueError(f"retention keeps 1 to {MAX_RETENTION_DAYS:,} days, got {keep_days}")
    return (now or dt.datetime.now(dt.UTC)) - dt.timedelta(days=keep_days)


async def run_retention(
    conn: asyncpg.Connection,
    keep_days: int,
    *,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
    now: dt.datetime | None = None,
) -> RetentionReport:
    """One pass on a connection of its own, outside any transaction (each batch commits)."""
    report = RetentionReport(horizon_for(keep_days, now), keep_days, dry_run)
    if dry_run:
        await _plan(conn, report)
        return report
    # One pass at a time (`headwater retention` beside serve's periodic pass): the second waits,
    # then finds what the first left.
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        await _remove(conn, report, batch_size)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    return report


async def _remove(conn: asyncpg.Connection, report: RetentionReport, batch_size: int) -> None:
    pass_id = await conn.fetchval(QUERIES["insert_retention_pass"], report.horizon, report.keep_days)
    await prepare_partitions(conn)
    await _drop_partitions(conn, report)
    while deleted := await _deleted(
        conn, "delete_default_raw_events_before", report.horizon, batch_size
    ):
        report.rows["raw_events"] += deleted
    await conn.execute(QUERIES["create_retention_candidates"])
    for table, collect in _COLLECTED:
        total = await _collect(conn, collect, report.horizon)
        if table == "runs":
            await _delete_runs(conn, report, total, batch_size)
        else:
            report.rows[table] = await _delete_collected(conn, table, total, batch_size)
    through = await changes_recorded_before(conn, report.horizon)
    if through is not None:
        await conn.execute(QUERIES["set_retention_changes_through"], pass_id, through)
        while deleted := await _deleted(conn, "delete_retention_changes", through, batch_size):
            report.rows["change_log"] += deleted
    await conn.execute(QUERIES["finish_retention_pass"], pass_id, json.dumps(report.as_json()))
    async with conn.transaction():
        await insert_changes(
            conn,
            [Change(CHANGE_KIND, "retention", None, dt.datetime.now(dt.UTC), report.as_json())],
        )


async def _plan(conn: asyncpg.Connection, report: RetentionReport) -> None:
    """Count what a pass would remove, removing nothing."""
    for partition in await event_store.fetch_partitions(conn):
        if partition.ends <= report.horizon:
            report.partitions.append(partition.name)
            report.rows["raw_events"] += await event_store.count_partition_rows(conn, partition.name)
    report.rows["raw_events"] += int(
        await conn.fetchval(QUERIES["count_default_raw_events_before"], report.horizon)
    )
    await conn.execute(QUERIES["create_retention_candidates"])
    for table, collect in _COLLECTED:
        report.rows[table] = await _collect(conn, collect, report.horizon)
    links = await conn.fetchrow(QUERIES["count_retention_run_rows"])
    assert links is not None
    report.rows["run_states"] = int(links["run_states"])
    report.rows["run_datasets"] = int(links["run_datasets"])
    through = await changes_recorded_before(conn, report.horizon)
    if through is not None:
        report.rows["change_log"] = int(await conn.fetchval(QUERIES["count_changes_through"], through))


async def changes_recorded_before(conn: asyncpg.Connection, horizon: dt.datetime) -> int | None:
    """The highest change id recorded before ``horizon``, None if there is none.

    Ids are handed out in time order, so a binary search over the id index finds it in a few dozen
    lookups however long the log is (a scan of the whole log would read every change ever made).
    """
    bounds = await conn.fetchrow(QUERIES["fetch_change_id_bounds"])
    assert bounds is not None
    low, high = bounds["low"], bounds["high"]
    if low is None:
        return None
    first = await conn.fetchrow(QUERIES["fetch_change_recorded_from"], low)
    if first is None or first["created_at"] >= horizon:
        return None
    # The change at `low` is before the horizon; every change above `high` is not.
    while low < high:
        probe = (low + high + 1) // 2
        row = await conn.fetchrow(QUERIES["fetch_change_recorded_from"], probe)
        if row is not None and row["created_at"] < horizon:
            low = min(int(row["change_id"]), high)
        else:
            high = probe - 1
    return int(low)


async def _collect(conn: asyncpg.Connection, query: str, horizon: dt.datetime) -> int:
    status = await conn.execute(QUERIES[query], horizon)
    return _rows(status)


def _rows(status: str) -> int:
    """The row count at the end of a command tag ("DELETE 5000", "INSERT 0 12")."""
    return int(status.rsplit(" ", 1)[-1])


async def _drop_partitions(conn: asyncpg.Connection, report: RetentionReport) -> None:
    for partition in await event_store.fetch_partitions(conn):
        if partition.ends > report.horizon:
            break
        for attempt in range(DROP_TRIES):
            try:
                async with conn.transaction():
                    await conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
                    rows = await event_store.count_partition_rows(conn, partition.name)
                    await event_store.drop_partition(conn, partition)
            except asyncpg.LockNotAvailableError:
                if attempt + 1 < DROP_TRIES:
                    await asyncio.sleep(1)
                    continue
                log.warning("raw_events stayed busy: %s is left for the next pass", partition.name)
                report.busy_partitions.append(partition.name)
            else:
                report.partitions.append(partition.name)
                report.rows["raw_events"] += rows
            break


async def _deleted(conn: asyncpg.Connection, query: str, *args: object) -> int:
    return _rows(await conn.execute(QUERIES[query], *args))


async def _delete_runs(
    conn: asyncpg.Connection, report: RetentionReport, total: int, batch_size: int
) -> None:
    for lo in range(0, total, batch_size):
        row = await conn.fetchrow(QUERIES["delete_retention_runs"], lo, lo + batch_size, report.horizon)
        assert row is not None
        for table in ("runs", "run_states", "run_datasets"):
            report.rows[table] += int(row[table])


_DELETES = {
    "job_versions": "delete_retention_job_versions",
    "dataset_versions": "delete_retention_dataset_versions",
    "lineage_edges": "delete_retention_edges",
    "column_lineage": "delete_retention_column_edges",
}


async def _delete_collected(conn: asyncpg.Connection, table: str, total: int, batch_size: int) -> int:
    deleted = 0
    for lo in range(0, total, batch_size):
        deleted += await _deleted(conn, _DELETES[table], lo, lo + batch_size)
    return deleted
