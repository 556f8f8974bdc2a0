"""Lineage scopes for subscription filters: the nodes up- or downstream of a root, kept current.

A scope is computed with the lineage engine and shared by every subscription with the same root,
depth and direction. It is recomputed when a change that adds or removes edges comes after it was
computed, so a filter follows the graph as it grows.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from headwater.errors import NodeNotFoundError
from headwater.lineage.graph import Direction, fetch_lineage

if TYPE_CHECKING:
    from collections.abc import Callable

    import asyncpg

    from headwater.feed.log import ChangeRecord

# Kinds whose change adds or removes lineage edges.
EDGE_KINDS = frozenset({"EDGES_ADDED", "JOB_VERSION_CHANGED", "MANUAL_EDGE_ADDED", "MANUAL_EDGE_REMOVED"})


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
    """Shared, lazily refreshed scopes; ``position`` tells how far the change feed has read."""

    def __init__(self, pool: asyncpg.Pool, position: Callable[[], int]) -> None:
        self.pool = pool
        self._position = position
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
                position = self._position()
                scope.nodes, scope.missing = await self._compute(spec)
                scope.computed_at = position
        return scope.nodes

    @staticmethod
    def _stale(scope: _Scope, spec: ScopeSpec, change: ChangeRecord) -> bool:
        if scope.computed_at < 0:
            return True
        if scope.computed_at >= change.change_id:
            return False
        return change.kind in EDGE_KINDS or (scope.missing and change.node_id == spec.node_id)

    async def _compute(self, spec: ScopeSpec) -> tuple[frozenset[str], bool]:
        try:
            async with self.pool.acquire() as conn:
                graph = await fetch_lineage(conn, [spec.node_id], depth=spec.depth, direction=spec.direction)
        except NodeNotFoundError:
            return frozenset({spec.node_id}), True
        return frozenset({spec.node_id, *(n.id for n in graph.nodes)}), False
