"""Tags on datasets, dataset fields and jobs; every change is a TAG_CHANGED row in the change log."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from headwater.db.queries import QUERIES
from headwater.errors import InvalidRequestError, NotFoundError, checked_description, shown
from headwater.lineage.node_ids import format_node_id
from headwater.store import catalog
from headwater.store.changes import Change, insert_changes

if TYPE_CHECKING:
    import asyncpg

R = TypeVar("R", catalog.DatasetRecord, catalog.JobRecord)

# Matched with fullmatch: ``$`` also matches before a final newline, which would let 'pii\n' in as a
# second tag that looks like 'pii'.
_TAG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}")


class DatasetFieldNotFoundError(NotFoundError):
    code = "dataset_field_not_found"

    def __init__(self, namespace: str, name: str, field: str) -> None:
        super().__init__(f"Field '{shown(field)}' of dataset '{namespace}'.'{name}' not found.")


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
    if not _TAG_NAME.fullmatch(name):
        raise InvalidRequestError(
            f"Invalid tag name '{shown(name)}': use 1 to 100 letters, digits or '_.:/-', starting "
            "with a letter or digit."
        )
    return name


async def list_tags(conn: asyncpg.Connection) -> list[TagRecord]:
    """Every tag, by name."""
    return [_tag(r, tagged=False) for r in await conn.fetch(QUERIES["list_tags"])]


async def fetch_node_tags(
    shape: catalog.NodeShape[Any, Any], conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[TagRecord]]:
    """The tags of each dataset or job, by name."""
    rows = await conn.fetch(QUERIES["fetch_node_tags"], shape.kind, uuids)
    return catalog.grouped(uuids, rows, "node_uuid", _tag)


async def fetch_dataset_field_tags(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, dict[str, list[TagRecord]]]:
    """The tags of each dataset's fields: dataset -> field name -> tags."""
    out: dict[uuid.UUID, dict[str, list[TagRecord]]] = {u: {} for u in uuids}
    for r in await conn.fetch(QUERIES["fetch_dataset_field_tags"], uuids):
        out[r["dataset_uuid"]].setdefault(r["field_name"], []).append(_tag(r))
    return out


async def put_tag(conn: asyncpg.Connection, name: str, description: str | None) -> TagRecord:
    """Create the tag if it is new; a given description replaces the stored one."""
    described = checked_description(description, "a tag")
    row = await conn.fetchrow(QUERIES["upsert_tag"], check_tag_name(name), described)
    return _tag(row, tagged=False)


async def _tag_for(
    conn: asyncpg.Connection, name: str, description: str | None, *, create: bool
) -> TagRecord | None:
    if create:
        return await put_tag(conn, name, description)
    row = await conn.fetchrow(QUERIES["fetch_tag_by_name"], name)
    if row is None:
        check_tag_name(name)  # a name no tag can have is a mistake worth naming
        return None
    # A stored tag stays removable whatever its name: one taken before the rules were this strict.
    return _tag(row, tagged=False)


async def set_node_tag(
    shape: catalog.NodeShape[R, Any],
    conn: asyncpg.Connection,
    namespace: str,
    name: str,
    tag: str,
    *,
    tagged: bool,
    field: str | None = None,
    description: str | None = None,
    at: dt.datetime,
) -> R:
    """Add (``tagged``) or remove a tag on a dataset or job, or on one of a dataset's fields;
    returns the dataset or job.

    An unknown tag is created when added. Adding a tag already there, or removing one that is not,
    changes nothing and logs nothing.
    """
    if tagged:
        check_tag_name(tag)
    async with conn.transaction():
        node = await catalog.fetch_node(shape, conn, namespace, name)
        if field is not None and not await conn.fetchval(
            QUERIES["fetch_dataset_field_exists"], node.node_uuid, field
        ):
            raise DatasetFieldNotFoundError(node.namespace, node.name, field)
        record = await _tag_for(conn, tag, description, create=tagged)
        changed = False
        if record is not None and field is None:
            changed = bool(
                await conn.fetch(
                    QUERIES["set_node_tag"], shape.kind, node.node_uuid, record.tag_uuid, tagged, at
                )
            )
        elif record is not None:
            query = "insert_dataset_field_tag" if tagged else "delete_dataset_field_tag"
            args: list[Any] = [node.node_uuid, field, record.tag_uuid]
            if tagged:
                args.append(at)
            changed = await conn.fetchrow(QUERIES[query], *args) is not None
        if changed:
            node_id = format_node_id(shape.kind, node.namespace, node.name)
            await insert_changes(conn, [_tag_change(node_id, node.namespace, tag, tagged, field, at)])
    return node


def _tag_change(
    node: str, namespace: str, tag: str, tagged: bool, field: str | None, at: dt.datetime
) -> Change:
    action: Literal["ADDED", "REMOVED"] = "ADDED" if tagged else "REMOVED"
    return Change("TAG_CHANGED", node, namespace, at, {"tag": tag, "action": action, "field": field})
