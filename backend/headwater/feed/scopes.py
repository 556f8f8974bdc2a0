"""Lineage scopes for subscription filters: the nodes up- or downstream of a root, kept current.

A scope is computed with the lineage engine and shared by every subscription with the same root,
depth and direction. It is recomputed once the feed has emitted a change that added or removed
edges after it was computed, so a filter follows the graph as it grows. The feed emits every row
of a transaction before any subscriber looks at them, so the changes of one ingested event are all
judged against the graph that event made.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from headwater.errors import NodeNotFoundError
from headwater.lineage.graph import Direction, fetch_lineage

if TYPE_CHECKING:
    import asyncpg

    from headwater.feed.hub import ChangeFeed
    from headwater.feed.log import ChangeRecord


@dataclass(frozen=True)
class ScopeSpec:
    """The nodes within ``depth`` jobs of ``node_id`` in ``direction``."""

    node_id: str
    depth: int
    direction: Direction


@dataclass
class _Scope:
    nodes: frozenset[str] = frozenset()
    computed_at: int = -1  # feed position when computed; -1 never
    missing: bool = False
    users: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def edge_endpoints(change: ChangeRecord) -> set[str]:
    """Every node an edge in the change's details starts or ends at."""
    out: set[str] = set()
    for key in ("edges", "addedEdges", "removedEdges"):
        for edge in change.details.get(key) or []:
            if isinstance(edge, dict):
                out.update(str(v) for k, v in edge.items() if k in ("origin", "destination"))
    return out


class LineageScopes:
    """Shared, lazily refreshed scopes, kept as fresh as the feed's reading of the log."""

    def __init__(self, pool: asyncpg.Pool, feed: ChangeFeed) -> None:
        self.pool = pool
        self.feed = feed
        self._scopes: dict[ScopeSpec, _Scope] = {}

    def acquire(self, spec: ScopeSpec) -> None:
        self._scopes.setdefault(spec, _Scope()).users += 1

    def release(self, spec: ScopeSpec) -> None:
        scope = self._scopes.get(spec)
        if scope is not None:
            scope.users -= 1
            if scope.users <= 0:
                del self._scopes[spec]

    async def nodes(self, spec: ScopeSpec, change: ChangeRecord) -> frozenset[str]:
        """The scope's nodes as of ``change`` or later."""
        scope = self._scopes.setdefault(spec, _Scope())
        if not self._stale(scope, spec, change):
            return scope.nodes
        async with scope.lock:
            if self._stale(scope, spec, change):
                position = self.feed.position  # what the graph read next reflects at least
                scope.nodes, scope.missing = await self._compute(spec)
                scope.computed_at = position
        return scope.nodes

    def _stale(self, scope: _Scope, spec: ScopeSpec, change: ChangeRecord) -> bool:
        if scope.computed_at < 0 or self.feed.last_edge_change > scope.computed_at:
            return True
        return scope.missing and change.node_id == spec.node_id and change.change_id > scope.computed_at

    async def _compute(self, spec: ScopeSpec) -> tuple[frozenset[str], bool]:
        try:
            async with self.pool.acquire() as conn:
                graph = await fetch_lineage(
                    conn, [spec.node_id], depth=spec.depth, direction=spec.direction
                )
        except NodeNotFoundError:
            return frozenset({spec.node_id}), True
        return frozenset({spec.node_id, *(n.id for n in graph.nodes)}), False
