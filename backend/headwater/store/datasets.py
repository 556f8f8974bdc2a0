"""Datasets: identities and aliases, facets, current fields and versions."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from headwater.db.pool import json_text
from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    import asyncpg


@dataclass(frozen=True)
class DatasetRow:
    dataset_uuid: uuid.UUID
    node_id: int
    namespace: str
    name: str
    created: bool


@dataclass(frozen=True)
class DatasetState:
    dataset_uuid: uuid.UUID
    fields_at: dt.datetime | None
    current_version_at: dt.datetime | None
    current_version_uuid: uuid.UUID | None
    fields: list[dict[str, Any]]


@dataclass(frozen=True)
class DatasetUpsert:
    namespace: str
    name: str
    source_name: str | None
    description: str | None
    facets: dict[str, Any]
    deleted_facets: list[str]


async def upsert_namespaces(conn: asyncpg.Connection, names: list[str]) -> None:
    """Register namespaces that are new."""
    await conn.execute(QUERIES["upsert_namespaces"], names)


async def upsert_sources(conn: asyncpg.Connection, sources: list[tuple[str, str | None]]) -> None:
    """Register data sources (name, uri)."""
    if sources:
        await conn.execute(QUERIES["upsert_sources"], [s[0] for s in sources], [s[1] for s in sources])


async def find_dataset_aliases(
    conn: asyncpg.Connection, identities: list[tuple[str, str]]
) -> dict[tuple[str, str], tuple[str, str]]:
    """Map those of these (namespace, name) identities that belong to a dataset to its canonical one."""
    rows = await conn.fetch(
        QUERIES["find_dataset_aliases"], [i[0] for i in identities], [i[1] for i in identities]
    )
    return {(r["namespace"], r["name"]): (r["dataset_namespace"], r["dataset_name"]) for r in rows}


async def fetch_dataset_identities(
    conn: asyncpg.Connection, dataset_uuids: list[uuid.UUID]
) -> dict[uuid.UUID, DatasetRow]:
    """Canonical identity and node id of datasets by uuid."""
    rows = await conn.fetch(QUERIES["fetch_dataset_identities"], dataset_uuids)
    return {
        r["dataset_uuid"]: DatasetRow(r["dataset_uuid"], r["node_id"], r["namespace"], r["name"], False)
        for r in rows
    }


async def upsert_datasets(
    conn: asyncpg.Connection, items: list[DatasetUpsert], at: dt.datetime
) -> list[DatasetRow]:
    """Create or touch datasets by canonical identity; returns one row per item (same order not kept)."""
    rows = await conn.fetch(
        QUERIES["upsert_datasets"],
        [i.namespace for i in items],
        [i.name for i in items],
        [i.source_name for i in items],
        [i.description for i in items],
        [i.facets for i in items],
        [json_text(i.deleted_facets) for i in items],
        at,
    )
    return [
        DatasetRow(r["dataset_uuid"], r["node_id"], r["namespace"], r["name"], r["created"])
        for r in rows
    ]


async def insert_dataset_aliases(
    conn: asyncpg.Connection, aliases: list[tuple[str, str, uuid.UUID, str]]
) -> None:
    """Record identities of datasets; an identity already taken keeps its dataset."""
    if aliases:
        await conn.execute(
            QUERIES["insert_dataset_aliases"],
            [a[0] for a in aliases],
            [a[1] for a in aliases],
            [a[2] for a in aliases],
            [a[3] for a in aliases],
        )


async def fetch_dataset_states(
    conn: asyncpg.Connection, dataset_uuids: list[uuid.UUID]
) -> dict[uuid.UUID, DatasetState]:
    """Current fields and version times of datasets, to decide what an event changes."""
    rows = await conn.fetch(QUERIES["fetch_dataset_states"], dataset_uuids)
    return {
        r["dataset_uuid"]: DatasetState(
            r["dataset_uuid"],
            r["fields_at"],
            r["current_version_at"],
            r["current_version_uuid"],
            r["fields"],
        )
        for r in rows
    }


async def replace_dataset_fields(
    conn: asyncpg.Connection, fields: dict[uuid.UUID, list[dict[str, Any]]], at: dt.datetime
) -> None:
    """Set the current schema of datasets to the given fields."""
    if fields:
        await conn.execute(
            QUERIES["replace_dataset_fields"], list(fields), [json_text(f) for f in fields.values()], at
        )


async def upsert_dataset_versions(
    conn: asyncpg.Connection,
    items: list[tuple[uuid.UUID, list[dict[str, Any]] | None, str | None]],
    run_uuid: uuid.UUID | None,
    at: dt.datetime,
) -> dict[uuid.UUID, tuple[uuid.UUID, bool]]:
    """Version per (dataset, schema, storage version): dataset uuid -> (version uuid, created)."""
    if not items:
        return {}
    rows = await conn.fetch(
        QUERIES["upsert_dataset_versions"],
        [i[0] for i in items],
        [json_text(i[1]) for i in items],
        [i[2] for i in items],
        run_uuid,
        at,
    )
    return {r["dataset_uuid"]: (r["dataset_version_uuid"], r["created"]) for r in rows}


async def set_current_dataset_versions(
    conn: asyncpg.Connection, versions: dict[uuid.UUID, uuid.UUID], at: dt.datetime
) -> None:
    """Point datasets at the version of their latest write by eventTime."""
    if versions:
        await conn.execute(
            QUERIES["set_current_dataset_versions"], list(versions), list(versions.values()), at
        )
