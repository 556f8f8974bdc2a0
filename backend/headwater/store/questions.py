"""Reads across aggregates for question-shaped tools: names of every kind, and suspect changes.

Both answer a page and the total number of matches in one statement, so that an answer can say how
much it left out.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from headwater.db.queries import QUERIES
from headwater.store.catalog.rows import like_fragment

if TYPE_CHECKING:
    import asyncpg

FoundKind = Literal["DATASET", "JOB", "COLUMN"]


@dataclass(frozen=True)
class FoundNode:
    """A dataset, job or column (``field`` set) whose name matched; heat is its dataset's or job's."""

    kind: FoundKind
    namespace: str
    name: str
    field: str | None
    field_type: str | None
    updated_at: dt.datetime
    heat: float | None


@dataclass(frozen=True)
class Change:
    """A change log row: its id, kind, the node it is about, when it happened and what changed."""

    change_id: int
    kind: str
    node_id: str
    at: dt.datetime
    details: dict[str, Any]
    namespace: str | None = None
    recorded_at: dt.datetime | None = None


async def find_nodes(
    conn: asyncpg.Connection,
    text: str,
    *,
    kinds: list[FoundKind],
    namespace: str | None = None,
    tag: str | None = None,
    limit: int,
    offset: int = 0,
) -> tuple[list[FoundNode], int]:
    """Datasets, jobs and columns whose name contains ``text``, hottest first: a page and the total."""
    rows = await conn.fetch(
        QUERIES["find_nodes"], like_fragment(text), text, namespace, kinds, tag, limit, offset
    )
    found = [
        FoundNode(
            r["kind"], r["namespace"], r["name"], r["field"], r["field_type"], r["updated_at"], r["heat"]
        )
        for r in rows
        if r["kind"] is not None
    ]
    return found, int(rows[0]["total"])


async def fetch_suspect_changes(
    conn: asyncpg.Connection, node_ids: list[str], since: dt.datetime, *, limit: int, offset: int = 0
) -> tuple[list[Change], int]:
    """Failed or aborted runs, replaced job versions and schema changes of nodes since a time,
    newest first: a page and the total."""
    rows = await conn.fetch(QUERIES["fetch_suspect_changes"], node_ids, since, limit, offset)
    changes = [
        Change(
            r["change_id"],
            r["kind"],
            r["node_id"],
            r["at"],
            r["details"],
            r["namespace"],
            r["created_at"],
        )
        for r in rows
        if r["kind"] is not None
    ]
    return changes, int(rows[0]["total"])
