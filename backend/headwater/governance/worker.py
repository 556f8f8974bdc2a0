"""The governance worker of `serve`: applies the change log as the feed settles it.

It follows the process's change feed rather than the log itself, because the feed only moves its
position past ids that are committed or known never to come: applying up to it never skips a
change committed late. Its own change kinds do not wake it. Every server runs one; the progress
row's lock makes them take turns, and each starts where the last one stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from headwater.governance.propagation import OWN_KINDS, apply_pending

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import asyncpg
    from litestar import Litestar

    from headwater.feed.hub import ChangeFeed
    from headwater.governance.policy import Policy

logger = logging.getLogger("headwater.governance")

# At most one pass per this many seconds: under load, one pass then covers the changes of many
# ingest transactions instead of each paying its own (a violation is still announced well within
# a second).
PACE_S = 0.2


class GovernanceWorker:
    def __init__(self, pool: asyncpg.Pool, feed: ChangeFeed, policy: Policy) -> None:
        self.pool = pool
        self.feed = feed
        self.policy = policy
        self.applied = 0  # every change up to here is applied
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="headwater-governance")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        await self.feed.ready.wait()
        # Subscribed before catching up: whatever the catch-up does not reach wakes it again.
        subscription = self.feed.subscribe(refuses=lambda change: change.kind in OWN_KINDS)
        await self._apply()
        loop = asyncio.get_running_loop()
        last = loop.time()
        async with contextlib.aclosing(subscription.changes()) as changes:
            async for change in changes:
                if change.change_id > self.applied:
                    await asyncio.sleep(max(0.0, last + PACE_S - loop.time()))
                    await self._apply()
                    last = loop.time()

    async def _apply(self) -> None:
        """Apply up to the feed's position, retrying (with a growing pause) until it works."""
        failures = 0
        while True:
            upto = self.feed.position
            try:
                async with self.pool.acquire() as conn:
                    outcome = await apply_pending(conn, self.policy, upto=upto)
            except asyncio.CancelledError:
                raise
            except Exception:
                failures += 1
                logger.exception("applying governance to the change log failed; retrying")
                await asyncio.sleep(min(0.1 * 2**failures, 5.0))
                continue
            self.applied = max(self.applied, upto)
            if outcome.violations_opened or outcome.violations_cleared:
                logger.info(
                    "governance: %d violation(s) opened, %d cleared up to change %d",
                    outcome.violations_opened,
                    outcome.violations_cleared,
                    outcome.last_change_id,
                )
            return


@asynccontextmanager
async def governance_worker(app: Litestar) -> AsyncIterator[None]:
    """Runs after the change feed's lifespan (it follows app.state.feed) and stops before it."""
    worker = GovernanceWorker(app.state.pool, app.state.feed, app.state.policy)
    worker.start()
    app.state.governance = worker
    try:
        yield
    finally:
        await worker.close()
