"""Tags on datasets, dataset fields and jobs; every change is a TAG_CHANGED row in the change log."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from headwater.db.queries import QUERIES
from headwater.errors import DatasetNotFoundError, InvalidRequestError, JobNotFoundError, NotFoundError
from headwater.lineage.node_ids import format_node_id
from headwater.store import catalog
from headwater.store.changes import Change, insert_changes

if TYPE_CHECKING:
    import asyncpg

_TAG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}$")


class DatasetFieldNotFoundError(NotFoundError):
    code = "dataset_field_not_found"

    def __init__(self, namespace: str, name: str, field: str) -> None:
        super().__init__(f"Field '{field}' of dataset '{namespace}'.'{name}' not found.")


@dataclass(frozen=True)
class TagRecord:
    tag_uuid: uuid.UUID
    name: str
    description: str | None
    created_at: dt.datetime
    tagged_at: dt.datetime | None = None


def _tag(r: Any, tagged: bool = True) -> TagRecord:
    return TagRecord(
        r["tag_uuid"], r["name"], r["description"], r["created_at"], r["tagged_at"] if tagged else None
    )


def check_tag_name(name: str) -> str:
    """A tag name: 1 to 100 letters, digits and ``_ . : / -``, starting with a letter or digit."""
    if not _TAG_NAME.match(name):
        raise InvalidRequestError(
            f"Invalid tag name '{name}': use 1 to 100 letters, digits or '_.:/-', starting with a letter or digit."
        )
    return name


async def list_tags(conn: asyncpg.Connection) -> list[TagRecord]:
    """Every tag, by name."""
    return [_tag(r, tagged=False) for r in await conn.fetch(QUERIES["list_tags"])]


async def fetch_dataset_tags(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[TagRecord]]:
    """The tags of each dataset, by name."""
    out: dict[uuid.UUID, list[TagRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_dataset_tags"], uuids):
        out[r["dataset_uuid"]].append(_tag(r))
    return out


async def fetch_dataset_field_tags(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, dict[str, list[TagRecord]]]:
    """The tags of each dataset's fields: dataset -> field name -> tags."""
    out: dict[uuid.UUID, dict[str, list[TagRecord]]] = {u: {} for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_dataset_field_tags"], uuids):
        out[r["dataset_uuid"]].setdefault(r["field_name"], []).append(_tag(r))
    return out


async def fetch_job_tags(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[TagRecord]]:
    """The tags of each job, by name."""
    out: dict[uuid.UUID, list[TagRecord]] = {u: [] for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_job_tags"], uuids):
        out[r["job_uuid"]].append(_tag(r))
    return out


async def _tag_for(
    conn: asyncpg.Connection, name: str, description: str | None, *, create: bool
) -> TagRecord | None:
    if create:
        row = await conn.fetchrow(QUERIES["upsert_tag"], name, description)
    else:
        row = await conn.fetchrow(QUERIES["fetch_tag_by_name"], name)
    return None if row is None else _tag(row, tagged=False)


async def set_dataset_tag(
    conn: asyncpg.Connection,
    namespace: str,
    name: str,
    tag: str,
    *,
    tagged: bool,
    field: str | None = None,
    description: str | None = None,
    at: dt.datetime,
) -> catalog.DatasetRecord:
    """Add (``tagged``) or remove a tag on a dataset or one of its fields; returns the dataset.

    An unknown tag is created when added. Adding a tag already there, or removing one that is not,
    changes nothing and logs nothing.
    """
    check_tag_name(tag)
    async with conn.transaction():
        dataset = (await catalog.fetch_datasets_by_keys(conn, [(namespace, name)])).get(
            (namespace, name)
        )
        if dataset is None:
            raise DatasetNotFoundError(namespace, name)
        if field is not None and not await conn.fetchval(
            QUERIES["fetch_dataset_field_exists"], dataset.dataset_uuid, field
        ):
            raise DatasetFieldNotFoundError(dataset.namespace, dataset.name, field)
        record = await _tag_for(conn, tag, description, create=tagged)
        changed = False
        if record is not None:
            if field is None:
                query = "insert_dataset_tag" if tagged else "delete_dataset_tag"
                args: list[Any] = [dataset.dataset_uuid, record.tag_uuid]
            else:
                query = "insert_dataset_field_tag" if tagged else "delete_dataset_field_tag"
                args = [dataset.dataset_uuid, field, record.tag_uuid]
            if tagged:
                args.append(at)
            changed = await conn.fetchrow(QUERIES[query], *args) is not None
        if changed:
            node = format_node_id("DATASET", dataset.namespace, dataset.name)
            await insert_changes(conn, [_tag_change(node, dataset.namespace, tag, tagged, field, at)])
    return dataset


async def set_job_tag(
    conn: asyncpg.Connection,
    namespace: str,
    name: str,
    tag: str,
    *,
    tagged: bool,
    description: str | None = None,
    at: dt.datetime,
) -> catalog.JobRecord:
    """Add (``tagged``) or remove a tag on a job; returns the job. Same rules as set_dataset_tag."""
    check_tag_name(tag)
    async with conn.transaction():
        job = (await catalog.fetch_jobs_by_keys(conn, [(namespace, name)])).get((namespace, name))
        if job is None:
            raise JobNotFoundError(namespace, name)
        record = await _tag_for(conn, tag, description, create=tagged)
        changed = False
        if record is not None:
            if tagged:
                changed = (
                    await conn.fetchrow(QUERIES["insert_job_tag"], job.job_uuid, record.tag_uuid, at)
                    is not None
                )
            else:
                changed = (
                    await conn.fetchrow(QUERIES["delete_job_tag"], job.job_uuid, record.tag_uuid)
                    is not None
                )
        if changed:
            node = format_node_id("JOB", job.namespace, job.name)
            await insert_changes(conn, [_tag_change(node, job.namespace, tag, tagged, None, at)])
    return job


def _tag_change(
    node: str, namespace: str, tag: str, tagged: bool, field: str | None, at: dt.datetime
) -> Change:
    action: Literal["ADDED", "REMOVED"] = "ADDED" if tagged else "REMOVED"
    return Change("TAG_CHANGED", node, namespace, at, {"tag": tag, "action": action, "field": field})
