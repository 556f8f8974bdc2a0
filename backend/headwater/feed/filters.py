"""Which changes a subscription wants: by kind, namespace, node, or lineage around a node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from headwater.feed.scopes import ScopeSpec, edge_endpoints

if TYPE_CHECKING:
    from headwater.feed.log import ChangeRecord
    from headwater.feed.scopes import LineageScopes


@dataclass(frozen=True)
class ChangeFilter:
    """Every criterion given must hold; within a list, any entry matches.

    A change touches a node when it is about that node, or adds or removes an edge at it.
    """

    kinds: frozenset[str] | None = None
    namespaces: frozenset[str] | None = None
    node_ids: frozenset[str] | None = None
    upstream_of: ScopeSpec | None = None
    downstream_of: ScopeSpec | None = None

    @property
    def scopes(self) -> list[ScopeSpec]:
        return [s for s in (self.upstream_of, self.downstream_of) if s is not None]


class ChangeMatcher:
    """A filter bound to the shared lineage scopes; ``close`` when the subscription ends."""

    def __init__(self, change_filter: ChangeFilter, scopes: LineageScopes) -> None:
        self.filter = change_filter
        self.scopes = scopes
        for spec in change_filter.scopes:
            scopes.acquire(spec)

    def close(self) -> None:
        for spec in self.filter.scopes:
            self.scopes.release(spec)

    async def matches(self, change: ChangeRecord) -> bool:
        f = self.filter
        if f.kinds is not None and change.kind not in f.kinds:
            return False
        if f.namespaces is not None and change.namespace not in f.namespaces:
            return False
        touched = {change.node_id} | edge_endpoints(change)
        if f.node_ids is not None and not touched & f.node_ids:
            return False
        for spec in f.scopes:
            if not touched & await self.scopes.nodes(spec, change):
                return False
        return True
