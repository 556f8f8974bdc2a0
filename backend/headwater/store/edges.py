"""Lineage edges (dataset <-> job) and column lineage, with validity intervals."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from headwater.db.pool import json_text
from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    import asyncpg


@dataclass(frozen=True)
class EdgeChange:
    src_node_id: int
    dst_node_id: int
    edge_type: str
    dataset_uuid: uuid.UUID


@dataclass(frozen=True)
class ColumnEdgeRow:
    output_dataset_uuid: uuid.UUID
    output_field: str
    input_dataset_uuid: uuid.UUID
    input_field: str
    transformation_type: str | None
    transformation_subtype: str | None
    description: str | None
    masking: bool | None


@dataclass(frozen=True)
class EventEdges:
    """What one event of a job reports: the edges or column edges, and when and by which run."""

    job_uuid: uuid.UUID
    at: dt.datetime
    run_uuid: uuid.UUID | None
    # (src node, dst node, dataset, READ|WRITE, derived)
    edges: list[tuple[int, int, uuid.UUID, str, bool]] = field(default_factory=list)
    # (column edge, derived, superseded)
    column_edges: list[tuple[ColumnEdgeRow, bool, bool]] = field(default_factory=list)


# The functions below are batch operations (see ``headwater.ingest.rounds``): the requests of several
# events, one statement, one result per request.


def _changes_by_job(rows: list[asyncpg.Record]) -> dict[uuid.UUID, list[EdgeChange]]:
    by_job: dict[uuid.UUID, list[EdgeChange]] = {}
    for r in rows:
        by_job.setdefault(r["job_uuid"], []).append(
            EdgeChange(r["src_node_id"], r["dst_node_id"], r["edge_type"], r["dataset_uuid"])
        )
    return by_job


async def upsert_lineage_edges(
    conn: asyncpg.Connection, requests: list[EventEdges]
) -> list[list[EdgeChange]]:
    """Open or refresh the edges of each event; returns those opened, per event."""
    rows = [
        {
            "src": e[0],
            "dst": e[1],
            "dataset_uuid": e[2],
            "edge_type": e[3],
            "job_uuid": r.job_uuid,
            "at": r.at,
            "run_uuid": r.run_uuid,
            "derived": e[4],
        }
        for r in requests
        for e in r.edges
    ]
    if not rows:
        return [[] for _ in requests]
    opened = _changes_by_job(await conn.fetch(QUERIES["upsert_lineage_edges"], json_text(rows)))
    return [opened.get(r.job_uuid, []) for r in requests]


@dataclass(frozen=True)
class ColumnEdgeOpened:
    output_dataset_uuid: uuid.UUID
    output_field: str
    input_dataset_uuid: uuid.UUID
    input_field: str
    derived: bool


async def upsert_column_lineage(
    conn: asyncpg.Connection, requests: list[EventEdges]
) -> list[list[ColumnEdgeOpened]]:
    """Open or refresh the column edges (output field <- input field) of each event's job; returns
    the edges each request opened (events of one round are of different jobs)."""
    # Thousands of edges a round: one JSON document encodes far faster than thirteen arrays.
    rows = [
        {
            "out_ds": c.output_dataset_uuid,
            "out_field": c.output_field,
            "in_ds": c.input_dataset_uuid,
            "in_field": c.input_field,
            "ttype": c.transformation_type,
            "tsub": c.transformation_subtype,
            "descr": c.description,
            "masking": c.masking,
            "job": r.job_uuid,
            "at": r.at,
            "run_uuid": r.run_uuid,
            "derived": derived,
            "superseded": superseded,
        }
        for r in requests
        for c, derived, superseded in r.column_edges
    ]
    opened: dict[uuid.UUID, list[ColumnEdgeOpened]] = {}
    if rows:
        for r in await conn.fetch(QUERIES["upsert_column_lineage"], json_text(rows)):
            opened.setdefault(r["job_uuid"], []).append(
                ColumnEdgeOpened(
                    r["output_dataset_uuid"],
                    r["output_field"],
                    r["input_dataset_uuid"],
                    r["input_field"],
                    r["derived"],
                )
            )
    return [opened.get(r.job_uuid, []) for r in requests]
