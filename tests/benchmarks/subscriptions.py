"""Benchmark: time from an ingest's 201 to the change reaching subscribers on another replica.

Starts two server processes on a fresh database (replica A takes the events, replica B serves
the websocket subscribers), opens N lineageChanges subscriptions on B, posts START events to A one
at a time and records, for every (subscriber, event), the time from A's 201 to the RUN_STATE_CHANGED
change of that run arriving. Prints the median, p95 and max.

    python tests/benchmarks/subscriptions.py [--subscribers 100] [--events 50] [--gap-ms 100]

With --stalled N it measures instead what subscribers that never read cost ingest: one server,
events posted one at a time for --seconds with no subscriber, then with N subscribers of every
change that never read their sockets (raw sockets, 4 KiB receive buffers), until the server has
disconnected them all (HEADWATER_SUBSCRIBER_STALL_S), then again; it prints events/s per phase and
per 2 s window, and the server's memory.

    python tests/benchmarks/subscriptions.py --stalled 200 [--seconds 20]

With --flood N it measures what one websocket sending N subscribe messages as fast as it can costs
everyone else: one server, events posted one at a time and /healthz asked every 50 ms for
--seconds alone, then for --seconds while the flood runs; it prints the subscribe messages the
server answered per second, its CPU, the events/s and the slowest /healthz of each phase.

    python tests/benchmarks/subscriptions.py --flood 200000 [--seconds 20] [--flood-bytes N]

The database server is $HEADWATER_BENCH_SERVER_URL, else the local one (postgresql://postgres@
127.0.0.1:5432/postgres); the benchmark database is created and dropped. A negative latency means
the change reached the subscriber before the client had read the 201.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.databases import SERVER_URL, database_url
from tests.feed.stalled_clients import stalled_subscriber
from tests.server import start_uvicorn

from headwater.db.migrate import migrate

SUBSCRIPTION = """subscription($filter: LineageChangeFilter) {
  lineageChanges(filter: $filter) { cursor kind nodeId details }
}"""


def start_replica(url: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    return start_uvicorn(url, "--ws-max-queue", "1024", log=log)


async def wait_ready(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient() as http:
        while time.monotonic() < deadline:
            try:
                if (await http.get(f"{url}/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
    raise TimeoutError(url)


class Subscriber:
    """One websocket subscription; records when each run's state change arrived."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        self.ready = asyncio.Event()

    async def run(self, url: str, stop: asyncio.Event) -> None:
        ws_url = url.replace("http://", "ws://") + "/graphql"
        async with websockets.connect(
            ws_url, subprotocols=["graphql-transport-ws"], max_queue=None
        ) as ws:
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            await ws.send(
                json.dumps(
                    {
                        "id": "1",
                        "type": "subscribe",
                        "payload": {
                            "query": SUBSCRIPTION,
                            "variables": {"filter": {"kinds": ["RUN_STATE_CHANGED"]}},
                        },
                    }
                )
            )
            self.ready.set()
            while not stop.is_set():
                try:
                    raw = await asyncio.wait_for(ws.recv(), 0.5)
                except TimeoutError:
                    continue
                now = time.perf_counter()
                message = json.loads(raw)
                if message["type"] == "ping":
                    await ws.send(json.dumps({"type": "pong"}))
                elif message["type"] == "next":
                    change = message["payload"]["data"]["lineageChanges"]
                    self.arrivals.setdefault(change["details"]["runId"], now)


def start_event(run_id: str) -> dict[str, object]:
    return {
        "eventType": "START",
        "eventTime": "2026-01-01T00:00:00Z",
        "producer": "https://example.com/headwater-bench",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": run_id},
        "job": {"namespace": "bench", "name": "job"},
        "inputs": [{"namespace": "bench", "name": "source"}],
        "outputs": [{"namespace": "bench", "name": "target"}],
    }


async def measure(writer: str, reader: str, subscribers: int, events: int, gap: float) -> list[float]:
    subs = [Subscriber() for _ in range(subscribers)]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(s.run(reader, stop)) for s in subs]
    await asyncio.wait_for(asyncio.gather(*(s.ready.wait() for s in subs)), 60)
    await asyncio.sleep(1.0)  # let every subscribe message reach the server
    sent: dict[str, float] = {}
    async with httpx.AsyncClient(base_url=writer) as http:
        for i in range(events + 3):
            run_id = str(uuid.uuid4())
            response = await http.post("/api/v1/lineage", json=start_event(run_id))
            ok_at = time.perf_counter()
            assert response.status_code == 201, response.text
            if i >= 3:  # the first few warm up both servers
                sent[run_id] = ok_at
            await asyncio.sleep(gap)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(set(sent) <= set(s.arrivals) for s in subs):
        await asyncio.sleep(0.1)
    stop.set()
    await asyncio.gather(*tasks)
    missing = sum(len(set(sent) - set(s.arrivals)) for s in subs)
    if missing:
        print(f"warning: {missing} (subscriber, event) pairs never arrived")
    return [(s.arrivals[r] - t) * 1000 for s in subs for r, t in sent.items() if r in s.arrivals]


