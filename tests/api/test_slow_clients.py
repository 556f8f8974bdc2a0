"""Clients that open connections and send nothing, send a request a byte at a time, or read none of
their response, against a real `headwater serve`: each is closed within its deadline (a 408 once a
request has begun), everyone else is served meanwhile, a client reading slowly gets its whole
response, and a websocket subscription is not bound by them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
import websockets

from headwater.http_protocol import MAX_HEAD_BYTES, DeadlineProtocol
from tests.factories import run_event
from tests.server import HeadwaterServer, free_port, server_of_its_own

pytestmark = pytest.mark.db

READ_TIMEOUT_S = 1
# The server times a request by its event loop's clock, which uvloop keeps in whole milliseconds as
# of the loop's last turn: a deadline may fall up to that much before the client's own clock says.
LOOP_CLOCK_S = 0.002
STALL_S = 3
# uvicorn's keep-alive timeout, which closes a connection idle before its first request too.
IDLE_TIMEOUT_S = 5


server = server_of_its_own(
    "headwater_slow_clients",
    secured=False,
    env={
        "HEADWATER_REQUEST_READ_TIMEOUT_S": str(READ_TIMEOUT_S),
        "HEADWATER_RESPONSE_STALL_S": str(STALL_S),
    },
)


def connect(server: HeadwaterServer) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def until_closed(
    sock: socket.socket, drip: bytes = b"", limit: float = 30, since: float | None = None
) -> tuple[float, bytes]:
    """Seconds until the server closes ``sock`` (counted from ``since``, else from now) and what it
    sent, sending ``drip`` every 0.2 s."""
    started = time.monotonic() if since is None else since
    received = b""
    sock.settimeout(0.2)
    while time.monotonic() - started < limit:
        if drip:
            try:
                sock.send(drip)
            except OSError:
                break
        try:
            data = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            break
        if not data:
            break
        received += data
    return time.monotonic() - started, received


def read_response(sock: socket.socket) -> bytes:
    """One whole response (headers and its content-length of body)."""
    sock.settimeout(5)
    received = b""
    while not complete(received):
        received += sock.recv(4096)
    return received


def complete(received: bytes) -> bool:
    """Whether ``received`` holds a whole response: its headers and content-length of body."""
    head, separator, body = received.partition(b"\r\n\r\n")
    return bool(separator) and len(body) >= content_length(head)


def content_length(head: bytes) -> int:
    """The content-length a response's head gives."""
    return int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:"))[15:])


def assert_timed_out(answer: bytes) -> None:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 Request Timeout"), answer
    assert json.loads(body)["code"] == "request_timeout"


def test_headers_sent_a_line_at_a_time_get_a_408_at_the_deadline(server):
    with connect(server) as sock:
        # The deadline runs from the request's first byte: timed from just before it is sent.
        first_byte = time.monotonic()
        sock.send(b"GET /healthz HTTP/1.1\r\n")
        took, answer = until_closed(sock, drip=b"X-Slow: 1\r\n", since=first_byte)
    assert READ_TIMEOUT_S - LOOP_CLOCK_S <= took < READ_TIMEOUT_S + 2
    assert_timed_out(answer)


def test_a_body_sent_a_byte_at_a_time_gets_a_408_and_nothing_is_stored(server):
    with connect(server) as sock:
        first_byte = time.monotonic()
        sock.send(
            b"POST /api/v1/lineage HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n{"
        )
        took, answer = until_closed(sock, drip=b" ", since=first_byte)
    assert READ_TIMEOUT_S - LOOP_CLOCK_S <= took < READ_TIMEOUT_S + 2
    assert_timed_out(answer)
    assert httpx.get(server.url + "/api/v1/events/lineage").json()["totalCount"] == 0


def test_a_connection_that_begins_no_request_is_closed_as_an_idle_one(server):
    with connect(server) as sock:
        took, answer = until_closed(sock)
    assert IDLE_TIMEOUT_S - 0.5 <= took < IDLE_TIMEOUT_S + 2
    assert answer == b""


def test_many_slow_clients_leave_the_server_to_the_others(server):
    slow = [connect(server) for _ in range(200)]
    for sock in slow:
        sock.send(b"GET /healthz HTTP/1.1\r\nX-Slow: 1\r\n")
    started = time.monotonic()
    while time.monotonic() - started < READ_TIMEOUT_S + 1:
        response = httpx.get(server.url + "/healthz", timeout=2)
        assert response.status_code == 200
        time.sleep(0.1)
    for sock in slow:
        with sock:
            _, answer = until_closed(sock, limit=5)
        assert_timed_out(answer)


def test_keep_alive_requests_each_get_the_whole_deadline(server):
    with connect(server) as sock:
        for _ in range(3):
            sock.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_response(sock).startswith(b"HTTP/1.1 200 OK")
            time.sleep(READ_TIMEOUT_S + 0.2)  # idle between requests: uvicorn's keep-alive timeout


def test_headers_larger_than_the_limit_get_a_431_at_once(server):
    with connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
        # Sent without an end, as a client would send 100 MB: refused once past the limit.
        took, answer = until_closed(sock, drip=b"a" * 32 * 1024, limit=10)
    assert took < READ_TIMEOUT_S
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431 Request Header Fields Too Large"), answer
    assert json.loads(body)["detail"] == (
        f"The request line and headers are larger than {MAX_HEAD_BYTES} bytes."
    )


