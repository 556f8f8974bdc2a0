"""The asyncpg pool: jsonb codecs and timeouts are set once per connection."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import asyncpg
import msgspec

if TYPE_CHECKING:
    from headwater.settings import Settings

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


def _encode_json(value: Any) -> str:
    # Values bound to jsonb parameters may already be encoded text (raw events as received).
    if isinstance(value, str):
        return value
    return _encoder.encode(value).decode()


def json_text(value: Any) -> str | None:
    """Pre-encode a value for a jsonb[] parameter (asyncpg takes a list element for a dimension)."""
    return None if value is None else _encoder.encode(value).decode()


def database_key(conn: asyncpg.Connection) -> tuple[object, str]:
    """The server address and database a connection uses (asyncpg keeps them on the connection): the
    key of what a process caches per database (a process may use several: tests, `headwater import`
    reading one and writing another)."""
    return conn._addr, conn._params.database


async def register_codecs(conn: asyncpg.Connection) -> None:
    """Decode json/jsonb to Python objects and encode Python objects to json/jsonb.

    Decoded with msgspec, not the standard library: the change feed decodes the details of every
    change ingest writes, thousands a second, and the standard decoder took a fifth of the
    server's time doing so (PostgreSQL's JSON has no NaN or repeated keys for the two to differ on).
    """
    for type_name in ("json", "jsonb"):
        await conn.set_type_codec(
            type_name, encoder=_encode_json, decoder=_decoder.decode, schema="pg_catalog", format="text"
        )


# Plan every execution of a prepared statement with its actual parameters. The queries bind arrays
# (unnest of an event's datasets, edges, fields): a generic plan cached while a table was small
# keeps scanning it as it grows, and ingest slowed from 150 to under 40 events/s over 20,000 events.
# No JIT: every statement here runs in milliseconds, and an estimate inflated by a set-returning
# function (100 rows a call) was enough to spend 20 ms compiling a statement that ran in 10.
# Ingest's writes are the exception (see the query begin_ingest_writes).
PLAN_SETTINGS = {"plan_cache_mode": "force_custom_plan", "jit": "off"}


class PoolBusyError(TimeoutError):
    """No connection of a pool came free in time because every one was in use.

    A TimeoutError like any other acquire that gives up (callers retrying on those go on doing
    so), told apart so that an answer can say the server is busy rather than the database gone.
    """

    def __init__(self, size: int, waited: float) -> None:
        super().__init__(
            f"all {size} database connections of this server stayed in use for {waited:g} s"
        )
        self.size = size
        self.waited = waited


class TimedPool(asyncpg.Pool):
    """A pool whose acquire gives up after ``acquire_timeout`` seconds unless given its own.

    Without it, a request waits for a connection as long as PostgreSQL is frozen (every connection
    stuck in a statement); with it, it fails with TimeoutError, which is answered 503:
    PoolBusyError when the wait was for a connection in use, a plain TimeoutError when a slot was
    free but connecting through it did not finish (PostgreSQL down or frozen).
    """

    acquire_timeout: float | None = None

    def acquire(self, *, timeout: float | None = None) -> Any:
        return super().acquire(timeout=self.acquire_timeout if timeout is None else timeout)

    async def _acquire(self, timeout: float | None) -> Any:
        try:
            return await super()._acquire(timeout)
        except TimeoutError:
            if timeout is not None and not self._free_slot_unconnected():
                raise PoolBusyError(self.get_max_size(), timeout) from None
            raise

    def _free_slot_unconnected(self) -> bool:
        """Whether a free slot of the pool has no open connection: asyncpg puts back the slot a
        wait was still connecting through when it ran out. A free slot holding an open connection
        is one released as the wait ran out (many waiters time out in the same turn of the loop
        as a release): those waited for a connection in use, the database was not the matter."""
        free = self._queue._queue  # asyncio.LifoQueue's items
        return any(holder._con is None or holder._con.is_closed() for holder in free)


async def create_pool(settings: Settings, dsn: str, size: int | None = None) -> asyncpg.Pool:
    """Open a pool the server uses (of ``size`` connections, else HEADWATER_POOL_MIN_SIZE to
    HEADWATER_POOL_MAX_SIZE); every connection gets the codecs and timeouts.

    PostgreSQL ends a statement after ``statement_timeout_ms``; the client gives up a little later
    (``command_timeout``) for when the server cannot even do that (stopped, or its host frozen).
    """
    acquire_timeout = settings.pool_acquire_timeout_ms / 1000
    pool = TimedPool(
        dsn,
        min_size=min(settings.pool_min_size, size) if size is not None else settings.pool_min_size,
        max_size=size if size is not None else settings.pool_max_size,
        max_queries=50_000,
        max_inactive_connection_lifetime=300.0,
        init=register_codecs,
        loop=None,
        connection_class=asyncpg.Connection,
        record_class=asyncpg.Record,
        timeout=acquire_timeout,
        command_timeout=settings.statement_timeout_ms / 1000 + 2,
        server_settings={
            **PLAN_SETTINGS,
            "statement_timeout": str(settings.statement_timeout_ms),
            "application_name": "headwater",
        },
    )
    pool.acquire_timeout = acquire_timeout
    return await pool
