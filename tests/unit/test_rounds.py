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
    # Round 1: every writer doubles. Round 2: the odd ones double again while the even one negates.
    # Round 3: the odd ones negate.
    assert calls == [
        ("double", [1, 2, 3]),
        ("double", [2, 6]),
        ("negate", [4]),
        ("negate", [4, 12]),
    ]


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
