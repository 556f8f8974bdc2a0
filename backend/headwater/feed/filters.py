"""Which changes a subscription wants: by kind, namespace, node, or lineage around a node."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from headwater.feed.scopes import ScopeSpec

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

    @cached_property
    def scopes(self) -> list[ScopeSpec]:
        return [s for s in (self.upstream_of, self.downstream_of) if s is not None]

    @cached_property
    def kinds_only(self) -> bool:
        """Whether it asks nothing but kinds, which the feed's index of subscriptions by kind
        already judges: its live changes need no other look."""
        return self.namespaces is None and self.node_ids is None and not self.scopes


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

    def _plain_match(self, change: ChangeRecord) -> frozenset[str] | None:
        """The nodes the change touches if the criteria other than scopes hold, else None."""
        f = self.filter
        if f.kinds is not None and change.kind not in f.kinds:
            return None
        if f.namespaces is not None and change.namespace not in f.namespaces:
            return None
        touched = change.touched
        if f.node_ids is not None and not touched & f.node_ids:
            return None
        return touched

    def refuses(self, change: ChangeRecord) -> bool:
        """True when the change surely does not match, judged without waiting (scopes that are
        current included); False when it matches or needs ``matches`` to tell."""
        touched = self._plain_match(change)
        if touched is None:
            return True
        for spec in self.filter.scopes:
            nodes = self.scopes.current(spec, change)
            if nodes is not None and not _reaches(touched, nodes):
                return True
        return False

    async def matches(self, change: ChangeRecord) -> bool:
        touched = self._plain_match(change)
        if touched is None:
            return False
        for spec in self.filter.scopes:
            if not _reaches(touched, await self.scopes.nodes(spec, change)):
                return False
        return True


def _reaches(touched: frozenset[str], scope: dict[str, int]) -> bool:
    """Whether a touched node is in the scope: a few lookups, where ``isdisjoint`` with a dict
    would walk every node of the scope."""
    return any(node in scope for node in touched)
