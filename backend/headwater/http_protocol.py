"""The HTTP protocol `headwater serve` runs: uvicorn's (on httptools), with deadlines on clients.

uvicorn waits forever for a request to arrive: a connection that sends nothing, or its headers or
body a byte at a time, holds a socket, a task and a file descriptor for as long as its client likes,
and enough of them (a few thousand, cheap to open) leave the server unable to accept anyone else.
Here a new connection that begins no request within uvicorn's keep-alive timeout is closed, as an
idle one is after a response, and a request must be received whole, line, headers and body, within
``HEADWATER_REQUEST_READ_TIMEOUT_S`` of its first byte: past that the client is answered 408 and the
connection closed (a handler reading the body sees a disconnect, as when a client goes away).

The other way round, a response is built whole before it is sent (a page of a thousand raw events
is 7.5 MB) and waits in the connection's send buffer for its client to read it: sixty such requests
left unread held 450 MB until their clients went away. A response whose client reads less than
``HEADWATER_RESPONSE_MIN_BYTES_PER_S`` of it over ``HEADWATER_RESPONSE_STALL_S`` has its connection
dropped with what it holds: none at all, or a trickle (forty clients reading a 13.8 MB answer at
1 KB/s held 570 MB, for the four hours they would have taken); a client reading at a real network's
pace is left to read. A connection upgraded to a websocket leaves these deadlines behind
(subscriptions have their own guard against clients that read nothing).

A request's line and headers are bounded too (``MAX_HEAD_BYTES``): uvicorn sets no limit, and the
parser gathers an unfinished header value by appending each piece it receives to what it has, so one
client sending a header of 100 MB without ending it took 150 MB and held the event loop for seconds
at a time. Past the limit the client is answered 431 and the connection closed.

The deadlines are checked by one sweep a second over the open connections, not by a timer per
request. Measured side by side with 32 clients posting events, one worker, three pairs each: a
timer armed and cancelled for every request took 679-690 events/s against 703-724 without
deadlines; the sweep 698-758 against 692-760.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import sys
import termios
import weakref
from typing import Any

import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from headwater.api.problems import problem_body
from headwater.settings import get_settings

SWEEP_EVERY_S = 1.0


def _problem_response(status: int, reason: str, code: str, title: str, detail: str) -> bytes:
    """A whole HTTP response holding a problem document, as every other error is
    (headwater.api.problems), for what the protocol answers before any app runs; it closes."""
    body = msgspec.json.encode(problem_body(status, code, title, detail))
    return (
        b"HTTP/1.1 %d %s\r\ncontent-type: application/problem+json\r\ncontent-length: %d\r\n"
        b"connection: close\r\n\r\n%s" % (status, reason.encode(), len(body), body)
    )


_TIMED_OUT_RESPONSE = _problem_response(
    408,
    "Request Timeout",
    "request_timeout",
    "Request Timeout",
    "The request was not received in time; send it again.",
)

# Bytes of a request's line and headers. Counted a piece at a time as they arrive, so that a piece
# that also ends the previous request (pipelined) is not counted: a head is refused once it is
# longer than this, and certainly before it is this plus one piece (asyncio reads 256 KiB at most).
MAX_HEAD_BYTES = 64 * 1024
_HEAD_TOO_LARGE_RESPONSE = _problem_response(
    431,
    "Request Header Fields Too Large",
    "request_header_fields_too_large",
    "Request Header Fields Too Large",
    f"The request line and headers are larger than {MAX_HEAD_BYTES} bytes.",
)

# What the HTTP parser refuses (uvicorn answers it in plain text): a URL longer than it reads
# (64 KiB), or anything else that is not HTTP/1.1.
_URL_TOO_LONG_RESPONSE = _problem_response(
    414,
    "URI Too Long",
    "uri_too_long",
    "URI too long",
    "The request's URL is longer than 64 KiB, the most this server reads; send long lists of "
    "values in a body (GraphQL variables, a POST).",
)
_NOT_HTTP_RESPONSE = _problem_response(
    400,
    "Bad Request",
    "invalid_http_request",
    "Invalid HTTP request",
    "The request is not valid HTTP/1.1.",
)
_PARSED_URL_BYTES = 65_535

# The open connections of this process (websockets excepted), and the sweep that checks them.
_watched: weakref.WeakSet[DeadlineProtocol] = weakref.WeakSet()
_sweep: asyncio.TimerHandle | None = None


def _watch(protocol: DeadlineProtocol) -> None:
    global _sweep
    _watched.add(protocol)
    if _sweep is None:
        _sweep = protocol.loop.call_later(SWEEP_EVERY_S, _check, protocol.loop)


def _check(loop: asyncio.AbstractEventLoop) -> None:
    global _sweep
    now = loop.time()
    for protocol in list(_watched):
        protocol.check_deadline(now)
    _sweep = loop.call_later(SWEEP_EVERY_S, _check, loop) if _watched else None


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with deadlines for a request to arrive and for its client to read
    the response (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = get_settings()
        self.read_timeout = settings.request_read_timeout_s
        # When the connection began waiting for what it has not received yet (None: nothing), and
        # whether that is the rest of a request begun, else a first request.
        self.waiting_since: float | None = None
        self.in_request = False
        self.stall_s = settings.response_stall_s
        self.min_rate = settings.response_min_bytes_per_s
        # While the send buffer is full: since when the current period of watching the client read
        # began, and how much was unsent then (a client reading drains it, one reading nothing or
        # a trickle does not, or hardly).
        self.stalled_since: float | None = None
        self.stalled_holding = 0
        # While a request's head (line and headers) is being received: its bytes so far, and
        # whether a request began in the piece being read (see MAX_HEAD_BYTES).
        self.reading_head = True
        self.head_bytes = 0
        self.began_in_piece = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.waiting_since, self.in_request = self.loop.time(), False
        _watch(self)

    def connection_lost(self, exc: Exception | None) -> None:
        _watched.discard(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self.began_in_piece = False
        super().data_received(data)
        if not self.reading_head or self.transport.is_closing():
            return
        if not self.began_in_piece:  # the whole piece is head
            self.head_bytes += len(data)
        if self.head_bytes > MAX_HEAD_BYTES:
            self.logger.warning(
                "closed a connection from %s: its request's headers are larger than %d bytes",
                self._peer(),
                MAX_HEAD_BYTES,
            )
            self.reading_head = False
            _watched.discard(self)
            self.transport.write(_HEAD_TOO_LARGE_RESPONSE)
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """What the parser refused, as a problem document as every other error is."""
        self.logger.debug("refused a request from %s: %s", self._peer(), msg)
        # The URL so far: the parser stops at its limit.
        too_long = len(getattr(self, "url", b"")) >= _PARSED_URL_BYTES - 1024
        self.transport.write(_URL_TOO_LONG_RESPONSE if too_long else _NOT_HTTP_RESPONSE)
        self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.waiting_since, self.in_request = self.loop.time(), True
        self.reading_head, self.head_bytes, self.began_in_piece = True, 0, True

    def on_headers_complete(self) -> None:
        self.reading_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        # Between requests, uvicorn's keep-alive timeout closes an idle connection.
        self.waiting_since = None
        super().on_message_complete()

    def handle_websocket_upgrade(self) -> None:
        _watched.discard(self)
        super().handle_websocket_upgrade()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self.stalled_since is None:
            self.stalled_since = self.loop.time()
            self.stalled_holding = self._unsent()

    def resume_writing(self) -> None:
        super().resume_writing()
        self.stalled_since = None

    def _unsent(self) -> int:
        """Bytes sent to the client and not yet taken by it: in the transport's buffer, and in the
        kernel's send queue (Linux), which drains as the client reads, where the transport's buffer
        may wait seconds for the kernel to take more."""
        unsent = self.transport.get_write_buffer_size()
        sock = self.transport.get_extra_info("socket")
        if sock is not None and hasattr(termios, "TIOCOUTQ"):
            with contextlib.suppress(OSError):
                queued = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
                unsent += int.from_bytes(queued, sys.byteorder, signed=True)
        return unsent

    def check_deadline(self, now: float) -> None:
        if self.stalled_since is not None and now - self.stalled_since >= self.stall_s:
            holding = self._unsent()
            taken = self.stalled_holding - holding
            # All that waited, or at least the floor's worth of it for the period.
            enough = min(self.stalled_holding, self.min_rate * (now - self.stalled_since))
            if taken > 0 and taken >= enough:  # the client reads: watch another period
                self.stalled_since, self.stalled_holding = now, holding
            else:
                self.logger.warning(
                    "dropped a connection to %s: it read %d bytes of its response in %d s",
                    self._peer(),
                    max(taken, 0),
                    now - self.stalled_since,
                )
                _watched.discard(self)
                # Not close(), which would wait to send what the buffer holds: that is what to free.
                self.transport.abort()
                return
        may_wait = self.read_timeout if self.in_request else self.timeout_keep_alive
        if self.waiting_since is None or now - self.waiting_since < may_wait:
            return
        self.waiting_since = None
        _watched.discard(self)
        if self.transport.is_closing():
            return
        if self.in_request:
            self._request_timed_out()
        self.transport.close()  # connection_lost tells a handler reading the body its client is gone

    def _request_timed_out(self) -> None:
        self.logger.warning(
            "closed a connection from %s: its request was not received within %d s",
            self._peer(),
            self.read_timeout,
        )
        # Answered unless a response is on its way (a previous one, pipelined, or this request's).
        if self.cycle is None or self.cycle.response_complete or not self.cycle.response_started:
            self.transport.write(_TIMED_OUT_RESPONSE)

    def _peer(self) -> str:
        return "{}:{}".format(*self.client) if self.client else "a client"
