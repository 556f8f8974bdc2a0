"""ChangeFeed: reads committed changes once per wake-up and fans them out to subscriptions.

Ordering. change_id comes from a sequence, so ids are handed out in one order and committed in
another: id 11 can be visible before id 10. The feed emits strictly in id order and only ids below
which everything is settled (``position``). An id missing below a visible one is a gap: it is
waited for until it shows up, or until a later read proves that every transaction that could own
it has ended (so it was rolled back): the read's snapshot has no older transaction running in the
cluster, or none is writing in this database any more. At worst it is waited for ``gap_timeout``
seconds. A cursor (the
last id a subscriber got) therefore means "everything up to here", and resuming after it loses
nothing and repeats nothing.

Back-pressure. Emitting only appends to each subscription's bounded queue; the reader never waits
for a subscriber. A subscription whose queue overflows drops its queue and re-reads what it missed
from the change log at its own pace, then rejoins the live stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from headwater.feed import log as change_log

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Collection, Hashable, Iterable

    import asyncpg

    from headwater.feed.log import ChangeRecord, Snapshot

logger = logging.getLogger("headwater.feed")

_Key = TypeVar("_Key")


@dataclass(frozen=True)
class _Gap:
    missed_at: float  # clock time of the read that first missed it
    xmax: int  # that read's snapshot xmax: the owner's xid is below it
    pump: int  # the pump that first missed it


class ChangeFeed:
    """The process-wide reader of change_log; subscriptions come from ``subscribe``."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        page_size: int = 500,
        queue_size: int = 1000,
        gap_timeout: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pool = pool
        self.page_size = page_size
        self.queue_size = queue_size
        self.gap_timeout = gap_timeout
        self._clock = clock
        self.position = 0  # every id up to here is emitted or known never to come
        self.last_edge_change = 0  # the id of the latest emitted change that added or removed edges
        self.on_edge_change: Callable[[ChangeRecord], None] | None = None  # called as each is emitted
        # The lineage scopes whose subscribers must judge a change (feed/scopes.py).
        self.scopes_judging: Callable[[ChangeRecord], Iterable[Hashable]] | None = None
        self._held: dict[int, ChangeRecord] = {}  # read, waiting behind a gap
        self._gaps: dict[int, _Gap] = {}
        self._pumps = 0
        self._subscriptions: set[Subscription] = set()
        # Who is offered a change of a kind: subscriptions that take only some kinds are never
        # offered the others, so a change costs nothing for the many that do not want its kind.
        self._any_kind: set[Subscription] = set()
        self._by_kind: dict[str, set[Subscription]] = {}
        # Subscriptions within lineage scopes are offered only the changes of scopes judging them.
        self._by_scope: dict[Hashable, set[Subscription]] = {}
        self._wake = asyncio.Event()
        self.ready = asyncio.Event()  # set once the position is known
        self._task: asyncio.Task[None] | None = None
        self.closed = False

    @property
    def subscriber_count(self) -> int:
        return len(self._subscriptions)

    async def start(self) -> None:
        """Start after the latest committed change; earlier ones are read by subscribers that ask.

        With the database down, the app still starts: the reader keeps trying in the background.
        """
        try:
            await self._initialize()
        except Exception as exc:
            logger.warning("the change feed waits for the database: %s", exc)
        self._task = asyncio.create_task(self._run(), name="headwater-change-feed")

    async def _initialize(self) -> None:
        async with self.pool.acquire() as conn:
            self.position = await change_log.fetch_latest_change_id(conn)
        for sub in self._subscriptions:
            sub.start_at(self.position)
        self.ready.set()

    async def close(self) -> None:
        """Stop reading and end every subscription."""
        self.closed = True
        for sub in list(self._subscriptions):
            sub.wake()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def notify(self, change_id: int | None = None) -> None:
        """A commit happened (``change_id`` is the highest id it wrote, when known): read soon."""
        if change_id is not None and change_id <= self.position and not self._gaps:
            return
        self._wake.set()

    def subscribe(
        self,
        after: int | None = None,
        refuses: Callable[[ChangeRecord], bool] | None = None,
        kinds: frozenset[str] | None = None,
        scopes: Collection[Hashable] = (),
    ) -> Subscription:
        """A subscription to changes after ``after`` (default: from now on), registered at once.

        ``refuses`` says, without waiting, that the subscriber does not want a change: such a change
        is never queued and does not wake it. Live changes it surely does not want are not even
        offered: with ``kinds``, those of other kinds; with lineage ``scopes`` (it wants changes
        inside all of them), those no scope of it is judging (``scopes_judging``). Changes read
        back from the log reach the subscriber unjudged: it judges them.
        """
        sub = Subscription(self, refuses)
        sub.last = after
        if self.ready.is_set():
            sub.start_at(self.position)
        self._subscriptions.add(sub)
        if scopes and self.scopes_judging is not None:
            for scope in scopes:
                self._by_scope.setdefault(scope, set()).add(sub)
        elif kinds is None:
            self._any_kind.add(sub)
        else:
            for kind in kinds:
                self._by_kind.setdefault(kind, set()).add(sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        self._subscriptions.discard(sub)
        self._any_kind.discard(sub)
        _discard(self._by_kind, sub)
        _discard(self._by_scope, sub)

    async def read_between(self, after: int, upto: int) -> list[ChangeRecord]:
        """A page of committed changes in (after, upto], for a subscription catching up."""
        async with self.pool.acquire() as conn:
            return await change_log.fetch_changes_between(conn, after, upto, self.page_size)

    # -- the reader -----------------------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        while not self.closed:
            # With a gap open, look again soon even without a notification: it may be a rollback.
            timeout = 0.05 if self._gaps else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
            self._wake.clear()
            try:
                if not self.ready.is_set():
                    await self._initialize()
                await self.pump()
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception:
                failures += 1
                logger.exception("reading the change log failed; retrying")
                await asyncio.sleep(min(0.1 * 2**failures, 5.0))
                self._wake.set()

    async def pump(self) -> None:
        """Read every change committed since the last read and emit what is settled."""
        self._pumps += 1
        async with self.pool.acquire() as conn:
            # Read before the log, so a writer it does not list had ended before the log was read.
            oldest = await change_log.fetch_oldest_running_xid(conn) if self._gaps else None
            while True:
                seen = max(self.position, max(self._held, default=0))
                snapshot, rows = await change_log.fetch_changes_after(
                    conn, seen, self.page_size, sorted(self._gaps)
                )
                for row in rows:
                    self._held[row.change_id] = row
                    self._gaps.pop(row.change_id, None)
                self._emit_settled(snapshot, oldest)
                if sum(1 for r in rows if r.change_id > seen) < self.page_size:
                    return

    def _emit_settled(self, snapshot: Snapshot, oldest_writer: int | None) -> None:
        top = max(self._held, default=0)
        now = self._clock()
        for missing in range(self.position + 1, top):
            if missing not in self._held:
                self._gaps.setdefault(missing, _Gap(now, snapshot.xmax, self._pumps))
        settled: list[ChangeRecord] = []
        while self.position < top:
            nxt = self.position + 1
            change = self._held.pop(nxt, None)
            if change is not None:
                self.position = nxt
                settled.append(change)
                if change.kind in change_log.EDGE_KINDS:
                    self.last_edge_change = nxt
                    if self.on_edge_change is not None:
                        self.on_edge_change(change)
                continue
            if not self._rolled_back(nxt, snapshot, oldest_writer, now):
                break
            del self._gaps[nxt]
            self.position = nxt
        # Offered once the whole read is settled, so that a subscription judging a change without
        # waiting knows the edges the rest of its transaction added.
        self._offer(settled)

    def _offer(self, changes: list[ChangeRecord]) -> None:
        any_kind = list(self._any_kind)
        by_kind = {kind: list(subs) for kind, subs in self._by_kind.items()}
        by_scope = {scope: list(subs) for scope, subs in self._by_scope.items()}
        judging = self.scopes_judging if by_scope else None
        for change in changes:
            for sub in any_kind:
                sub.offer(change)
            for sub in by_kind.get(change.kind, ()):
                sub.offer(change)
            if judging is None:
                continue
            offered: set[Subscription] = set()  # once, whichever of its scopes judge the change
            for scope in judging(change):
                for sub in by_scope.get(scope, ()):
                    if sub not in offered:
                        offered.add(sub)
                        sub.offer(change)

    def _rolled_back(
        self, change_id: int, snapshot: Snapshot, oldest_writer: int | None, now: float
    ) -> bool:
        gap = self._gaps[change_id]
        if snapshot.xmin >= gap.xmax:
            return True  # no transaction that was running when it was missed is running now
        if gap.pump < self._pumps and (oldest_writer is None or oldest_writer >= gap.xmax):
            return True  # nothing that could own it still writes in this database
        if now - gap.missed_at >= self.gap_timeout:
            logger.warning(
                "change %d was not committed within %.0fs; going on without it",
                change_id,
                self.gap_timeout,
            )
            return True
        return False


def _discard(index: dict[_Key, set[Subscription]], sub: Subscription) -> None:
    for key, subs in list(index.items()):
        subs.discard(sub)
        if not subs:
            del index[key]


class Subscription:
    """One subscriber's ordered stream of changes: replay from the log, then live, no gap, no repeat."""

    def __init__(self, feed: ChangeFeed, refuses: Callable[[ChangeRecord], bool] | None = None) -> None:
        self.feed = feed
        self.refuses = refuses
        self.last: int | None = None  # the last change delivered (or skipped by the filter)
        self.queue: deque[ChangeRecord] = deque()
        self.catching_up = False
        self.overflows = 0
        self._event = asyncio.Event()

    def start_at(self, position: int) -> None:
        """Start from the feed's ``position`` (or catch up to it from ``last``), once it is known."""
        if self.last is None:
            self.last = position
        self.catching_up = self.last < position

    def wake(self) -> None:
        self._event.set()

    def offer(self, change: ChangeRecord) -> None:
        """Called by the feed for each emitted change; never blocks."""
        if self.catching_up or self.last is None:
            return  # it will read this one from the log
        if self.refuses is not None and self.refuses(change):
            return
        if len(self.queue) >= self.feed.queue_size:
            self.queue.clear()
            self.catching_up = True
            self.overflows += 1
        else:
            self.queue.append(change)
        self._event.set()

    def close(self) -> None:
        """Unregister; the stream ends."""
        self.feed._unsubscribe(self)

    async def changes(self) -> AsyncGenerator[ChangeRecord, None]:
        """Every change after the starting point, in id order, until the feed closes."""
        try:
            await self.feed.ready.wait()
            while not self.feed.closed:
                assert self.last is not None
                if self.catching_up:
                    target = self._start_catch_up()
                    while self.last < target and not self.feed.closed:
                        rows = await self.feed.read_between(self.last, target)
                        for change in rows:
                            self.last = change.change_id
                            yield change
                        if len(rows) < self.feed.page_size:
                            break
                    self.last = max(self.last, target)
                    continue
                if not self.queue:
                    self._event.clear()
                    await self._event.wait()
                    continue
                change = self.queue.popleft()
                if change.change_id > self.last:
                    self.last = change.change_id
                    yield change
        finally:
            self.close()

    def _start_catch_up(self) -> int:
        # No await between clearing the queue and reading the position: whatever the feed emits
        # from now on is queued, everything up to the position is read from the log.
        self.catching_up = False
        self.queue.clear()
        return self.feed.position
