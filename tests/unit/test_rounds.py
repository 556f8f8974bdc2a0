"""Rounds: the steps of many writers share one call per operation and round, each gets its own answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from headwater.ingest.rounds import Rounds

CONN: Any = object()  # the operations below compute; they never touch a connection


def test_every_operation_runs_once_per_round_for_every_waiting_step() -> None:
    calls: list[tuple[str, list[int]]] = []

    async def double(conn: Any, requests: list[int]) -> list[int]:
        assert conn is CONN
        calls.append(("double", requests))
        return [r * 2 for r in requests]

    async def negate(conn: Any, requests: list[int]) -> list[int]:
        calls.append(("negate", requests))
        return [-r for r in requests]

    async def writer(db: Rounds, n: int) -> tuple[int, int]:
        doubled = await db(double, n)
        if n % 2:  # odd writers take one more step, through a nested coroutine
            doubled = await nested(db, doubled)
        return n, await db(negate, doubled)

    async def nested(db: Rounds, n: int) -> int:
        return await db(double, n)

    async def main() -> list[tuple[int, int]]:
        rounds = Rounds(CONN)
        return await rounds.run([writer(rounds, n) for n in (1, 2, 3)])

    assert asyncio.run(main()) == [(1, -4), (2, -4), (3, -12)]
    # Every writer doubles; the odd ones double again while the even one, ahead, waits for them
    # (double was asked for first); then all negate together.
    assert calls == [
        ("double", [1, 2, 3]),
        ("double", [2, 6]),
        ("negate", [4, 4, 12]),
    ]


def test_the_operation_first_in_the_order_runs_first() -> None:
    calls: list[tuple[str, list[int]]] = []

    async def double(conn: Any, requests: list[int]) -> list[int]:
        calls.append(("double", requests))
        return [r * 2 for r in requests]

    async def negate(conn: Any, requests: list[int]) -> list[int]:
        calls.append(("negate", requests))
        return [-r for r in requests]

    async def writer(db: Rounds, n: int) -> int:
        if n % 2:  # odd writers negate first, then double
            return await db(double, await db(negate, n))
        return await db(negate, await db(double, n))

    async def main(order: list[Any]) -> list[int]:
        rounds = Rounds(CONN, order)
        return await rounds.run([writer(rounds, n) for n in (1, 2, 3)])

    assert asyncio.run(main([double, negate])) == [-2, -4, -6]
    # The even writer doubles alone; the odd ones negate with it, then double alone.
    assert calls == [("double", [2]), ("negate", [1, 3, 4]), ("double", [-1, -3])]


def test_a_step_may_await_only_rounds() -> None:
    async def writer(db: Rounds) -> None:
        await asyncio.sleep(0)

    async def main() -> None:
        rounds = Rounds(CONN)
        await rounds.run([writer(rounds)])

    with pytest.raises(TypeError, match="may await only Rounds"):
        asyncio.run(main())


def test_a_failing_operation_fails_the_run_and_closes_every_writer() -> None:
    closed: list[int] = []

    async def fail(conn: Any, requests: list[int]) -> list[int]:
        raise RuntimeError("the statement failed")

    async def writer(db: Rounds, n: int) -> None:
        try:
            await db(fail, n)
        finally:
            closed.append(n)

    async def main() -> None:
        rounds = Rounds(CONN)
        await rounds.run([writer(rounds, n) for n in (1, 2)])

    with pytest.raises(RuntimeError, match="the statement failed"):
        asyncio.run(main())
    assert sorted(closed) == [1, 2]


def test_an_operation_must_answer_every_request() -> None:
    async def short(conn: Any, requests: list[int]) -> list[int]:
        return requests[:1]

    async def writer(db: Rounds, n: int) -> int:
        return await db(short, n)

    async def main() -> None:
        rounds = Rounds(CONN)
        await rounds.run([writer(rounds, n) for n in (1, 2)])

    with pytest.raises(AssertionError, match="short answered 1 of 2"):
        asyncio.run(main())
