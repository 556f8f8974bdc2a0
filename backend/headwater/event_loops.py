"""The event loop of the long-running writers (`consume`, `import marquez`, a backfill's writer):
uvloop's where it is installed, as uvicorn takes it for `serve`, else asyncio's.

Measured with the Kafka benchmark (20,000 events, one consumer, two runs side by side): the consumer's
CPU per event 0.95 and 0.94 ms on asyncio's loop against 0.83 and 0.80 on uvloop's, 937 and 953
against 1,035 and 1,109 events/s. Every statement of a write is a round trip through the loop, and
asyncpg and aiokafka read their sockets through it.
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
