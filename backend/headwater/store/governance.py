"""Governance rows: declared and inherited classifications, violations, and the worker's progress.

A field is ``(dataset uuid, field name)``; the field name '' stands for the dataset itself in
declarations. Functions take lists: the statements they run do not grow with how many fields.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from headwater.db.pool import json_text
from headwater.db.queries import QUERIES
from headwater.errors import DatasetNotFoundError
from headwater.lineage.node_ids import format_node_id

if TYPE_CHECKING:
    import asyncpg

Field = tuple[uuid.UUID, str]
_decode_path = msgspec.json.Decoder(list[dict[str, Any]]).decode
# A path: the hops a label took, the declaring field first ({"dataset", "field", "job"}).
Path = list[dict[str, Any]]


def _columns(fields: list[Field]) -> tuple[list[uuid.UUID], list[str]]:
    return [f[0] for f in fields], [f[1] for f in fields]


@dataclass(frozen=True)
class Progress:
    last_change_id: int
    policy: str | None


async def lock_progress(conn: asyncpg.Connection) -> Progress:
    """The worker's progress, locked for this transaction."""
    await conn.execute(QUERIES["ensure_governance_progress"])
    row = await conn.fetchrow(QUERIES["lock_governance_progress"])
    assert row is not None
    return Progress(row["last_change_id"], row["policy"])


async def give_way_on_locks(conn: asyncpg.Connection) -> None:
    """For the rest of this transaction, a lock not granted within 100 ms is an error
    (asyncpg.exceptions.LockNotAvailableError) rather than a wait."""
    await conn.execute(QUERIES["set_governance_lock_timeout"])


async def save_progress(conn: asyncpg.Connection, last_change_id: int, policy: str) -> None:
    await conn.execute(QUERIES["save_governance_progress"], last_change_id, policy)


async def fetch_progress(conn: asyncpg.Connection) -> Progress | None:
    row = await conn.fetchrow(QUERIES["fetch_governance_progress"])
    return None if row is None else Progress(row["last_change_id"], row["policy"])


async def fetch_datasets_by_identity(
    conn: asyncpg.Connection, identities: list[tuple[str, str]]
) -> dict[tuple[str, str], uuid.UUID]:
    """The datasets among the (namespace, name) identities, by identity."""
    rows = await conn.fetch(
        QUERIES["fetch_datasets_by_identity"],
        [i[0] for i in identities],
        [i[1] for i in identities],
    )
    return {(r["namespace"], r["name"]): r["dataset_uuid"] for r in rows}


async def fetch_job_datasets(
    conn: asyncpg.Connection, identities: list[tuple[str, str]]
) -> list[tuple[uuid.UUID, bool]]:
    """(dataset, written by the job) for the datasets the jobs read or write now."""
    rows = await conn.fetch(
        QUERIES["fetch_governance_job_datasets"], [i[0] for i in identities], [i[1] for i in identities]
    )
    return [(r["dataset_uuid"], r["written"]) for r in rows]


async def fetch_all_dataset_uuids(conn: asyncpg.Connection) -> list[uuid.UUID]:
    return [r["dataset_uuid"] for r in await conn.fetch(QUERIES["fetch_governance_all_datasets"])]


@dataclass(frozen=True)
class ProducerTags:
    """What producers and the tag API say about one dataset, as stored."""

    dataset_uuid: uuid.UUID
    facet_tags: Any  # the tags facet's ``tags`` (a list of {key, value, field?}) or None
    schema_fields: Any  # the schema facet's ``fields`` (each may have ``tags``) or None
    dataset_tags: list[str]
    field_tags: list[tuple[str, str]]  # (field, tag name)


async def fetch_anything_governed(conn: asyncpg.Connection) -> bool:
    """Whether any label is declared or inherited anywhere, or any violation is open."""
    return bool(await conn.fetchval(QUERIES["fetch_anything_governed"]))


async def fetch_producer_tags(conn: asyncpg.Connection, datasets: list[uuid.UUID]) -> list[ProducerTags]:
    rows = await conn.fetch(QUERIES["fetch_governance_producer_tags"], datasets)
    return [
        ProducerTags(
            r["dataset_uuid"],
            r["facet_tags"],
            r["schema_fields"],
            list(r["dataset_tags"]),
            [(f, t) for f, t in r["field_tags"]],
        )
        for r in rows
    ]


async def fetch_declarations(
    conn: asyncpg.Connection, datasets: list[uuid.UUID], sources: list[str]
) -> dict[tuple[uuid.UUID, str, str], set[str]]:
    """(dataset, field, source) -> labels declared, for the datasets and sources."""
    out: dict[tuple[uuid.UUID, str, str], set[str]] = {}
    for r in await conn.fetch(QUERIES["fetch_governance_declarations_of_datasets"], datasets, sources):
        out.setdefault((r["dataset_uuid"], r["field_name"], r["source"]), set()).add(r["label"])
    return out