@pytest.mark.parametrize(
    ("request_bytes", "status", "code"),
    [
        (b"GET /graphql?query=" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long"),
        (b"HELLO THERE\r\n\r\n", 400, "invalid_http_request"),
    ],
    ids=["url of 70 KB", "not http"],
)
def test_what_the_http_parser_refuses_is_a_problem_document(server, request_bytes, status, code):
    with connect(server) as sock:
        sock.sendall(request_bytes)
        _, answer = until_closed(sock, limit=10)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status), answer[:200]
    assert b"content-type: application/problem+json" in head
    assert json.loads(body)["code"] == code


def test_headers_within_the_limit_and_pipelined_bodies_are_served(server):
    with connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 60_000 + b"\r\n\r\n")
        assert read_response(sock).startswith(b"HTTP/1.1 200 OK")
        # A large body and the next request in one write: the body is not counted as a head.
        body = json.dumps([run_event("pipelined")] * 300).encode()
        post = (
            b"POST /api/v1/lineage/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        sock.sendall(post + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(10)
        received = b""
        while received.count(b"HTTP/1.1 ") < 2 or not complete(received.rpartition(b"HTTP/1.1 ")[2]):
            received += sock.recv(65536)
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", received)
    assert statuses[0] in (b"200", b"201"), received[:500]  # 200: a batch of duplicates
    assert statuses[1] == b"200", received[:500]


async def test_a_subscription_outlives_the_read_deadline(server):
    ws_url = server.url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(ws_url, subprotocols=["graphql-transport-ws"]) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        await asyncio.sleep(READ_TIMEOUT_S + 1)
        await ws.send(json.dumps({"type": "ping"}))
        assert json.loads(await ws.recv())["type"] == "pong"


def unread_response(server: HeadwaterServer, events: int, receive_buffer: int = 4096) -> socket.socket:
    """A connection asking for a page of ``events`` stored events (about 4.5 KB each), larger than
    the kernel's buffers hold, with a small receive buffer: the rest waits in the server's send
    buffer until the client reads."""
    sock = connect(server)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.send(b"GET /api/v1/events/lineage?limit=%d HTTP/1.1\r\nHost: x\r\n\r\n" % events)
    return sock


@pytest.fixture(scope="module")
def big_responses(server: HeadwaterServer) -> None:
    """Stored events enough for a page of about 4 MB."""
    events = [run_event(f"job_{i}", inputs=[f"in_{i}"], outputs=[f"out_{i}"]) for i in range(1000)]
    for event in events:
        event["run"]["facets"] = {"padding": {"text": "x" * 4000}}
    response = httpx.post(server.url + "/api/v1/lineage/batch", json=events, timeout=60)
    assert response.json()["status"] == "success", response.text


def test_a_response_its_client_reads_none_of_is_dropped_with_what_it_holds(server, big_responses):
    with unread_response(server, 1000) as sock:
        time.sleep(0.5)
        sock.settimeout(0.1)
        started = time.monotonic()
        # Unread, then read once the server has given up: the connection ends short of the body.
        time.sleep(STALL_S + 1.5)
        received = b""
        with contextlib.suppress(OSError):
            while data := sock.recv(1 << 20):
                received += data
        assert time.monotonic() - started < STALL_S + 5
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    length = content_length(head)
    assert length > 3_000_000
    assert len(body) < length


# A response far larger than the kernel's socket buffers hold (a few MB), so that most of it waits
# in the server's transport, paused, for as long as the client takes to read it.
LARGE = 32 * 1024 * 1024


async def large_body(scope, receive, send):  # type: ignore[no-untyped-def]
    """An ASGI app answering every request with LARGE bytes, sent at once as an app's whole body is."""
    if scope["type"] != "http":
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-length", str(LARGE).encode())],
        }
    )
    await send({"type": "http.response.body", "body": b"x" * LARGE})


class QuickStalls(DeadlineProtocol):
    """serve's protocol with the stall limit of this module."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stall_s = STALL_S


@pytest.fixture(scope="module")
def large_server() -> Iterator[str]:
    """uvicorn with serve's protocol, in a thread, answering LARGE bytes to anything."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(large_body, host="127.0.0.1", port=port, http=QuickStalls, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_a_client_reading_slowly_gets_its_whole_response(large_server):
    host, port = large_server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        sock.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        received = 0
        started = time.monotonic()
        # A few MB a second: the whole takes several times the stall limit, the server's transport
        # paused all along, and the client never stops reading for as long as the limit.
        while received < LARGE:
            data = sock.recv(1 << 20)
            if not data:
                break
            received += len(data)
            time.sleep(0.02)
        took = time.monotonic() - started
    assert received >= LARGE, f"dropped after {received:,} bytes and {took:.1f} s"
    assert took > 2 * STALL_S


def test_a_client_reading_a_trickle_is_dropped_with_what_it_holds(large_server):
    # 10 KB a second, under the floor of 32 KiB a second: the 32 MB would take nearly an hour, held
    # in the server's memory all along. Past the stall limit the client reads as fast as it can:
    # what it then gets is what the kernel's buffers held when the server dropped the rest.
    host, port = large_server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        received = 0
        trickle_until = time.monotonic() + STALL_S + 2
        with contextlib.suppress(OSError):
            while time.monotonic() < trickle_until and (data := sock.recv(1024)):
                received += len(data)
                time.sleep(0.1)
            while data := sock.recv(1 << 20):
                received += len(data)
    assert received < LARGE / 2
