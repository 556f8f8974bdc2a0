"""graphql-transport-ws clients over raw sockets, for tests of subscribers that never read.

A websockets client reads its socket in the background whether the test reads messages or not;
these do not. Each subscribes, then leaves its socket alone: a small receive buffer fills, then the
server's send buffer, as with a client that hangs or sits behind a dead network.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
from typing import Any
from urllib.parse import urlsplit

CHANGES = "subscription { lineageChanges { cursor kind nodeId nodeType namespace at details } }"


def _frame(payload: dict[str, Any], opcode: int = 0x1) -> bytes:
    """A client frame (masked, as clients must)."""
    data = json.dumps(payload).encode()
    mask = os.urandom(4)
    size = len(data)
    if size < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
    elif size < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = sock.recv(1)
        if not chunk:
            raise ConnectionError(f"closed before {marker!r}: {data!r}")
        data += chunk
    return data


def _read_frame(sock: socket.socket) -> tuple[int, bytes]:
    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed in a frame")
            data += chunk
        return data

    first, second = exactly(2)
    size = second & 0x7F
    if size == 126:
        size = struct.unpack("!H", exactly(2))[0]
    elif size == 127:
        size = struct.unpack("!Q", exactly(8))[0]
    return first & 0x0F, exactly(size)


def stalled_subscriber(url: str, api_key: str | None = None, query: str = CHANGES) -> socket.socket:
    """A socket subscribed to ``query`` that will not be read again (a 4 KiB receive buffer)."""
    parts = urlsplit(url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(30)
    sock.connect((parts.hostname, parts.port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /graphql HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            "Sec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n"
        ).encode()
    )
    head = _read_until(sock, b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101"), head
    init: dict[str, Any] = {"type": "connection_init", "payload": {}}
    if api_key:
        init["payload"] = {"Authorization": f"Bearer {api_key}"}
    sock.sendall(_frame(init))
    opcode, data = _read_frame(sock)
    assert opcode == 0x1, data
    assert json.loads(data)["type"] == "connection_ack", data
    sock.sendall(_frame({"id": "1", "type": "subscribe", "payload": {"query": query}}))
    return sock


def read_messages(sock: socket.socket, limit: int = 100_000) -> list[dict[str, Any] | int]:
    """What a stalled socket finally reads: its messages, then the close code (an int) if closed."""
    out: list[dict[str, Any] | int] = []
    sock.settimeout(10)
    try:
        while len(out) < limit:
            opcode, data = _read_frame(sock)
            if opcode == 0x8:
                out.append(struct.unpack("!H", data[:2])[0] if len(data) >= 2 else 1005)
                break
            if opcode == 0x1:
                out.append(json.loads(data))
    except (ConnectionError, TimeoutError, OSError):
        pass
    return out
