"""What only datasets have: current fields and the runs that wrote them; and the dataset bindings
of the shared catalog reads (nodes.py) that loaders and other callers take as plain functions."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES
from headwater.store.catalog.nodes import (
    DATASETS,
    fetch_node_versions,
    fetch_nodes_by_keys,
    fetch_nodes_by_uuids,
    fetch_versions_by_uuids,
    mark_node_deleted,
)
from headwater.store.catalog.records import FieldRecord, RunRecord
from headwater.store.catalog.rows import run_from_row

if TYPE_CHECKING:
    import asyncpg


# The shared reads and writes, bound to datasets.
fetch_datasets_by_keys = partial(fetch_nodes_by_keys, DATASETS)
fetch_datasets_by_uuids = partial(fetch_nodes_by_uuids, DATASETS)
fetch_dataset_versions = partial(fetch_node_versions, DATASETS)
fetch_dataset_versions_by_uuids = partial(fetch_versions_by_uuids, DATASETS)
mark_dataset_deleted = partial(mark_node_deleted, DATASETS)


async def fetch_fields_by_datasets(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[FieldRecord]]:
    """The current fields of datasets, in schema order."""
    out: dict[uuid.UUID, list[FieldRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_fields_by_datasets"], uuids):
        out[r["dataset_uuid"]].append(
            FieldRecord(r["dataset_uuid"], r["name"], r["type"], r["description"], r["position"])
        )
    return out


async def fetch_runs_writing_datasets(
    conn: asyncpg.Connection, uuids: list[uuid.UUID], limit: int
) -> dict[uuid.UUID, list[RunRecord]]:
    """The latest ``limit`` runs that wrote each dataset, newest first."""
    out: dict[uuid.UUID, list[RunRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_runs_writing_datasets"], uuids, limit):
        out[r["dataset_uuid"]].append(run_from_row(r))
    return out


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
