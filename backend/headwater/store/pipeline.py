"""Reads and writes of `headwater spark ...`: id bounds, id-range reads, and heat scores."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from headwater.db.queries import QUERIES
from headwater.store.payloads import payload_texts

if TYPE_CHECKING:
    import asyncpg

# Partitioned reads: the query that reads one id range, and the query that bounds its ids.
RANGE_READS = {
    "fetch_raw_event_hashes": "fetch_raw_event_id_bounds",
    "fetch_raw_events_for_export": "fetch_raw_event_id_bounds",
    "fetch_lineage_nodes_for_export": "fetch_node_id_bounds",
    "fetch_live_node_ids": "fetch_node_id_bounds",
    "fetch_lineage_edges_for_export": "fetch_edge_id_bounds",
    "fetch_current_edges": "fetch_edge_id_bounds",
    "fetch_column_edges_for_export": "fetch_column_edge_id_bounds",
}


@dataclass(frozen=True)
class IdBounds:
    """Smallest and largest id of a table (None when it is empty) and its row count."""

    lo: int | None
    hi: int | None
    rows: int


async def fetch_id_bounds(conn: asyncpg.Connection, read: str) -> IdBounds:
    """The id bounds of the table a range read walks."""
    row = await conn.fetchrow(QUERIES[RANGE_READS[read]])
    assert row is not None
    return IdBounds(row["lo"], row["hi"], int(row["n"] or 0))


async def fetch_id_range(
    conn: asyncpg.Connection, read: str, lo: int, hi: int, params: tuple[Any, ...] = ()
) -> list[tuple[Any, ...]]:
    """Rows of a range read with ids in [lo, hi), as tuples in the query's column order (raw events
    for export: id, event time and payload text)."""
    if read == "fetch_raw_events_for_export":
        return await _events_for_export(conn, lo, hi, *params)
    rows = await conn.fetch(QUERIES[read], lo, hi, *params)
    return [tuple(r.values()) for r in rows]


async def _events_for_export(
    conn: asyncpg.Connection,
    lo: int,
    hi: int,
    since: dt.datetime | None,
    until: dt.datetime | None,
    namespace: str | None,
) -> list[tuple[Any, ...]]:
    """Raw events in [lo, hi) and the time window, decoded; with ``namespace``, those naming it as
    their job's namespace or one of their datasets' (parsed only when the job does not settle it)."""
    rows = await conn.fetch(QUERIES["fetch_raw_events_for_export"], lo, hi, since, until)
    texts = await payload_texts(conn, rows)
    return [
        (r["raw_event_id"], r["event_time"], text)
        for r, text in zip(rows, texts, strict=True)
        if namespace is None or r["job_namespace"] == namespace or _names_namespace(text, namespace)
    ]


def _names_namespace(payload: str, namespace: str) -> bool:
    """Whether an event names ``namespace`` as one of its inputs', outputs' or its dataset's."""
    try:
        event = msgspec.json.decode(payload)
    except msgspec.DecodeError:
        return False
    if not isinstance(event, dict):
        return False
    datasets = [event.get("dataset")]
    for side in ("inputs", "outputs"):
        listed = event.get(side)
        if isinstance(listed, list):
            datasets.extend(listed)
    return any(isinstance(d, dict) and d.get("namespace") == namespace for d in datasets)


async def insert_heat_run(
    conn: asyncpg.Connection, damping: float, max_iterations: int, tolerance: float
) -> int:
    """Start a heat run; returns its id."""
    return int(await conn.fetchval(QUERIES["insert_heat_run"], damping, max_iterations, tolerance))


async def stage_heat_scores(
    conn: asyncpg.Connection, heat_run_id: int, scores: list[tuple[int, float]]
) -> None:
    """Stage (node_id, heat) scores of a heat run with COPY."""
    if scores:
        await conn.copy_records_to_table(
            "heat_scores",
            records=[(heat_run_id, n, h) for n, h in scores],
            columns=["heat_run_id", "node_id", "heat"],
        )


@dataclass(frozen=True)
class HeatApplied:
    datasets: int
    jobs: int
    changed: int


async def apply_heat_scores(
    conn: asyncpg.Connection, heat_run_id: int, nodes: int, edges: int, iterations: int, delta: float
) -> HeatApplied:
    """Move a run's staged scores into datasets.heat and jobs.heat, in one transaction."""
    async with conn.transaction():
        row = await conn.fetchrow(
            QUERIES["apply_heat_scores"], heat_run_id, nodes, edges, iterations, delta
        )
    assert row is not None
    return HeatApplied(int(row["datasets"]), int(row["jobs"]), int(row["changed"]))


def as_utc(value: dt.datetime | None) -> dt.datetime | None:
    """A time bound for the queries: naive times are UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=dt.UTC)


async def fetch_hottest_nodes(conn: asyncpg.Connection, limit: int) -> list[tuple[str, float]]:
    """The hottest datasets and jobs as (node key, heat)."""
    rows = await conn.fetch(QUERIES["fetch_hottest_nodes"], limit)
    return [(r["node_key"], float(r["heat"])) for r in rows]


async def vacuum_model(conn: asyncpg.Connection) -> None:
    """Reclaim dead row versions of the tables ingest updates, and refresh their statistics.

    Outside a transaction only (VACUUM cannot run inside one).
    """
    await conn.execute(QUERIES["vacuum_model"])


async def analyze_model(conn: asyncpg.Connection) -> None:
    """Refresh the planner's statistics of the tables ingest only inserts into."""
    await conn.execute(QUERIES["analyze_model"])
