"""Typed reads of the change log for the feed."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    from collections.abc import Hashable

    import asyncpg


# Kinds whose change adds or removes lineage edges.
EDGE_KINDS = frozenset(
    {"EDGES_ADDED", "JOB_VERSION_CHANGED", "MANUAL_EDGE_ADDED", "MANUAL_EDGE_REMOVED"}
)


@dataclass(frozen=True)
class ChangeRecord:
    """One committed change_log row."""

    change_id: int
    kind: str
    node_id: str
    namespace: str | None
    at: dt.datetime
    details: dict[str, Any] = field(default_factory=dict)
    recorded_at: dt.datetime | None = None

    # Read once per change, not once per subscription judging it: the feed offers every change to
    # every subscription.

    @cached_property
    def renders(self) -> dict[Hashable, Any]:
        """What subscribers made of this change, by what they asked for: the feed offers the same
        record to every subscription, so subscribers asking the same share one rendering."""
        return {}

    @cached_property
    def touched(self) -> frozenset[str]:
        """The node the change is about and every node an edge in its details starts or ends at."""
        out = {self.node_id}
        for key in ("edges", "addedEdges", "removedEdges"):
            for edge in self.details.get(key) or []:
                if isinstance(edge, dict):
                    out.update(str(v) for k, v in edge.items() if k in ("origin", "destination"))
        return frozenset(out)

    @cached_property
    def added_and_removed(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """The (origin, destination) edges the change opened and those it closed."""
        if self.kind == "MANUAL_EDGE_REMOVED":
            return [], self._pairs("edges")
        return self._pairs("edges") + self._pairs("addedEdges"), self._pairs("removedEdges")

    def _pairs(self, key: str) -> list[tuple[str, str]]:
        return [
            (str(e["origin"]), str(e["destination"]))
            for e in self.details.get(key) or []
            if isinstance(e, dict) and "origin" in e and "destination" in e
        ]


@dataclass(frozen=True)
class Snapshot:
    """Bounds of a read's snapshot: transactions below xmin had ended, from xmax on had not begun."""

    xmin: int
    xmax: int


def _change(r: Any) -> ChangeRecord:
    return ChangeRecord(
        r["change_id"],
        r["kind"],
        r["node_id"],
        r["namespace"],
        r["at"],
        r["details"] or {},
        r["created_at"],
    )


async def fetch_latest_change_id(conn: asyncpg.Connection) -> int:
    """The highest committed change id, 0 for an empty log."""
    return int(await conn.fetchval(QUERIES["fetch_latest_change_id"]))


async def fetch_changes_after(
    conn: asyncpg.Connection, after: int, limit: int, missing: list[int] | None = None
) -> tuple[Snapshot, list[ChangeRecord]]:
    """Up to ``limit`` changes above ``after``, plus any of the ``missing`` ids now committed, in id
    order, and the snapshot they were read in."""
    rows = await conn.fetch(QUERIES["fetch_changes_after"], after, limit, missing or [])
    snapshot = Snapshot(rows[0]["xmin"], rows[0]["xmax"])
    return snapshot, [_change(r) for r in rows if r["change_id"] is not None]


async def fetch_oldest_running_xid(conn: asyncpg.Connection) -> int | None:
    """The oldest transaction writing in this database now (a 64-bit xid), None when there is none."""
    row = await conn.fetchrow(QUERIES["fetch_running_xids"])
    assert row is not None
    xmax = int(row["xmax"])
    oldest = None
    for xid in row["xids"]:
        # Widen a 32-bit xid with the epoch of xmax; a running xid is never ahead of xmax.
        full = (xmax & ~0xFFFFFFFF) | int(xid)
        if full > xmax:
            full -= 1 << 32
        oldest = full if oldest is None else min(oldest, full)
    return oldest


async def fetch_changes_between(
    conn: asyncpg.Connection, after: int, upto: int, limit: int
) -> list[ChangeRecord]:
    """Up to ``limit`` changes with ``after < id <= upto``, in id order."""
    return [_change(r) for r in await conn.fetch(QUERIES["fetch_changes_between"], after, upto, limit)]