async def replace_declarations(
    conn: asyncpg.Connection, source: str, declared: dict[Field, set[str]]
) -> None:
    """The labels each field (or dataset, field '') declares from ``source``, replacing earlier ones."""
    if not declared:
        return
    fields = list(declared)
    await conn.execute(QUERIES["delete_governance_declarations"], *_columns(fields), source)
    rows = [(f[0], f[1], source, label) for f in fields for label in sorted(declared[f])]
    if rows:
        await conn.execute(
            QUERIES["insert_governance_declarations"],
            [r[0] for r in rows],
            [r[1] for r in rows],
            [r[2] for r in rows],
            [r[3] for r in rows],
        )


async def fetch_dataset_columns(conn: asyncpg.Connection, datasets: list[uuid.UUID]) -> set[Field]:
    rows = await conn.fetch(QUERIES["fetch_governance_dataset_columns"], datasets)
    return {(r["dataset_uuid"], r["field_name"]) for r in rows}


@dataclass(frozen=True)
class ColumnEdge:
    """An open, preferred column edge into a field, as propagation needs it."""

    output: Field
    input: Field
    job_uuid: uuid.UUID | None
    transformation_type: str | None
    transformation_subtype: str | None
    description: str | None
    masking: bool | None


def _edges(rows: list[Any]) -> list[ColumnEdge]:
    return [
        ColumnEdge(
            (r["out_ds"], r["out_field"]),
            (r["in_ds"], r["in_field"]),
            r["job_uuid"],
            r["transformation_type"],
            r["transformation_subtype"],
            r["description"],
            r["masking"],
        )
        for r in rows
    ]


async def fetch_edges_into(conn: asyncpg.Connection, fields: list[Field]) -> list[ColumnEdge]:
    return _edges(await conn.fetch(QUERIES["fetch_governance_edges"], *_columns(fields)))


async def fetch_edges_of_successors(conn: asyncpg.Connection, fields: list[Field]) -> list[ColumnEdge]:
    """Every edge into each field computed from ``fields``."""
    return _edges(await conn.fetch(QUERIES["fetch_governance_edges_of_successors"], *_columns(fields)))


