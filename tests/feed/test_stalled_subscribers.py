"""Subscribers that never read their socket, against a real `headwater serve`: they are
disconnected once their buffers are full and a send has waited HEADWATER_SUBSCRIBER_STALL_S, a
reading subscriber meanwhile gets every change, and the server's memory and CPU stay bounded."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable

import httpx
import psutil
import pytest
import websockets

from tests.factories import run_event
from tests.feed.stalled_clients import read_messages, stalled_subscriber
from tests.server import HeadwaterServer, server_of_its_own

pytestmark = [pytest.mark.db, pytest.mark.slow]

STALL_S = 3
STALLED = 200


server = server_of_its_own("headwater_subs_stalled", env={"HEADWATER_SUBSCRIBER_STALL_S": str(STALL_S)})


def wide_event(tag: str, i: int) -> dict:
    """A run reading 20 datasets: its changes carry every edge, a few kB each."""
    return run_event(
        f"{tag}_{i}", inputs=[f"{tag}_in_{i}_{k}" for k in range(20)], outputs=[f"{tag}_out_{i}"]
    )


def cpu_seconds(process: psutil.Process) -> float:
    """User plus system CPU time the process has used: unlike a rate, barely moved by other work
    on a shared machine."""
    times = process.cpu_times()
    return times.user + times.system


async def post_for(server: HeadwaterServer, tag: str, seconds: float) -> tuple[int, float]:
    """Events posted one at a time for about ``seconds``: how many, and the rate."""
    headers = {"Authorization": f"Bearer {server.api_key}"}
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as http:
        started, n = time.perf_counter(), 0
        while time.perf_counter() - started < seconds:
            response = await http.post("/api/v1/lineage", json=wide_event(tag, n))
            assert response.status_code == 201, response.text
            n += 1
        return n, n / (time.perf_counter() - started)


async def post_until(
    server: HeadwaterServer, tag: str, done: Callable[[], bool], timeout: float
) -> tuple[int, float]:
    """Events posted one at a time until ``done()``, asked every half second: how many, and the
    rate; fails after ``timeout`` seconds."""
    headers = {"Authorization": f"Bearer {server.api_key}"}
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as http:
        started = checked = time.perf_counter()
        n = 0
        while True:
            response = await http.post("/api/v1/lineage", json=wide_event(tag, n))
            assert response.status_code == 201, response.text
            n += 1
            now = time.perf_counter()
            if now - checked >= 0.5:
                checked = now
                if done():
                    return n, n / (now - started)
                assert now - started < timeout, f"{tag}: not done after {timeout} s"


async def best_rate(server: HeadwaterServer, tag: str, at_least: float) -> float:
    """The best rate of three 2-second windows, or of up to six while it stays under ``at_least``:
    on a shared machine other work only ever lowers a rate (seen: 25 events/s in each of three
    windows against 52 alone, while the other test process ran)."""
    best = 0.0
    for i in range(6):
        best = max(best, (await post_for(server, f"{tag}{i}", 2))[1])
        if i >= 2 and best >= at_least:
            break
    return best


async def test_subscribers_that_never_read_are_disconnected_and_cost_bounded_memory(server):
    process = psutil.Process(server.pid)
    await post_for(server, "warmup", 2)
    cpu = cpu_seconds(process)
    posted_alone, alone = await post_for(server, "alone", 5)
    cpu_per_event = (cpu_seconds(process) - cpu) / posted_alone
    rss_before = process.memory_info().rss
    fds_before = process.num_fds()
    stalled = [
        await asyncio.to_thread(stalled_subscriber, server.url, server.api_key) for _ in range(STALLED)
    ]
    # One of them reads again as soon as the server logs its disconnection: it gets what was
    # buffered, then the close frame.
    late = stalled.pop()
    late_told: list[dict | int] = []

    def read_when_disconnected() -> None:
        mark = f"127.0.0.1:{late.getsockname()[1]} read nothing"
        deadline = time.monotonic() + 60
        while mark not in server.log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        late_told.extend(read_messages(late))

    late_reader = threading.Thread(target=read_when_disconnected)
    late_reader.start()
    query = "subscription { lineageChanges { cursor kind nodeId } }"
    ws_url = server.url.replace("http://", "ws://") + "/graphql"
    # Once it stops reading, at the end, the server's answer to its close comes behind changes it
    # will not read: it waits only a second for it (websockets' default is 10 s).
    async with websockets.connect(
        ws_url, subprotocols=["graphql-transport-ws"], close_timeout=1
    ) as reader:
        await reader.send(json.dumps({"type": "connection_init", "payload": {"apiKey": server.api_key}}))
        assert json.loads(await reader.recv())["type"] == "connection_ack"
        await reader.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query}}))
        # It reads as changes come (a reader that waited until the end would fill its socket's
        # buffers and be disconnected like the stalled ones once ingest outpaced them).
        runs: set[str] = set()

        async def read_changes() -> None:
            while True:
                message = json.loads(await reader.recv())
                assert message["type"] == "next", message
                node = message["payload"]["data"]["lineageChanges"]["nodeId"]
                if "during_" in node and node.startswith("job:"):
                    runs.add(node)

        reading = asyncio.create_task(read_changes())
        await asyncio.sleep(0.5)
        cpu = cpu_seconds(process)
        # Until every stalled subscriber is disconnected (their buffers fill within a second or
        # two, then a send waits STALL_S), then STALL_S more: those that do not read again are
        # aborted, and their subscriptions ended, STALL_S after their disconnection.
        sent, during = await post_until(
            server, "during", lambda: server.log.read_text().count("read nothing") >= STALLED, 60
        )
        sent += (await post_for(server, "during_tail", STALL_S + 1))[0]
        # What the stalled subscribers cost the server beyond the events themselves: sending what
        # fills their buffers, then disconnecting them.
        stalled_cpu = cpu_seconds(process) - cpu - sent * cpu_per_event
        after = await best_rate(server, "after", at_least=0.5 * alone)
        rss_after = process.memory_info().rss
        # The reading subscriber got a change for every run posted meanwhile, in time.
        deadline = time.monotonic() + 10
        while len(runs) < sent and not reading.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        if reading.done():
            reading.result()  # what ended it
        reading.cancel()
        assert len(runs) == sent, (len(runs), sent)
    for sock in stalled:
        # What got through before the reset: changes only, no more than the buffers held.
        messages = read_messages(sock)
        assert all(isinstance(m, dict) and m["type"] == "next" for m in messages), messages[-1:]
        assert len(messages) < sent * 10
        sock.close()
    late_reader.join()
    late.close()
    assert late_told[-1] == 1013, late_told[-3:]
    assert all(isinstance(m, dict) and m["type"] == "next" for m in late_told[:-1])
    log = server.log.read_text()
    print(
        f"ingest alone {alone:.1f} events/s, with {STALLED} stalled subscribers {during:.1f}, "
        f"after they were disconnected {after:.1f}; server CPU {cpu_per_event * 1000:.0f} ms per event, "
        f"{stalled_cpu:.1f} s more for the stalled subscribers; "
        f"server RSS +{(rss_after - rss_before) / 1e6:.0f} MB; {log.count('read nothing')} disconnected"
    )
    assert log.count("read nothing") == STALLED
    # Their connections are gone, not held half-closed.
    assert process.num_fds() <= fds_before + 2, (fds_before, process.num_fds())
    assert after >= 0.5 * alone, (alone, during, after)
    # Measured on the machine the README describes: 1.7 to 2.4 s (some 8 s, and 503s from ingest
    # starved of the event loop, when each subscriber executed its selection on every change).
    assert stalled_cpu < STALLED * 0.025, (cpu_per_event, stalled_cpu)
    assert rss_after - rss_before < 100e6
