"""Lineage edges (dataset <-> job) and column lineage, with validity intervals."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

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


def _changes(rows: list[asyncpg.Record]) -> list[EdgeChange]:
    return [
        EdgeChange(r["src_node_id"], r["dst_node_id"], r["edge_type"], r["dataset_uuid"]) for r in rows
    ]


async def upsert_lineage_edges(
    conn: asyncpg.Connection,
    job_uuid: uuid.UUID,
    edges: list[tuple[int, int, uuid.UUID, str, bool]],
    at: dt.datetime,
    run_uuid: uuid.UUID | None,
) -> list[EdgeChange]:
    """Open or refresh (src node, dst node, dataset, READ|WRITE, derived) edges; returns those opened."""
    if not edges:
        return []
    rows = await conn.fetch(
        QUERIES["upsert_lineage_edges"],
        [e[0] for e in edges],
        [e[1] for e in edges],
        [e[2] for e in edges],
        [e[3] for e in edges],
        job_uuid,
        at,
        run_uuid,
        [e[4] for e in edges],
    )
    return _changes(rows)


async def close_stale_job_edges(
    conn: asyncpg.Connection,
    job_uuid: uuid.UUID,
    at: dt.datetime,
    input_uuids: list[uuid.UUID],
    output_uuids: list[uuid.UUID],
) -> list[EdgeChange]:
    """Close the job's edges a completed run no longer has; returns the closed edges."""
    rows = await conn.fetch(QUERIES["close_stale_job_edges"], job_uuid, at, input_uuids, output_uuids)
    return _changes(rows)


async def upsert_column_lineage(
    conn: asyncpg.Connection,
    edges: list[ColumnEdgeRow],
    job_uuid: uuid.UUID | None,
    at: dt.datetime,
    run_uuid: uuid.UUID | None,
    *,
    derived: bool = False,
    superseded: bool = False,
) -> None:
    """Open or refresh column edges (output field <- input field) through a job."""
    if not edges:
        return
    await conn.execute(
        QUERIES["upsert_column_lineage"],
        [e.output_dataset_uuid for e in edges],
        [e.output_field for e in edges],
        [e.input_dataset_uuid for e in edges],
        [e.input_field for e in edges],
        [e.transformation_type for e in edges],
        [e.transformation_subtype for e in edges],
        [e.description for e in edges],
        [e.masking for e in edges],
        job_uuid,
        at,
        run_uuid,
        derived,
        superseded,
    )


async def close_stale_column_lineage(
    conn: asyncpg.Connection,
    job_uuid: uuid.UUID,
    output_uuids: list[uuid.UUID],
    at: dt.datetime,
    run_uuid: uuid.UUID | None,
    *,
    derived: bool,
) -> None:
    """Close the job's column edges into these outputs that the completed run no longer reports."""
    if output_uuids:
        await conn.execute(
            QUERIES["close_stale_column_lineage"], job_uuid, output_uuids, at, derived, run_uuid
        )