async def post_windows(
    url: str, seconds: float, until: asyncio.Event | None = None
) -> tuple[list[float], int]:
    """Events posted one at a time for ``seconds`` (or until ``until`` is set, then 2 s more):
    events/s in each 2 s window, and how many were posted."""
    rates: list[float] = []
    posted = 0
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        started = window = time.perf_counter()
        count = 0
        done_at = None
        while True:
            now = time.perf_counter()
            if until is not None and until.is_set() and done_at is None:
                done_at = now
            if (until is None and now - started >= seconds) or (done_at and now - done_at >= 2):
                break
            response = await http.post("/api/v1/lineage", json=start_event(str(uuid.uuid4())))
            assert response.status_code == 201, response.text
            count += 1
            posted += 1
            if time.perf_counter() - window >= 2:
                rates.append(count / (time.perf_counter() - window))
                window, count = time.perf_counter(), 0
    return rates, posted


def cpu_seconds(process: psutil.Process) -> float:
    """The server's user plus system CPU time: unlike a rate, barely moved by other work."""
    times = process.cpu_times()
    return times.user + times.system


async def measure_stalled(url: str, log: Path, pid: int, stalled: int, seconds: float) -> None:
    process = psutil.Process(pid)
    await post_windows(url, 3)  # warm-up
    cpu = cpu_seconds(process)
    alone, posted_alone = await post_windows(url, seconds)
    cpu_per_event = (cpu_seconds(process) - cpu) / posted_alone
    rss_before = process.memory_info().rss
    socks = [await asyncio.to_thread(stalled_subscriber, url) for _ in range(stalled)]
    ports = {sock.getsockname()[1] for sock in socks}
    gone = asyncio.Event()

    async def watch() -> None:
        # Until the server holds none of their connections: however each was ended (the stall
        # guard, or uvicorn's own ping timeout when the buffers take long to fill).
        while any(c.raddr and c.raddr.port in ports for c in process.net_connections("tcp")):
            await asyncio.sleep(0.2)
        gone.set()

    watcher = asyncio.create_task(watch())
    started, cpu = time.perf_counter(), cpu_seconds(process)
    during, posted_during = await post_windows(url, 0, until=gone)
    took = time.perf_counter() - started
    stalled_cpu = cpu_seconds(process) - cpu - posted_during * cpu_per_event
    await watcher
    after, _ = await post_windows(url, seconds)
    rss_after = process.memory_info().rss
    for sock in socks:
        sock.close()

    def mean(rates: list[float]) -> float:
        return statistics.mean(rates) if rates else 0.0

    print(
        f"ingest, events posted one at a time: {mean(alone):.1f} events/s with no subscriber, "
        f"server CPU {cpu_per_event * 1000:.1f} ms per event"
    )
    print(
        f"with {stalled} stalled subscribers: {mean(during):.1f} events/s over the {took:.0f} s until "
        f"all were disconnected (2 s windows: {', '.join(f'{r:.1f}' for r in during)})"
    )
    print(f"server CPU for the stalled subscribers beyond the events: {stalled_cpu:.1f} s")
    print(f"after they were disconnected: {mean(after):.1f} events/s")
    print(f"disconnected for a stalled send: {log.read_text().count('read nothing')} of {stalled}")
    print(f"server RSS {rss_before / 1e6:.0f} MB before them, {rss_after / 1e6:.0f} MB after")


async def slowest_health(url: str, stop: asyncio.Event) -> float:
    """The slowest /healthz answer, asked every 50 ms until ``stop``."""
    slowest = 0.0
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        while not stop.is_set():
            started = time.perf_counter()
            assert (await http.get("/healthz")).status_code == 200
            slowest = max(slowest, time.perf_counter() - started)
            await asyncio.sleep(0.05)
    return slowest


