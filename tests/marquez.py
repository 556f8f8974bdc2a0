"""A database laid out as Marquez's, holding events in its `lineage_events`, for import tests."""

from __future__ import annotations

import datetime as dt
import json
import random
from typing import Any

import asyncpg

from tests.corpus import EVENTS
from tests.factories import mixed_history

# Marquez's lineage_events as its migrations leave it (V17.2, changed in V20, V33, V36, V54, V66.2).
MARQUEZ_DDL = """
CREATE TABLE lineage_events (
    event_time    timestamp with time zone,
    event         jsonb,
    event_type    text,
    run_uuid      uuid,
    job_name      text,
    job_namespace text,
    producer      text,
    created_at    timestamp with time zone DEFAULT now(),
    _event_type   varchar(64) NOT NULL DEFAULT 'RUN_EVENT'
);
CREATE INDEX lineage_events_event_time ON lineage_events (event_time DESC);
"""


def _time(event: dict[str, Any]) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(event["eventTime"].replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def in_ingest_order(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """eventTime, then the order Marquez received them in (created_at)."""
    return [e for _, e in sorted(enumerate(events), key=lambda p: (_time(p[1]), p[0]))]


def history() -> list[dict[str, Any]]:
    """Spark-shaped runs with parents, schema, column lineage and a tie, plus real Spark events."""
    events = mixed_history()
    real = sorted(EVENTS.glob("spark/compat-cll-run-0*.json"))
    events += [json.loads(p.read_text()) for p in real]
    return events


async def fill_marquez(url: str, events: list[dict[str, Any]], *, duplicates: int = 0) -> None:
    """Create Marquez's table and store events in it (``add_to_marquez``)."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(MARQUEZ_DDL)
    finally:
        await conn.close()
    await add_to_marquez(url, events, duplicates=duplicates)


async def add_to_marquez(url: str, events: list[dict[str, Any]], *, duplicates: int = 0) -> None:
    """Store events as Marquez does, in a scrambled physical order; created_at keeps their order,
    after the events stored before."""
    conn = await asyncpg.connect(url)
    try:
        latest = await conn.fetchval("SELECT max(created_at) FROM lineage_events")
        received = (latest or dt.datetime(2026, 6, 1, tzinfo=dt.UTC)) + dt.timedelta(seconds=1)
        rows = [
            (
                _time(e),
                json.dumps(e),
                e.get("eventType"),
                e.get("job", {}).get("name"),
                e.get("job", {}).get("namespace"),
                e.get("producer"),
                received + dt.timedelta(seconds=i),
            )
            for i, e in enumerate(events)
        ]
        rows += rows[:duplicates]  # Marquez stores a retried event again
        random.Random(7).shuffle(rows)
        await conn.executemany(
            "INSERT INTO lineage_events (event_time, event, event_type, job_name, job_namespace,"
            " producer, created_at) VALUES ($1, $2::jsonb, $3, $4, $5, $6, $7)",
            rows,
        )
    finally:
        await conn.close()
