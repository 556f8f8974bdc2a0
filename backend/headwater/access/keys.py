"""API keys: their form, their scopes, and the key ring a server checks requests against.

A key is ``hw_<key_id>_<secret>``: the id names it (in `headwater keys list`, and to revoke it),
the secret is 32 random bytes of which only the SHA-256 is stored. Scopes:

- ``ingest``: post events (OpenLineage ingest, the batch endpoint, the Trino bridge);
- ``read``: REST reads, GraphQL queries and subscriptions, GraphiQL, the OpenAPI document, MCP;
- ``write``: GraphQL mutations and REST writes (tags, manual lineage, delete and restore);
- ``admin``: every scope.

HEADWATER_API_KEY, when set, is one more key, with every scope. While no key exists at all the
server is open, as a fresh install must be; the first key closes it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import secrets
import time
from typing import TYPE_CHECKING, Any, TypeVar

from headwater.store import api_keys as key_store

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Hashable

    import asyncpg

T = TypeVar("T")

SCOPES = ("ingest", "read", "write", "admin")
ALL_SCOPES = frozenset(SCOPES)
_KEY = re.compile(r"^hw_([0-9a-f]{12})_([A-Za-z0-9_-]{20,100})$")
# How long what the database said about keys is trusted: a created or revoked key takes effect
# within this, without a restart, for one query per key (and one count) per interval.
CACHE_SECONDS = 2.0
_CACHE_LIMIT = 10_000  # entries; random keys sent by a client cannot grow it further


def new_key() -> tuple[str, str, bytes]:
    """(key_id, the whole key to hand out once, the hash of its secret to store)."""
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    return key_id, f"hw_{key_id}_{secret}", _hash(secret)


def _hash(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def granted(scopes: frozenset[str]) -> frozenset[str]:
    """The scopes a key's scopes give: admin gives them all."""
    return ALL_SCOPES if "admin" in scopes else scopes


class KeyRing:
    """What a server process knows of keys: HEADWATER_API_KEY and the stored ones, cached briefly."""

    def __init__(self, pool: asyncpg.Pool, static_key: str | None) -> None:
        self.pool = pool
        self.static_key = static_key.encode() if static_key else None
        self._stored_count: tuple[float, int] | None = None
        self._by_token: dict[bytes, tuple[float, frozenset[str] | None]] = {}
        self._asking: dict[Hashable, asyncio.Future[Any]] = {}

    async def _ask_once(self, question: Hashable, ask: Callable[[], Awaitable[T]]) -> T:
        """``ask()``, once for every caller asking ``question`` meanwhile: when a cached answer runs
        out, every request in flight needs it at once, and each asking the database queued them
        all on the key ring's few connections."""
        asking = self._asking.get(question)
        if asking is None:
            asking = self._asking[question] = asyncio.ensure_future(ask())
            asking.add_done_callback(lambda _: self._asking.pop(question, None))
        # Shielded: one caller cancelled (its client gone) does not fail the others.
        result: T = await asyncio.shield(asking)
        return result

    async def closed(self) -> bool:
        """Whether requests need a key: some key exists."""
        if self.static_key is not None:
            return True
        now = time.monotonic()
        if self._stored_count is None or self._stored_count[0] < now:
            self._stored_count = (now + CACHE_SECONDS, await self._ask_once("count", self._count))
        return self._stored_count[1] > 0

    async def _count(self) -> int:
        async with self.pool.acquire() as conn:
            return await key_store.count_active_api_keys(conn)

    async def scopes_of(self, token: str) -> frozenset[str] | None:
        """The scopes a presented key grants, or None for a key that is not (or no longer) valid."""
        raw = token.encode("utf-8", "surrogateescape")
        if self.static_key is not None and hmac.compare_digest(raw, self.static_key):
            return ALL_SCOPES
        match = _KEY.match(token)
        if match is None:
            return None
        cache_key = hashlib.sha256(raw).digest()
        now = time.monotonic()
        cached = self._by_token.get(cache_key)
        if cached is not None and cached[0] >= now:
            return cached[1]
        key_id = match[1]

        async def fetch() -> tuple[frozenset[str], bytes] | None:
            async with self.pool.acquire() as conn:
                return await key_store.fetch_active_api_key(conn, key_id)

        stored = await self._ask_once(("key", key_id), fetch)
        scopes = None
        if stored is not None and hmac.compare_digest(_hash(match[2]), stored[1]):
            scopes = granted(stored[0])
        if len(self._by_token) >= _CACHE_LIMIT:
            self._by_token.clear()
        self._by_token[cache_key] = (now + CACHE_SECONDS, scopes)
        return scopes
