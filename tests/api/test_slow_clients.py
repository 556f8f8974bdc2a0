"""Clients that open connections and send nothing, or a request a byte at a time, against a real
`headwater serve`: each is closed within its deadline (a 408 once a request has begun), everyone
else is served meanwhile, and a websocket subscription is not bound by them."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import websockets

from tests.pg import migrated_database
from tests.server import HeadwaterServer, running_headwater

pytestmark = pytest.mark.db

READ_TIMEOUT_S = 1
# uvicorn's keep-alive timeout, which closes a connection idle before its first request too.
IDLE_TIMEOUT_S = 5


@pytest.fixture(scope="module")
async def slow_database(pg_server: str) -> AsyncIterator[str]:
    async with migrated_database(pg_server, "headwater_slow_clients") as url:
        yield url


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, slow_database: str) -> Iterator[HeadwaterServer]:
    with running_headwater(
        slow_database,
        tmp_path_factory.mktemp("slow") / "serve.log",
        secured=False,
        env={"HEADWATER_REQUEST_READ_TIMEOUT_S": str(READ_TIMEOUT_S)},
    ) as running:
        yield running


def connect(server: HeadwaterServer) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def until_closed(sock: socket.socket, drip: bytes = b"", limit: float = 30) -> tuple[float, bytes]:
    """Seconds until the server closes ``sock`` and what it sent, sending ``drip`` every 0.2 s."""
    started = time.monotonic()
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
    while b"\r\n\r\n" not in received:
        received += sock.recv(4096)
    head, _, body = received.partition(b"\r\n\r\n")
    length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:"))[15:])
    while len(body) < length:
        body += sock.recv(4096)
    return head + b"\r\n\r\n" + body


def assert_timed_out(answer: bytes) -> None:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 Request Timeout"), answer
    assert json.loads(body)["code"] == "request_timeout"


def test_headers_sent_a_line_at_a_time_get_a_408_at_the_deadline(server):
    with connect(server) as sock:
        sock.send(b"GET /healthz HTTP/1.1\r\n")
        took, answer = until_closed(sock, drip=b"X-Slow: 1\r\n")
    assert READ_TIMEOUT_S <= took < READ_TIMEOUT_S + 2
    assert_timed_out(answer)


def test_a_body_sent_a_byte_at_a_time_gets_a_408_and_nothing_is_stored(server):
    with connect(server) as sock:
        sock.send(
            b"POST /api/v1/lineage HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n{"
        )
        took, answer = until_closed(sock, drip=b" ")
    assert READ_TIMEOUT_S <= took < READ_TIMEOUT_S + 2
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


async def test_a_subscription_outlives_the_read_deadline(server):
    ws_url = server.url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(ws_url, subprotocols=["graphql-transport-ws"]) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        await asyncio.sleep(READ_TIMEOUT_S + 1)
        await ws.send(json.dumps({"type": "ping"}))
        assert json.loads(await ws.recv())["type"] == "pong"
