"""The one LISTEN connection of a process: outside the pool, reconnecting when it is lost.

Notifications sent while it was away are lost, so every (re)connect also wakes the feed, which
reads the change log from where it stopped: a lost connection delays changes, never drops them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

import asyncpg

if TYPE_CHECKING:
    from collections.abc import Callable

logger = logging.getLogger("headwater.feed")

CHANNEL = "headwater_changes"


class ChangeListener:
    """LISTEN on ``channel``; calls ``on_notify(max change id or None)`` for each notification."""

    def __init__(
        self,
        dsn: str,
        on_notify: Callable[[int | None], None],
        *,
        channel: str = CHANNEL,
        keepalive: float = 10.0,
        max_backoff: float = 5.0,
    ) -> None:
        self.dsn = dsn
        self.on_notify = on_notify
        self.channel = channel
        self.keepalive = keepalive
        self.max_backoff = max_backoff
        self.connection: asyncpg.Connection | None = None
        self.connects = 0
        self._task: asyncio.Task[None] | None = None
        self._lost = asyncio.Event()
        self._connected = asyncio.Event()
        self._attempted = asyncio.Event()

    async def start(self) -> None:
        """Connect, and keep connected; returns after the first attempt, whether it worked or not."""
        self._task = asyncio.create_task(self._run(), name="headwater-change-listener")
        await self._attempted.wait()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._disconnect()

    async def wait_connected(self) -> None:
        await self._connected.wait()

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        try:
            change_id: int | None = int(payload)
        except ValueError:
            change_id = None
        self.on_notify(change_id)

    def _terminated(self, _conn: Any) -> None:
        self._lost.set()

    async def _connect(self) -> None:
        conn = await asyncpg.connect(
            self.dsn, timeout=self.keepalive, server_settings={"application_name": "headwater-listener"}
        )
        try:
            await conn.add_listener(self.channel, self._notified)
        except BaseException:
            await conn.close()
            raise
        conn.add_termination_listener(self._terminated)
        self.connection = conn
        self._lost.clear()
        self.connects += 1
        self._connected.set()
        self._attempted.set()
        # Anything committed while nobody listened is in the log: read it now.
        self.on_notify(None)

    async def _disconnect(self) -> None:
        conn, self.connection = self.connection, None
        self._connected.clear()
        if conn is not None and not conn.is_closed():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 2)
            if not conn.is_closed():
                conn.terminate()

    async def _run(self) -> None:
        backoff = 0.05
        while True:
            try:
                await self._connect()
                backoff = 0.05
                await self._watch()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._attempted.set()
                await self._disconnect()
                logger.warning(
                    "change listener connection failed (%s); reconnecting in %.2fs", exc, backoff
                )
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.max_backoff)
            finally:
                await self._disconnect()

    async def _watch(self) -> None:
        """Return when the connection is lost; a silent half-open socket is caught by a ping."""
        conn = self.connection
        assert conn is not None
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._lost.wait(), self.keepalive)
            if self._lost.is_set() or conn.is_closed():
                raise ConnectionError("the listening connection was closed")
            await asyncio.wait_for(conn.fetchval("SELECT 1"), self.keepalive)
