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

    @classmethod
    def of(cls, row: asyncpg.Record) -> EdgeChange:
        """The edge a statement opened or closed, from the columns it returns."""
        return cls(row["src_node_id"], row["dst_node_id"], row["edge_type"], row["dataset_uuid"])


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


@dataclass(frozen=True)
class ColumnEdgeOpened:
    output_dataset_uuid: uuid.UUID
    output_field: str
    input_dataset_uuid: uuid.UUID
    input_field: str
    derived: bool


@dataclass(frozen=True)
class EdgesOpened:
    """What an event's edges opened (edges it only refreshed are not listed)."""

    edges: list[EdgeChange] = field(default_factory=list)
    column_edges: list[ColumnEdgeOpened] = field(default_factory=list)


async def upsert_edges(conn: asyncpg.Connection, requests: list[EventEdges]) -> list[EdgesOpened]:
    """Open or refresh the edges and the column edges (output field <- input field) of each event's
    job; returns what each request opened (events of one round are of different jobs)."""
    edges = [
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
    # Thousands of column edges a round: one JSON document encodes far faster than thirteen arrays.
    column_edges = [
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
    opened: dict[uuid.UUID, EdgesOpened] = {}
    if edges or column_edges:
        for row in await conn.fetch(QUERIES["upsert_edges"], json_text(edges), json_text(column_edges)):
            job = opened.setdefault(row["job_uuid"], EdgesOpened())
            if row["column_edge"]:
                job.column_edges.append(
                    ColumnEdgeOpened(
                        row["output_dataset_uuid"],
                        row["output_field"],
                        row["input_dataset_uuid"],
                        row["input_field"],
                        row["derived"],
                    )
                )
            else:
                job.edges.append(EdgeChange.of(row))
    return [opened.get(r.job_uuid, EdgesOpened()) for r in requests]
