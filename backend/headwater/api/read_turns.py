"""Lineage reads take turns: at most a few of a server process's at once.

A lineage answer is built and encoded on the event loop (a walk of 10,000 nodes is about 0.1 s of
Python and a 14 MB answer), which every other request of the process shares, ingest's writer
included. Sixty clients reading such answers at once kept the loop busy with them: a POST waited up
to 13 s, some answered 503 after the ingest timeout, and /healthz took 3 s. Taking turns, a read
waits for its turn without holding the loop, and what else arrives runs between a few reads' steps
instead of sixty's. A read that waits longer than the pool's acquire timeout is answered 503
``database_busy``, as when every connection stays in use.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from headwater.errors import DatabaseBusyError


class ReadTurns:
    def __init__(self, at_once: int, wait_s: float) -> None:
        self.at_once = at_once
        self.wait_s = wait_s
        self._turns = asyncio.Semaphore(at_once)

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        try:
            await asyncio.wait_for(self._turns.acquire(), self.wait_s)
        except TimeoutError:
            raise DatabaseBusyError(
                f"The server is busy: its {self.at_once} lineage reads at a time stayed taken for "
                f"{self.wait_s:g} s. Retry later."
            ) from None
        try:
            yield
        finally:
            self._turns.release()
