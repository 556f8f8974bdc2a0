"""Lineage scopes for subscription filters: the nodes up- or downstream of a root, kept current.

A scope is shared by every subscription with the same root, depth and direction, and holds each
node's hops from the root. It is walked once, then kept current from the edge changes the feed
emits, without walking the graph again: an added edge that leaves a scope node (downstream; that
enters one, upstream) brings its far end in, and only a node that joins or gets nearer is walked
from, for the hops it has left. That walk is shared by every scope reaching the same node. Only
a removed edge that touched a scope makes it walk again from its root. Edge changes are applied
as the feed emits them, to the scopes they reach (any other scope costs a set lookup), without
waiting: walks from joining nodes are made lazily, when a change is next judged against the
scope; a scope being walked keeps the edge changes and applies them on top of the walk. So the
feed offers a change only to subscribers of the scopes it touches and of those that need a walk
(``judging``): a scope far from where ingest writes costs nothing per change. The feed emits every
row of a transaction before any subscriber looks at them, so the changes of one ingested event are
all judged against the graph that event made.

A new scope is walked from its root as soon as it is acquired, in the background, so that the
first change after subscribing finds it ready; should that walk fail, the scope is walked when a
change is next judged against it. Walks only read node ids and hops (``walk_hops``: no edges, no
documents), and at most ``MAX_WALKS`` run at once, so that many subscribers arriving together
queue up for the pool instead of taking every connection from ingest.

A scope is complete or it is refused: it holds at most ``max_nodes`` nodes (``MAX_NODES``, fifty
times the API's cap on lineage answers, as ids and hops cost some 170 bytes a node). A scope that
outgrows it, when walked or as edges are added, is never cut: every change is then judged against
it, and judging one raises ScopeTooLargeError, which ends the subscriptions with an error naming the
node and the cap (``ready`` raises it at subscribe time, once the first walk is done).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from headwater.errors import AppError, NodeNotFoundError
from headwater.feed.log import EDGE_KINDS
from headwater.lineage.graph import Direction, Hops, walk_hops

if TYPE_CHECKING:
    import asyncpg

    from headwater.feed.hub import ChangeFeed
    from headwater.feed.log import ChangeRecord

logger = logging.getLogger("headwater.feed")

# Edge changes a scope keeps before it gives up following them and walks again when next asked.
MAX_PENDING = 10_000
# Walks of the graph running at once, whoever asks for them.
MAX_WALKS = 2
# Nodes a scope may hold. On a layered graph of 612,500 nodes, a scope of 428,781 takes 3.4 s to
# walk (3.2 s of it in PostgreSQL, which writes some 130 MiB of temporary files; 0.14 s of CPU
# here) and holds 69 MiB here (76 MiB at the peak of the walk); one of 85,617 takes 0.45 s and
# 13 MiB. So a scope at the cap costs some 5 s of a pool connection and 80 MiB of memory.
MAX_NODES = 500_000


class ScopeTooLargeError(AppError):
    """A subscription's lineage scope holds more nodes than a scope may: it would miss changes."""

    code = "lineage_scope_too_large"
    status = 422
    title = "Lineage scope too large"

    def __init__(self, spec: ScopeSpec, max_nodes: int) -> None:
        super().__init__(
            f"The lineage {spec.direction.lower()} of {spec.node_id} within depth {spec.depth} holds "
            f"more than {max_nodes:,} nodes, the most a subscription filter follows: subscribe with a "
            "smaller depth or a node nearer the edge of the graph."
        )


@dataclass(frozen=True)
class ScopeSpec:
    """The nodes within ``depth`` jobs of ``node_id`` in ``direction``."""

    node_id: str
    depth: int
    direction: Direction

    @property
    def hop_limit(self) -> int:
        """Edges from the root: 2 per job, plus the first hop out of a job root."""
        return 2 * self.depth + (1 if self.node_id.startswith("job:") else 0)


