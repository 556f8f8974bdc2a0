"""writing_apart: a write that fails for some of its items, written again in halves down to them."""

from __future__ import annotations

import asyncpg
import pytest

from headwater.ingest.service import writing_apart


class Store:
    """A write of integers, each its own transaction, refusing the ones in ``refused`` (as the
    database refuses an event that breaks a constraint) and recording what it committed."""

    def __init__(self, refused: set[int]) -> None:
        self.refused = refused
        self.writes = 0
        self.committed: list[int] = []

    async def write(self, items: list[int]) -> list[str]:
        self.writes += 1
        bad = self.refused.intersection(items)
        if bad:
            raise asyncpg.exceptions.CheckViolationError(f"{min(bad)} refused")
        self.committed += items
        return [f"stored {i}" for i in items]


def refused(item: int, exc: Exception) -> str:
    return f"refused {item}: {exc}"


async def test_only_the_items_that_fail_alone_fail_and_the_rest_is_stored_in_order():
    store = Store({17, 500, 501, 999})
    results = await writing_apart(list(range(1000)), store.write, refused)
    assert results == [
        f"refused {i}: {i} refused" if i in store.refused else f"stored {i}" for i in range(1000)
    ]
    assert store.committed == [i for i in range(1000) if i not in store.refused]
    # Halving: tens of writes for four refused items among a thousand, not a thousand.
    assert store.writes < 80


async def test_a_write_known_to_have_failed_is_not_tried_whole_again():
    store = Store({3})
    failure = asyncpg.exceptions.CheckViolationError("3 refused")
    results = await writing_apart(list(range(8)), store.write, refused, failed=failure)
    assert results[3] == "refused 3: 3 refused"
    # The halves [0..3] and [4..7], then [0, 1] and [2, 3], then [2] and [3].
    assert store.writes == 6
    # One item known to have failed is refused with that failure, not written again.
    assert await writing_apart([3], store.write, refused, failed=failure) == ["refused 3: 3 refused"]
    assert store.writes == 6


async def test_a_failure_of_the_database_itself_is_raised_not_blamed_on_items():
    async def unavailable(items: list[int]) -> list[str]:
        raise asyncpg.exceptions.UndefinedTableError('relation "run_states" does not exist')

    with pytest.raises(asyncpg.exceptions.UndefinedTableError):
        await writing_apart(list(range(10)), unavailable, refused)
