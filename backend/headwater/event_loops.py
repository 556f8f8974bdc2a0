"""The event loop of the long-running writers (`consume`, `import marquez`, a backfill's writer):
uvloop's where it is installed, as uvicorn takes it for `serve`, else asyncio's.

Every statement of a write is a round trip through the loop, and asyncpg and aiokafka read their
sockets through it. Measured with the Kafka benchmark, one consumer, side by side with asyncio's
loop: its CPU per event 0.95, 0.94 and 0.90 ms against 0.83, 0.80 and 0.87 in three runs of 20,000
events, and 0.94 against 0.99 in one of 100,000; the write path alone, three alternating runs, within
4% (Python per event at best 0.446 against 0.431 ms in groups of 16). A few percent at most, on a
machine whose rates moved by a quarter from run to run; taken so that every long-running process
runs on the loop `serve` runs on.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import Any

T = TypeVar("T")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new loop: uvloop's if it is installed, else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on ``new_event_loop()``."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(coro)