@dataclass
class _Scope:
    hops: dict[str, int] = field(default_factory=dict)  # node id -> edges from the root
    computed_at: int = -1  # feed position when walked; -1 never
    pending: list[ChangeRecord] = field(default_factory=list)  # edge changes not applied yet
    unwalked: dict[str, int] = field(default_factory=dict)  # joined nodes not walked from yet
    stale: bool = False  # walk again from the root
    missing: bool = False  # the root did not exist when walked
    too_large: bool = False  # holds more than max_nodes nodes: judging a change against it raises
    users: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass(frozen=True)
class _Reach:
    """What a walk from one node found: hops from it, up to date while ``at`` is the latest edge
    change."""

    at: int
    limit: int
    hops: dict[str, int]


class LineageScopes:
    """Shared, incrementally maintained scopes, kept as fresh as the feed's reading of the log."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        feed: ChangeFeed,
        *,
        max_walks: int = MAX_WALKS,
        max_nodes: int = MAX_NODES,
    ) -> None:
        self.pool = pool
        self.feed = feed
        self.max_nodes = max_nodes
        self.walks = 0  # walks of the graph made, from roots and from nodes joining a scope
        self._scopes: dict[ScopeSpec, _Scope] = {}
        self._reach: dict[tuple[str, Direction], _Reach] = {}  # walks after the latest edge change
        self._walking = asyncio.Semaphore(max_walks)
        self._warming: dict[ScopeSpec, asyncio.Task[None]] = {}  # first walks of new scopes
        feed.on_edge_change = self._edge_changed
        feed.scopes_judging = self.judging

    def acquire(self, spec: ScopeSpec) -> None:
        """Count a user of the scope; a new one starts being walked at once, in the background."""
        scope = self._scopes.setdefault(spec, _Scope())
        scope.users += 1
        if scope.computed_at < 0 and spec not in self._warming:
            task = asyncio.create_task(
                self._warm(spec, scope), name=f"headwater-scope-walk {spec.node_id}"
            )
            self._warming[spec] = task
            task.add_done_callback(lambda _: self._warmed(spec, task))

    async def ready(self, spec: ScopeSpec) -> None:
        """Wait for the first walk of an acquired scope; ScopeTooLargeError if it outgrew the cap.
        A walk that failed is left to the next change, as ever."""
        task = self._warming.get(spec)
        if task is not None:
            await asyncio.wait([task])  # shared: a subscriber leaving stops waiting, not the walk
        scope = self._scopes.get(spec)
        if scope is not None and scope.too_large:
            raise ScopeTooLargeError(spec, self.max_nodes)

    def release(self, spec: ScopeSpec) -> None:
        scope = self._scopes.get(spec)
        if scope is not None:
            scope.users -= 1
            if scope.users <= 0:
                del self._scopes[spec]
                task = self._warming.pop(spec, None)
                if task is not None:
                    task.cancel()
        if not self._scopes:
            self._reach.clear()

    async def close(self) -> None:
        """Stop the walks under way (before the pool closes)."""
        tasks = list(self._warming.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _warm(self, spec: ScopeSpec, scope: _Scope) -> None:
        """Walk a new scope before any change asks for it; a failure leaves it to the next change."""
        await self.feed.ready.wait()  # walked as of a known feed position
        try:
            await self._bring_current(scope, spec, None)
        except Exception:
            logger.warning(
                "walking the lineage scope of %s failed; walked on the next change", spec, exc_info=True
            )

    def _warmed(self, spec: ScopeSpec, task: asyncio.Task[None]) -> None:
        if self._warming.get(spec) is task:
            del self._warming[spec]

    def _edge_changed(self, change: ChangeRecord) -> None:
        """Apply an edge change to the scopes it reaches, as the feed emits it. An edge whose near
        end is in no scope (the common case) costs each scope one set lookup, and no scope waits:
        a node that joins is walked from when a subscriber next judges a change against it."""
        added, removed = change.added_and_removed
        near = {
            "DOWNSTREAM": {origin for origin, _ in added + removed},
            "UPSTREAM": {destination for _, destination in added + removed},
        }
        for spec, scope in self._scopes.items():
            if scope.computed_at < 0 or scope.stale or scope.too_large:
                continue  # walked from its root when next asked, or refused
            if scope.lock.locked() or scope.pending:
                # Being walked: applied in order on top of the walk, once it is done.
                if len(scope.pending) >= MAX_PENDING:
                    scope.pending.clear()
                    scope.stale = True
                else:
                    scope.pending.append(change)
            elif not scope.hops.keys().isdisjoint(near[spec.direction]):
                joined = self._join(scope, spec, [change])
                if joined is None:
                    scope.stale = True
                else:
                    scope.unwalked.update(joined)
                    self._check_size(scope, spec)

    def judging(self, change: ChangeRecord) -> list[ScopeSpec]:
        """The scopes whose subscribers must judge ``change``: those it touches, and those that
        need a walk first. A subscriber of any other scope surely does not want it."""
        touched = change.touched
        return [
            spec
            for spec, scope in self._scopes.items()
            if not scope.hops.keys().isdisjoint(touched) or not self._settled(scope)
        ]

    @staticmethod
    def _settled(scope: _Scope) -> bool:
        return not (
            scope.computed_at < 0
            or scope.stale
            or scope.too_large
            or scope.pending
            or scope.unwalked
            or scope.lock.locked()
        )

    def current(self, spec: ScopeSpec, change: ChangeRecord) -> dict[str, int] | None:
        """The scope's nodes if they need no walk before judging ``change``, else None."""
        scope = self._scopes.get(spec)
        if scope is None or not self._settled(scope) or self._needs_walk(scope, spec, change):
            return None
        return scope.hops

    async def nodes(self, spec: ScopeSpec, change: ChangeRecord) -> dict[str, int]:
        """The scope's nodes (with their hops) as of ``change`` or later; ScopeTooLargeError when it
        holds more than ``max_nodes``."""
        scope = self._scopes.setdefault(spec, _Scope())
        if self._settled(scope) and not self._needs_walk(scope, spec, change):
            return scope.hops
        await self._bring_current(scope, spec, change)
        if scope.too_large:
            raise ScopeTooLargeError(spec, self.max_nodes)
        return scope.hops

    async def _bring_current(self, scope: _Scope, spec: ScopeSpec, change: ChangeRecord | None) -> None:
        """Walk the scope from its root if it needs it (to judge ``change``, when given), then apply
        the edge changes it has kept and walk on from the nodes that joined."""
        async with scope.lock:
            try:
                if scope.too_large:
                    return  # refused until released: every subscriber of it ends
                if self._needs_walk(scope, spec, change):
                    await self._walk_root(scope, spec)
                while (scope.pending or scope.unwalked) and not scope.stale and not scope.too_large:
                    pending, scope.pending = scope.pending, []
                    joined = self._join(scope, spec, pending)
                    if joined is None:
                        scope.stale = True  # a node may have left or moved away: walk again
                        break
                    scope.unwalked.update(joined)
                    unwalked, scope.unwalked = scope.unwalked, {}
                    await self._walk_joined(scope, spec, unwalked)
                    self._check_size(scope, spec)
                if scope.stale and not scope.too_large:
                    await self._walk_root(scope, spec)
            except BaseException:
                scope.stale = True  # a walk failed or was cancelled half way: walk again when asked
                raise

    def _needs_walk(self, scope: _Scope, spec: ScopeSpec, change: ChangeRecord | None) -> bool:
        if scope.computed_at < 0 or scope.stale:
            return True
        return (
            change is not None
            and scope.missing
            and change.node_id == spec.node_id
            and change.change_id > scope.computed_at
        )

    async def _walk_root(self, scope: _Scope, spec: ScopeSpec) -> None:
        # Edge changes emitted from here on are queued and applied on top of this walk.
        scope.computed_at = self.feed.position
        scope.pending = []
        scope.unwalked = {}
        scope.stale = False
        found = await self._walk([spec.node_id], spec.depth, spec.direction)
        scope.missing = found is None
        if found is not None and found.truncated:
            self._refuse(scope, spec)
            return
        scope.hops = {spec.node_id: 0, **(found.hops if found is not None else {})}

    def _check_size(self, scope: _Scope, spec: ScopeSpec) -> None:
        """A scope grown past the cap by added edges is refused (its nodes are exact, not cut)."""
        if len(scope.hops) > self.max_nodes:
            self._refuse(scope, spec)

    def _refuse(self, scope: _Scope, spec: ScopeSpec) -> None:
        """Judging a change against the scope raises from now on; its nodes are let go."""
        scope.too_large = True
        scope.hops = {}
        scope.pending = []
        scope.unwalked = {}
        logger.warning("lineage scope %s holds more than %d nodes: refused", spec, self.max_nodes)

    async def _walk(self, node_ids: list[str], depth: int, direction: Direction) -> Hops | None:
        """Hops from the nearest of ``node_ids`` (all datasets or all jobs), cut at ``max_nodes``
        (``truncated``); None if one is unknown. Only node ids and hops are read (``walk_hops``), by
        at most ``max_walks`` walks at once."""
        async with self._walking:
            self.walks += 1
            try:
                async with self.pool.acquire() as conn:
                    return await walk_hops(
                        conn, node_ids, depth=depth, direction=direction, max_nodes=self.max_nodes
                    )
            except NodeNotFoundError:
                return None

    async def _walk_joined(self, scope: _Scope, spec: ScopeSpec, joined: dict[str, int]) -> None:
        """Walk on from the nodes that joined the scope (or got nearer), for the hops they have left."""
        limit = spec.hop_limit
        for node_id, hops in joined.items():
            if scope.hops.get(node_id) != hops or hops >= limit:
                continue  # got nearer again later in this batch, or nothing left to walk
            reach = await self._reach_from(node_id, limit - hops, spec.direction)
            if reach is None:
                scope.stale = True  # gone, or too many nodes beyond it: the root's walk tells
                return
            for far, more in reach.items():
                if hops + more < scope.hops.get(far, limit + 1):
                    scope.hops[far] = hops + more

    @staticmethod
    def _join(scope: _Scope, spec: ScopeSpec, changes: list[ChangeRecord]) -> dict[str, int] | None:
        """Bring in the far ends of added edges; the nodes that joined or got nearer, with their
        hops. None when a removed edge touched the scope."""
        limit = spec.hop_limit
        joined: dict[str, int] = {}
        for change in changes:
            if change.change_id <= scope.computed_at or change.kind not in EDGE_KINDS:
                continue
            added, removed = change.added_and_removed
            if spec.direction == "UPSTREAM":
                added = [(d, o) for o, d in added]
                removed = [(d, o) for o, d in removed]
            if any(near in scope.hops for near, _ in removed):
                return None
            grew = True
            while grew:  # the edges of one change may chain (dataset -> job -> dataset)
                grew = False
                for near, far in added:
                    hops = scope.hops.get(near)
                    if hops is not None and hops < limit and hops + 1 < scope.hops.get(far, limit + 1):
                        scope.hops[far] = joined[far] = hops + 1
                        grew = True
        return joined

    async def _reach_from(self, node_id: str, hops: int, direction: Direction) -> dict[str, int] | None:
        """Nodes within ``hops`` edges of ``node_id``, shared by scopes asking after the same edges."""
        key = (node_id, direction)
        at = self.feed.last_edge_change
        reach = self._reach.get(key)
        if reach is None or reach.at != at or reach.limit < hops:
            # A walk of depth d goes 2d edges from a dataset, 2d + 1 from a job: hops // 2 either way.
            found = await self._walk([node_id], hops // 2, direction)
            if found is None or found.truncated:
                return None
            if any(r.at != at for r in self._reach.values()):
                self._reach.clear()  # an edge changed since: those walks are out of date
            reach = self._reach[key] = _Reach(at, hops, found.hops)
        return {n: h for n, h in reach.hops.items() if h <= hops}
