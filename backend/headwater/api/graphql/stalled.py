"""Websocket clients that stop reading, found at the socket and disconnected; websockets past the
most a process holds, refused; and what clients send, read at a pace.

Each open websocket holds a file descriptor and some 75 KB of the server's memory whether or not it
subscribes (3,000 opened and left idle took 226 MB here), and stays open as long as its client
likes: past ``max_open`` a new one is refused at its handshake, with a 503 and ``Retry-After``.

A subscriber that never reads its socket fills the buffers on the way: the client's, the
server's kernel send buffer, then the transport's. Until they are full every change is still
rendered and written for it, so they are kept small (``SEND_BUFFER_BYTES`` each, a few dozen
changes): a stalled subscriber costs the server little, and soon. Once they are full its
subscription stops taking changes; the feed keeps at most its queue for it, then re-reads from the
change log what it missed (``feed/hub.py``), so memory stays bounded. A send that cannot go out for
``stall_s`` seconds ends the connection: a close frame (1013, Try Again Later) is queued behind the
buffered changes for a client that reads again within ``stall_s`` more, the connection is reset
otherwise. The client resumes with ``after`` = the cursor of the last change it received.

Each message a client sends is parsed, validated and answered on the event loop, some 70 µs: one
websocket sending subscribe messages as fast as it could kept a core busy answering 13,000 refusals
a second, and took single-event posts from 153 to 41 events/s and /healthz to 0.4 s. So messages are
read at a pace (``MessagePace``): a websocket's own, a burst then ``messages_per_s`` each second,
and the process's, ``PROCESS_MESSAGES`` times that for all of them. A client sending faster is read
more slowly; what it sent waits in uvicorn's queue, then in the socket's buffers, which slows it.
A large message counts as one more for every ``PACE_CHARACTERS`` it holds: reading JSON costs by
its length, and one websocket sending 4 MB subscribe messages had 113 of them (450 MB) parsed a
second and took posts from 145 to 53 events/s; paced, 137 to 135.

The transport is uvicorn's (the ASGI ``send`` is a method of its connection); under another
server the buffers and the stall are left to it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import struct
import time
from typing import TYPE_CHECKING, Any

from litestar.enums import ScopeType

from headwater.api.problems import PROBLEM_JSON, problem_body
from headwater.errors import TooManyWebsocketsError

if TYPE_CHECKING:
    from litestar import Litestar
    from litestar.types import (
        Message,
        Receive,
        ReceiveMessage,
        Scope,
        Send,
        WebSocketResponseBodyEvent,
        WebSocketResponseStartEvent,
    )

logger = logging.getLogger("headwater.subscriptions")

SEND_BUFFER_BYTES = 8 * 1024
# 1013, Try Again Later: the client may resume from its last cursor.
CLOSE_CODE = 1013
CLOSE_REASON = "stopped reading; resume with `after` = the cursor of the last change received"


# The process's pace, in websockets' own paces: what all of them together may send.
PROCESS_MESSAGES = 20
# A message counts as one more for each of these it holds (a subscribe message is a few hundred).
PACE_CHARACTERS = 16 * 1024


class MessagePace:
    """A token bucket: up to ``burst`` messages at once, then ``per_s`` a second."""

    def __init__(self, per_s: float, burst: float) -> None:
        self.per_s = per_s
        self.burst = burst
        self.tokens = burst
        self.at = time.monotonic()

    def wait_s(self, tokens: float = 1) -> float:
        """Take a message's ``tokens``; how long to wait before reading the message. Callers that
        come while others wait queue behind them: each waits for its own tokens."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.per_s) - tokens
        self.at = now
        return 0.0 if self.tokens >= 0 else -self.tokens / self.per_s