async def fetch_node_ids(
    conn: asyncpg.Connection, datasets: list[uuid.UUID], jobs: list[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """The node id (``dataset:NS:NAME``, ``job:NS:NAME``) of each dataset and job, by uuid."""
    rows = await conn.fetch(QUERIES["fetch_governance_node_ids"], datasets, jobs)
    return {r["node_uuid"]: r["node_id"] for r in rows}


@dataclass
class FieldLabels:
    """A field's labels: declared (label -> sources) and inherited (label -> path)."""

    declared: dict[str, set[str]]
    inherited: dict[str, Path]


async def fetch_field_labels(conn: asyncpg.Connection, fields: list[Field]) -> dict[Field, FieldLabels]:
    """The labels of each field; a field without any is absent."""
    out: dict[Field, FieldLabels] = {}
    for r in await conn.fetch(QUERIES["fetch_governance_field_labels"], *_columns(fields)):
        labels = out.setdefault((r["dataset_uuid"], r["field_name"]), FieldLabels({}, {}))
        if r["path"] is None:
            labels.declared.setdefault(r["label"], set()).add(r["source"])
        else:
            labels.inherited[r["label"]] = _decode_path(r["path"])
    return out


async def replace_inherited(
    conn: asyncpg.Connection, inherited: dict[Field, dict[str, Path]], had: set[Field]
) -> None:
    """What each field inherits now (label -> path), replacing what the fields in ``had`` inherited
    (the others had nothing to replace)."""
    stale = [f for f in inherited if f in had]
    if stale:
        await conn.execute(QUERIES["delete_governance_inherited"], *_columns(stale))
    rows = [
        (f[0], f[1], label, json_text(path))
        for f, labels in inherited.items()
        for label, path in labels.items()
    ]
    if rows:
        await conn.copy_records_to_table(
            "governance_inherited", records=rows, columns=["dataset_uuid", "field_name", "label", "path"]
        )


@dataclass(frozen=True)
class GovernedDataset:
    dataset_uuid: uuid.UUID
    namespace: str
    name: str
    labels: list[str]  # declared on the dataset itself

    @property
    def node_id(self) -> str:
        return format_node_id("DATASET", self.namespace, self.name)


async def fetch_governed_datasets(
    conn: asyncpg.Connection, datasets: list[uuid.UUID]
) -> dict[uuid.UUID, GovernedDataset]:
    rows = await conn.fetch(QUERIES["fetch_governed_datasets"], datasets)
    return {
        r["dataset_uuid"]: GovernedDataset(
            r["dataset_uuid"], r["namespace"], r["name"], list(r["labels"])
        )
        for r in rows
    }


@dataclass(frozen=True)
class OpenViolation:
    violation_id: int
    rule: str
    field: Field
    label: str
    path: Path


def _open(r: Any) -> OpenViolation:
    return OpenViolation(
        r["violation_id"], r["rule"], (r["dataset_uuid"], r["field_name"]), r["label"], r["path"]
    )


async def fetch_open_violations(conn: asyncpg.Connection, fields: list[Field]) -> list[OpenViolation]:
    return [
        _open(r)
        for r in await conn.fetch(QUERIES["fetch_governance_open_violations"], *_columns(fields))
    ]


async def fetch_violations_of_unknown_rules(
    conn: asyncpg.Connection, rules: list[str]
) -> list[OpenViolation]:
    return [
        _open(r)
        for r in await conn.fetch(QUERIES["fetch_governance_violations_of_unknown_rules"], rules)
    ]


@dataclass(frozen=True)
class NewViolation:
    rule: str
    field: Field
    label: str
    path: Path
    change_id: int


async def open_violations(conn: asyncpg.Connection, new: list[NewViolation], at: dt.datetime) -> None:
    if new:
        await conn.fetch(
            QUERIES["open_governance_violations"],
            [v.rule for v in new],
            [v.field[0] for v in new],
            [v.field[1] for v in new],
            [v.label for v in new],
            [json_text(v.path) for v in new],
            [v.change_id for v in new],
            at,
        )


async def clear_violations(
    conn: asyncpg.Connection, cleared: list[tuple[int, int]], at: dt.datetime
) -> None:
    """Close (violation id, change id that announced it) violations."""
    if cleared:
        await conn.execute(
            QUERIES["clear_governance_violations"], [c[0] for c in cleared], [c[1] for c in cleared], at
        )


async def update_violation_paths(conn: asyncpg.Connection, updates: list[tuple[int, str, Path]]) -> None:
    if updates:
        await conn.execute(
            QUERIES["update_governance_violation_paths"],
            [u[0] for u in updates],
            [u[1] for u in updates],
            [json_text(u[2]) for u in updates],
        )


# -- reads for the APIs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetIdentity:
    dataset_uuid: uuid.UUID
    namespace: str
    name: str


async def fetch_dataset_identity(
    conn: asyncpg.Connection, namespace: str, name: str, *, lock: bool = False
) -> DatasetIdentity:
    """The dataset (namespace, name); with ``lock``, its row is locked until the transaction ends,
    so that declarations on it replace one another instead of adding up."""
    query = "lock_governance_dataset_identity" if lock else "fetch_governance_dataset_identity"
    row = await conn.fetchrow(QUERIES[query], namespace, name)
    if row is None:
        raise DatasetNotFoundError(namespace, name)
    return DatasetIdentity(row["dataset_uuid"], row["namespace"], row["name"])


@dataclass(frozen=True)
class Declaration:
    field: str
    source: str
    label: str
    declared_at: dt.datetime


async def fetch_dataset_declarations(conn: asyncpg.Connection, dataset: uuid.UUID) -> list[Declaration]:
    rows = await conn.fetch(QUERIES["fetch_governance_dataset_declarations"], dataset)
    return [Declaration(r["field_name"], r["source"], r["label"], r["declared_at"]) for r in rows]


async def fetch_dataset_inherited(
    conn: asyncpg.Connection, dataset: uuid.UUID
) -> list[tuple[str, str, Path]]:
    """(field, label, path) of every label the dataset's fields inherit."""
    rows = await conn.fetch(QUERIES["fetch_governance_dataset_inherited"], dataset)
    return [(r["field_name"], r["label"], _decode_path(r["path"])) for r in rows]


@dataclass(frozen=True)
class ViolationRecord:
    violation_id: int
    rule: str
    namespace: str
    name: str
    field: str
    label: str
    path: Path
    opened_at: dt.datetime
    opened_change_id: int | None
    cleared_at: dt.datetime | None
    cleared_change_id: int | None


async def list_violations(
    conn: asyncpg.Connection,
    *,
    state: str,
    namespace: str | None,
    dataset: uuid.UUID | None,
    after: int,
    limit: int,
) -> list[ViolationRecord]:
    """Violations newest first, below the ``after`` id (0: from the newest)."""
    rows = await conn.fetch(
        QUERIES["list_governance_violations"], after, state, namespace, dataset, limit
    )
    return [
        ViolationRecord(
            r["violation_id"],
            r["rule"],
            r["namespace"],
            r["name"],
            r["field_name"],
            r["label"],
            r["path"],
            r["opened_at"],
            r["opened_change_id"],
            r["cleared_at"],
            r["cleared_change_id"],
        )
        for r in rows
    ]
