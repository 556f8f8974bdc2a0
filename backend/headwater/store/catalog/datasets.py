"""What only datasets have: their current fields, the runs that wrote them and their columns'
inputs (what they share with jobs is in nodes.py)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES
from headwater.store.catalog.records import FieldRecord, RunRecord
from headwater.store.catalog.rows import field_from_row, grouped, run_from_row

if TYPE_CHECKING:
    import asyncpg


async def fetch_runs_writing_datasets(
    conn: asyncpg.Connection, uuids: list[uuid.UUID], limit: int
) -> dict[uuid.UUID, list[RunRecord]]:
    """The latest ``limit`` runs that wrote each dataset, newest first."""
    rows = await conn.fetch(QUERIES["fetch_runs_writing_datasets"], uuids, limit)
    return grouped(uuids, rows, "dataset_uuid", run_from_row)


async def fetch_fields_by_datasets(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[FieldRecord]]:
    """The current fields of datasets, in schema order."""
    rows = await conn.fetch(QUERIES["fetch_fields_by_datasets"], uuids)
    return grouped(uuids, rows, "dataset_uuid", field_from_row)


@dataclass(frozen=True)
class ColumnInputRecord:
    """An input field of a dataset's field, from current column lineage."""

    dataset_uuid: uuid.UUID
    field: str
    input_namespace: str
    input_dataset: str
    input_field: str
    transformation_type: str | None
    description: str | None


async def fetch_column_inputs_by_datasets(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> list[ColumnInputRecord]:
    """The input fields of every field of datasets, by dataset, field, then input."""
    rows = await conn.fetch(QUERIES["fetch_column_inputs_by_datasets"], uuids)
    return [
        ColumnInputRecord(
            r["dataset_uuid"],
            r["field"],
            r["namespace"],
            r["dataset"],
            r["input_field"],
            r["transformation_type"],
            r["description"],
        )
        for r in rows
    ]
