"""The change log: one row per change, in the transaction that caused it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from headwater.db.pool import json_text
from headwater.db.queries import QUERIES
from headwater.errors import ChangesRemovedError

if TYPE_CHECKING:
    import asyncpg


@dataclass(frozen=True)
class Change:
    kind: str
    node_id: str
    namespace: str | None
    at: dt.datetime
    details: dict[str, Any] = field(default_factory=dict)


async def insert_changes(conn: asyncpg.Connection, changes: list[Change]) -> list[int]:
    """Append changes and NOTIFY listeners (delivered at commit); returns the new change ids."""
    if not changes:
        return []
    row = await conn.fetchrow(
        QUERIES["insert_changes"],
        [c.kind for c in changes],
        [c.node_id for c in changes],
        [c.namespace for c in changes],
        [c.at for c in changes],
        [json_text(c.details) for c in changes],
    )
    assert row is not None
    return list(row["change_ids"] or [])


async def check_change_cursor(conn: asyncpg.Connection, after: int) -> None:
    """Raise ChangesRemovedError when retention removed changes that come after ``after``."""
    removed_through = await conn.fetchval(QUERIES["fetch_changes_removed_through"])
    if removed_through is not None and after < removed_through:
        raise ChangesRemovedError(after, removed_through)