async def flood(url: str, messages: int, seconds: float, padding: int) -> int:
    """One websocket sending ``messages`` subscribe messages (each with ``padding`` bytes more in an
    unused variable) for ``seconds``, reading what comes back; returns how many subscriptions were
    answered (accepted or refused)."""
    ws_url = url.replace("http://", "ws://") + "/graphql"
    answered = 0
    async with websockets.connect(
        ws_url, subprotocols=["graphql-transport-ws"], max_queue=None, compression=None
    ) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"

        async def send() -> None:
            # Subscriptions to changes that never come: the cost measured is the messages'.
            nothing = {"filter": {"namespaces": ["nothing"]}, "padding": "x" * padding}
            body = {"type": "subscribe", "payload": {"query": SUBSCRIPTION, "variables": nothing}}
            for i in range(messages):
                await ws.send(json.dumps({**body, "id": str(i)}))

        async def read() -> None:
            nonlocal answered
            async for raw in ws:
                message = json.loads(raw)
                if message["type"] in ("complete", "error"):
                    answered += 1
                elif message["type"] == "ping":
                    await ws.send(json.dumps({"type": "pong"}))

        tasks = [asyncio.create_task(send()), asyncio.create_task(read())]
        await asyncio.sleep(seconds)
        for task in tasks:
            task.cancel()
    return answered


def flood_process(url: str, messages: int, seconds: float, padding: int, answered: Any) -> None:
    """``flood`` in a process of its own, so that its sending does not slow the measuring client."""
    answered.value = asyncio.run(flood(url, messages, seconds, padding))


async def measure_flood(url: str, pid: int, messages: int, seconds: float, padding: int) -> None:
    process = psutil.Process(pid)
    await post_windows(url, 3)  # warm-up

    async def phase(flooding: bool) -> tuple[float, float, float, int]:
        stop, answered = asyncio.Event(), multiprocessing.Value("q", 0)
        health = asyncio.create_task(slowest_health(url, stop))
        flooder = multiprocessing.Process(
            target=flood_process, args=(url, messages, seconds, padding, answered)
        )
        if flooding:
            flooder.start()
        cpu, started = cpu_seconds(process), time.perf_counter()
        _, posted = await post_windows(url, seconds)
        took = time.perf_counter() - started
        stop.set()
        used = cpu_seconds(process) - cpu
        slowest = await health
        if flooding:
            await asyncio.to_thread(flooder.join)
        return posted / took, used / took, slowest, round(answered.value / took)

    alone, cpu_alone, health_alone, _ = await phase(False)
    during, cpu_during, health_during, answered = await phase(True)
    print(
        f"alone: {alone:.1f} events/s, server CPU {cpu_alone:.2f} s/s, slowest /healthz {health_alone * 1000:.0f} ms"
    )
    print(
        f"one websocket sending {messages:,} subscribe messages of {padding + 150:,} bytes: "
        f"{answered:,} answered per second; "
        f"{during:.1f} events/s, server CPU {cpu_during:.2f} s/s, slowest /healthz {health_during * 1000:.0f} ms"
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--gap-ms", type=float, default=100)
    parser.add_argument("--stalled", type=int, default=0, help="measure stalled subscribers instead")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--flood", type=int, default=0, help="measure a flood of subscribe messages")
    parser.add_argument("--flood-bytes", type=int, default=0, help="padding in each flood message")
    args = parser.parse_args()

    name = f"headwater_subs_bench_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(SERVER_URL)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = database_url(name)
    replicas: list[subprocess.Popen[bytes]] = []
    try:
        conn = await asyncpg.connect(url)
        await migrate(conn)
        await conn.close()
        logs = Path(tempfile.mkdtemp(prefix="headwater-bench-"))
        if args.flood:
            a, writer = start_replica(url, logs / "a.log")
            replicas = [a]
            await wait_ready(writer)
            await measure_flood(writer, a.pid, args.flood, args.seconds, args.flood_bytes)
            return 0
        if args.stalled:
            a, writer = start_replica(url, logs / "a.log")
            replicas = [a]
            await wait_ready(writer)
            await measure_stalled(writer, logs / "a.log", a.pid, args.stalled, args.seconds)
            return 0
        (a, writer), (b, reader) = (
            start_replica(url, logs / "a.log"),
            start_replica(url, logs / "b.log"),
        )
        replicas = [a, b]
        await wait_ready(writer)
        await wait_ready(reader)
        latencies = sorted(
            await measure(writer, reader, args.subscribers, args.events, args.gap_ms / 1000)
        )
        p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
        print(f"{args.subscribers} subscribers on replica B, {args.events} events posted to replica A")
        print(
            f"ingest 201 -> change at subscriber: median {statistics.median(latencies):.1f} ms, "
            f"p95 {p95:.1f} ms, max {latencies[-1]:.1f} ms ({len(latencies)} deliveries)"
        )
    finally:
        for process in replicas:
            process.terminate()
            process.wait(timeout=10)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
