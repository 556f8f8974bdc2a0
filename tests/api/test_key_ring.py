"""The key ring asks the database once for what many requests need at the same moment."""

from __future__ import annotations

import asyncio

import pytest

import headwater.access.keys as keys_module
from headwater.access.keys import ALL_SCOPES, KeyRing, new_key
from headwater.store import api_keys as key_store

pytestmark = pytest.mark.db


@pytest.fixture
def asked(monkeypatch):
    """How often the key ring asked the database each of its questions (the real queries run)."""
    counts = {"count": 0, "key": 0}
    count, fetch = key_store.count_active_api_keys, key_store.fetch_active_api_key

    async def counted_count(conn):
        counts["count"] += 1
        await asyncio.sleep(0.05)  # long enough for every caller below to arrive meanwhile
        return await count(conn)

    async def counted_fetch(conn, key_id):
        counts["key"] += 1
        await asyncio.sleep(0.05)
        return await fetch(conn, key_id)

    monkeypatch.setattr(keys_module.key_store, "count_active_api_keys", counted_count)
    monkeypatch.setattr(keys_module.key_store, "fetch_active_api_key", counted_fetch)
    return counts


async def test_requests_arriving_together_share_one_lookup(db, asked):
    key_id, key, secret_hash = new_key()
    async with db.acquire() as conn:
        await key_store.insert_api_key(conn, key_id, "shared", secret_hash, ["admin"])
    ring = KeyRing(db, None)
    closed = await asyncio.gather(*(ring.closed() for _ in range(50)))
    scopes = await asyncio.gather(*(ring.scopes_of(key) for _ in range(50)))
    wrong = await asyncio.gather(*(ring.scopes_of(key[:-4] + "XXXX") for _ in range(10)))
    assert closed == [True] * 50
    assert scopes == [ALL_SCOPES] * 50
    assert wrong == [None] * 10
    # One count, one lookup for the 50 presenting the key and one for the 10 presenting a wrong
    # secret (answers are cached per key presented).
    assert asked == {"count": 1, "key": 2}


async def test_a_caller_that_goes_away_does_not_fail_the_others(db, asked):
    ring = KeyRing(db, None)
    first = asyncio.ensure_future(ring.closed())
    others = [asyncio.ensure_future(ring.closed()) for _ in range(5)]
    await asyncio.sleep(0.01)
    first.cancel()
    assert await asyncio.gather(*others) == [False] * 5
    assert asked["count"] == 1
    # Once answered, the next question after the cache runs out is asked again.
    ring._stored_count = None
    assert await ring.closed() is False
    assert asked["count"] == 2
