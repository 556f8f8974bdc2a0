"""Benchmark: what many clients reading large lineage answers cost everyone else.

On the lineage benchmark's graph (tests/benchmarks/lineage.py: about 200,000 nodes, built once in
the database `headwater_bench` and reused), one `headwater serve` process with its default pool;
N clients read the lineage of a hub table at depth 100 (10,000 nodes, a 13.8 MB answer) in a loop
for --seconds,
while one prober posts an event and asks /healthz, one after the other, every 50 ms. Prints the
reads answered (by status), and the prober's posts and /healthz: how many, p50, p99 and the slowest.
Each value of --turns is a run with HEADWATER_LINEAGE_READS_AT_ONCE set to it, side by side.

    python tests/benchmarks/readers.py [--readers 60] [--seconds 15] [--turns 1000,2]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.lineage import create_database
from tests.factories import run_event
from tests.server import running_headwater

HUB = "/api/v1/lineage?nodeId=dataset:postgres://warehouse:5432:dim.hub_0&depth=100"


def read_in_loop(url: str, readers: int, until: float, out: Any) -> None:
    async def run() -> dict[int, int]:
        statuses: dict[int, int] = {}
        limits = httpx.Limits(max_connections=readers)
        async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

            async def reader() -> None:
                while time.monotonic() < until:
                    status = (await client.get(HUB)).status_code
                    statuses[status] = statuses.get(status, 0) + 1

            await asyncio.gather(*(reader() for _ in range(readers)))
        return statuses

    out.put(("reads", asyncio.run(run())))


def probe(url: str, until: float, out: Any) -> None:
    posts: list[tuple[float, int]] = []
    health: list[float] = []
    with httpx.Client(base_url=url, timeout=60) as client:
        i = 0
        while time.monotonic() < until:
            started = time.monotonic()
            event = run_event(f"probe_{i % 7}", inputs=["in"], outputs=[f"out_{i % 7}"])
            status = client.post("/api/v1/lineage", json=event).status_code
            posts.append((time.monotonic() - started, status))
            started = time.monotonic()
            client.get("/healthz")
            health.append(time.monotonic() - started)
            i += 1
            time.sleep(0.05)
    out.put(("probe", (posts, health)))


def figures(values: list[float]) -> str:
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000

    return f"p50 {at(0.5):.0f} ms, p99 {at(0.99):.0f} ms, max {ordered[-1] * 1000:.0f} ms"


def run(
    url: str, readers: int, seconds: float
) -> tuple[dict[int, int], list[tuple[float, int]], list[float]]:
    until = time.monotonic() + seconds
    queue: Any = mp.Queue()
    processes = [
        mp.Process(target=read_in_loop, args=(url, readers, until, queue)),
        mp.Process(target=probe, args=(url, until, queue)),
    ]
    for p in processes:
        p.start()
    results = dict(queue.get() for _ in processes)
    for p in processes:
        p.join()
    posts, health = results["probe"]
    return results["reads"], posts, health


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--readers", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--turns", default="1000,2", help="HEADWATER_LINEAGE_READS_AT_ONCE of each run")
    args = parser.parse_args()
    database_url = asyncio.run(create_database(rebuild=False))
    rows = []
    for turns in args.turns.split(","):
        with (
            tempfile.TemporaryDirectory() as tmp,
            running_headwater(
                database_url,
                Path(tmp) / "server.log",
                secured=False,
                # serve's own pool, not the small one of the tests' servers.
                env={"HEADWATER_LINEAGE_READS_AT_ONCE": turns, "HEADWATER_POOL_MAX_SIZE": "10"},
            ) as server,
        ):
            reads, posts, health = run(server.url, args.readers, args.seconds)
        statuses = {s for _, s in posts}
        rows.append(
            f"| {turns} | {', '.join(f'{n} x {s}' for s, n in sorted(reads.items()))} "
            f"| {len(posts)} ({', '.join(map(str, sorted(statuses)))}): {figures([t for t, _ in posts])} "
            f"| {figures(health)} |"
        )
        print(rows[-1], flush=True)
    print(f"\n{args.readers} readers of a 13.8 MB lineage answer, {args.seconds:g} s each run")
    print("| lineage reads at once | reads answered | posts (statuses): latency | /healthz |")
    print("|---:|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