def guard_websockets(
    app: Litestar,
    stall_s: float,
    max_open: int,
    retry_after_s: int,
    messages_per_s: int,
    message_burst: int,
) -> Litestar:
    """Wrap ``app`` so that its websockets are at most ``max_open``, have small send buffers, end
    when stalled, and are read at a pace (see the module)."""
    inner = app.asgi_handler
    open_now = 0
    process_pace = MessagePace(messages_per_s * PROCESS_MESSAGES, message_burst * PROCESS_MESSAGES)

    async def handler(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal open_now
        if scope["type"] != ScopeType.WEBSOCKET:
            await inner(scope, receive, send)
            return
        if open_now >= max_open:
            await _refuse(scope, receive, send, max_open, retry_after_s)
            return
        open_now += 1
        own_pace = MessagePace(messages_per_s, message_burst)
        try:
            await guarded(scope, _paced(receive, own_pace, process_pace), send)
        finally:
            open_now -= 1

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        transport = _transport(send)
        if transport is None:
            await inner(scope, receive, send)
            return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        transport.set_write_buffer_limits(high=SEND_BUFFER_BYTES)

        async def send_or_disconnect(message: Message) -> None:
            try:
                # A timer, not wait_for's task per message: sends are many, and most never wait.
                async with asyncio.timeout(stall_s):
                    await send(message)
                return
            except TimeoutError:
                pass
            if not transport.is_closing():  # the first of the connection's sends to give up
                client = scope.get("client")
                logger.warning(
                    "websocket client %s read nothing for %.0f s; disconnected",
                    f"{client[0]}:{client[1]}" if client else "?",
                    stall_s,
                )
                # The close frame goes behind what is buffered: a client that reads again within
                # stall_s gets it; one that does not is reset.
                transport.write(_close_frame(CLOSE_CODE, CLOSE_REASON))
                transport.close()
                asyncio.get_running_loop().call_later(stall_s, transport.abort)
            # Either way uvicorn then reports the disconnection, and the connection's tasks (this
            # send's included) are cancelled; an error here would only be logged as one.
            await asyncio.sleep(stall_s + 5)
            raise ConnectionResetError("the websocket client stopped reading")

        await inner(scope, receive, send_or_disconnect)

    app.asgi_handler = handler
    return app


def _paced(receive: Receive, *paces: MessagePace) -> Receive:
    """``receive``, waiting before each message from the client for every pace's tokens."""

    async def paced_receive() -> ReceiveMessage:
        message = await receive()
        if message["type"] == "websocket.receive":
            size = len(message.get("text") or message.get("bytes") or "")
            tokens = 1 + size // PACE_CHARACTERS
            # Even within its burst, a message lets the loop run what else waits: uvicorn hands
            # over queued messages without a pause, and 1,100 of them read back to back (1,000
            # subscriptions opened) held /healthz for 450 ms.
            await asyncio.sleep(max(pace.wait_s(tokens) for pace in paces))
        return message

    return paced_receive


async def _refuse(scope: Scope, receive: Receive, send: Send, max_open: int, retry_after_s: int) -> None:
    """Refuse a websocket at its handshake: a 503 problem where the server can answer one, else a
    close (1013, Try Again Later), which the server turns into a 403."""
    await receive()  # websocket.connect
    error = TooManyWebsocketsError(
        f"This server has {max_open:,} websockets open, the most it holds "
        "(HEADWATER_MAX_WEBSOCKETS). Retry later."
    )
    if "websocket.http.response" not in (scope.get("extensions") or {}):
        await send({"type": "websocket.close", "code": CLOSE_CODE, "reason": "too many websockets"})
        return
    body = json.dumps(problem_body(error.status, error.code, error.title, error.message)).encode()
    start: WebSocketResponseStartEvent = {
        "type": "websocket.http.response.start",
        "status": error.status,
        "headers": [
            (b"content-type", PROBLEM_JSON.encode()),
            (b"retry-after", str(retry_after_s).encode()),
        ],
    }
    await send(start)
    end: WebSocketResponseBodyEvent = {
        "type": "websocket.http.response.body",
        "body": body,
        "more_body": False,
    }
    await send(end)


def _close_frame(code: int, reason: str) -> bytes:
    """A websocket close frame as a server sends it (unmasked); the reason fits in 123 bytes."""
    payload = struct.pack("!H", code) + reason.encode()
    return bytes([0x88, len(payload)]) + payload


def _transport(send: Send) -> Any:
    """The connection's transport (asyncio's or uvloop's, alike but unrelated classes), or None."""
    connection = getattr(send, "__self__", None)
    transport = getattr(connection, "transport", None)
    wanted = ("abort", "get_extra_info", "is_closing", "set_write_buffer_limits")
    return transport if all(hasattr(transport, name) for name in wanted) else None
