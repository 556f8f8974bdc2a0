"""Write many independent events at once: every store operation runs once per round, for all of them.

Each event is written by its own coroutine (the writers of ``dataset_writes`` and ``job_writes``,
step by step as for a single event), but instead of running a statement, a step asks ``Rounds`` for
it and waits. When every coroutine is waiting (or done), ``Rounds`` runs one requested operation, as
one set-based statement over the requests of all events waiting for it, hands each of them its own
result and lets them go on to their next step. A wave of 300 events thus costs the statements of
one event, not 300 times as many.

Of the operations waiting, the one that comes first in the writers' ``order`` runs: coroutines that
are ahead wait for the others to reach the same operation, so that events taking different paths
(an application's event next to its SQL job's, which writes datasets first) still share each
statement instead of each asking for it at a different step.

The coroutines are stepped here directly, not as asyncio tasks: between two statements nothing but
their own Python runs, instead of a task switch per coroutine and a pass of the event loop (with
whatever else the server has to do) per step. A step may await only ``Rounds`` (or coroutines that
do); the statements themselves are awaited on the event loop as usual.

This is only correct for events that touch disjoint rows; ``service.plan_waves`` groups events so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import asyncpg

A = TypeVar("A")
R = TypeVar("R")
T = TypeVar("T")

# A store operation in batch form: one request per waiting event in, one result per request out
# (same order).
BatchOperation = Callable[["asyncpg.Connection", list[A]], Awaitable[Sequence[R]]]


class _Request(Generic[A, R]):
    """What a step awaits: its request to an operation, answered by ``Rounds.run``."""

    __slots__ = ("operation", "request")

    def __init__(self, operation: BatchOperation[A, R], request: A) -> None:
        self.operation = operation
        self.request = request

    def __await__(self) -> Generator[_Request[A, R], R, R]:
        return (yield self)


class Rounds:
    """Runs the store operations requested by many coroutines together, one statement per operation."""

    def __init__(self, conn: asyncpg.Connection, order: Sequence[BatchOperation[Any, Any]] = ()) -> None:
        self.conn = conn
        # An operation's place in the writers' order; one not listed runs before the listed ones.
        self._rank = {operation: rank for rank, operation in enumerate(order, start=1)}

    def __call__(self, operation: BatchOperation[A, R], request: A) -> Awaitable[R]:
        """Ask for ``operation`` on ``request`` in the next round; await the result."""
        return _Request(operation, request)

    async def run(self, coroutines: list[Coroutine[Any, Any, T]]) -> list[T]:
        """Run the coroutines to the end, a statement whenever all of them wait."""
        results: list[Any] = [None] * len(coroutines)
        # operation -> (coroutine index, request) of the steps waiting for it
        waiting: dict[BatchOperation[Any, Any], list[tuple[int, Any]]] = {}

        def step(index: int, answer: Any) -> None:
            try:
                asked = coroutines[index].send(answer)
            except StopIteration as done:
                results[index] = done.value
                return
            if not isinstance(asked, _Request):
                raise TypeError(f"a write step awaited {asked!r}; it may await only Rounds")
            waiting.setdefault(asked.operation, []).append((index, asked.request))

        try:
            for index in range(len(coroutines)):
                step(index, None)
            while waiting:
                # The first in the order; of equals, the first asked for (min keeps the first).
                operation = min(waiting, key=lambda op: self._rank.get(op, 0))
                calls = waiting.pop(operation)
                answers = await operation(self.conn, [request for _, request in calls])
                if len(answers) != len(calls):
                    raise AssertionError(f"{operation.__name__} answered {len(answers)} of {len(calls)}")
                for (index, _), answer in zip(calls, answers, strict=True):
                    step(index, answer)
            return results
        finally:
            for coroutine in coroutines:
                coroutine.close()
