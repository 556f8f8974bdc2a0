"""Write many independent events at once: every store operation runs once per round, for all of them.

Each event is written by its own coroutine (the writers of ``dataset_writes`` and ``job_writes``,
step by step as for a single event), but instead of running a statement, a step asks ``Rounds`` for
it and waits. When every coroutine is waiting (or done), ``Rounds`` runs each requested operation
once, as one set-based statement over the requests of all events, hands every coroutine its own
result and lets them go on to their next step. A wave of 300 events thus costs the statements of
one event, not 300 times as many.

This is only correct for events that touch disjoint rows; ``service.plan_waves`` groups events so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncpg

A = TypeVar("A")
R = TypeVar("R")
T = TypeVar("T")

# A store operation in batch form: one request per waiting event in, one result per request out
# (same order).
BatchOperation = Callable[["asyncpg.Connection", list[A]], Awaitable[Sequence[R]]]


class Rounds:
    """Runs the store operations requested by many coroutines together, one statement per operation."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn
        self._requests: dict[BatchOperation[Any, Any], list[tuple[Any, asyncio.Future[Any]]]] = {}
        self._waiting = 0

    def __call__(self, operation: BatchOperation[A, R], request: A) -> asyncio.Future[R]:
        """Ask for ``operation`` on ``request`` in the next round; await the result."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._requests.setdefault(operation, []).append((request, future))
        self._waiting += 1
        return future

    async def run(self, coroutines: list[Coroutine[Any, Any, T]]) -> list[T]:
        """Run the coroutines to the end, a round of statements whenever all of them wait."""
        tasks = [asyncio.ensure_future(c) for c in coroutines]
        try:
            while True:
                # Let every coroutine run until it waits for a round or finishes.
                while sum(not t.done() for t in tasks) > self._waiting:
                    await asyncio.sleep(0)
                for task in tasks:
                    if task.done() and task.exception() is not None:
                        raise task.exception()  # type: ignore[misc]
                if not self._requests:
                    return [t.result() for t in tasks]
                await self._round()
        finally:
            for task in tasks:
                task.cancel()
            self._requests.clear()
            self._waiting = 0

    async def _round(self) -> None:
        requests, self._requests = self._requests, {}
        for operation, calls in requests.items():
            results = await operation(self.conn, [request for request, _ in calls])
            if len(results) != len(calls):
                raise AssertionError(f"{operation.__name__} answered {len(results)} of {len(calls)}")
            for (_, future), result in zip(calls, results, strict=True):
                future.set_result(result)
            self._waiting -= len(calls)
