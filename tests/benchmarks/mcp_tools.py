"""MCP benchmark: tool calls over streamable HTTP on the 5k-event graph of the ingest benchmark.

Stores the ingest benchmark's 5,000 events (250 Spark SQL jobs over 400 tables of 6 columns, with
column lineage) through `/api/v1/lineage/batch` into a fresh database, starts `headwater serve` on
it, and calls each tool ``--runs`` times, one call after the other, with the SDK's own client in one
session. The roots are the dataset with the most downstream nodes within depth 10, and its first
column. Printed per tool: p50 and p99 of a call as the client sees it (JSON-RPC over HTTP included)
and the size of the answer's JSON.

Run: ``python tests/benchmarks/mcp_tools.py [--runs 200]``. Needs PostgreSQL at
$HEADWATER_BENCH_SERVER_URL (default postgresql://postgres@127.0.0.1:5432/postgres); creates and
drops headwater_bench_mcp.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import asyncpg
import httpx
import httpx2
from ingest import _start_server, ingest_events
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from tests.benchmarks.databases import SERVER_URL, recreate_database

DATABASE = "headwater_bench_mcp"
TARGET_MS = 20.0


async def _store(port: int) -> None:
    events = ingest_events()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
        for i in range(0, len(events), 500):
            response = await http.post("/api/v1/lineage/batch", json=events[i : i + 500])
            assert response.status_code in (200, 201), response.text


async def _widest_root(port: int) -> str:
    """The dataset with the most downstream nodes within depth 10."""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
        hits = (
            await http.get("/api/v1/search", params={"q": "t", "filter": "DATASET", "limit": 100})
        ).json()["results"]
        sizes = {}
        for hit in hits:
            graph = await http.get(
                "/api/v1/lineage",
                params={"nodeId": hit["nodeId"], "depth": 10, "direction": "DOWNSTREAM"},
            )
            sizes[hit["nodeId"]] = len(graph.json()["graph"])
    return max(sizes, key=lambda k: sizes[k])


def _shown(answer: dict[str, Any]) -> str:
    """What an answer holds: graph nodes (and whether the cap cut them), or items of the total."""
    if "nodes" in answer:
        return f"{len(answer['nodes'])} nodes" + (", truncated" if answer["truncated"] else "")
    for items in ("impacted", "findings", "results"):
        if items in answer:
            return f"{len(answer[items])} of {answer['total']}"
    return ""


async def _measure(port: int, runs: int) -> list[tuple[str, float, float, int, str]]:
    root = await _widest_root(port)
    column = "datasetField:" + root.removeprefix("dataset:") + ":c1"
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("lineage", "lineage depth 10, BOTH", {"node_id": root, "depth": 10}),
        ("lineage", "lineage depth 10, column", {"node_id": column, "depth": 10}),
        ("impact_of_change", "impact_of_change, column", {"node_id": column}),
        ("impact_of_change", "impact_of_change, dataset", {"node_id": root}),
        ("root_cause", "root_cause, dataset", {"node_id": root, "since": "2020-01-01T00:00:00Z"}),
        ("search", "search 't1'", {"text": "t1"}),
        ("get_dataset", "get_dataset", {"node_id": root}),
        ("sql_lineage", "sql_lineage", {"sql": "INSERT INTO a SELECT x, sum(y) FROM b GROUP BY x"}),
    ]
    rows = []
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for tool, label, arguments in calls:
            times = []
            size, shown = 0, ""
            for _ in range(runs + 5):  # the first calls warm the document cache and the plans
                started = time.perf_counter()
                result = await session.call_tool(tool, arguments)
                times.append((time.perf_counter() - started) * 1000)
                assert not result.is_error, result.content
                answer = result.structured_content
                size = len(json.dumps(answer, separators=(",", ":")))
                shown = _shown(answer)
            times = sorted(times[5:])
            p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
            rows.append((label, statistics.median(times), p99, size, shown))
    return rows


async def _main(runs: int) -> int:
    admin = await asyncpg.connect(SERVER_URL)
    url = await recreate_database(admin, DATABASE)
    server, port = _start_server(None, url)
    try:
        await _store(port)
        rows = await _measure(port, runs)
    finally:
        server.terminate()
        server.wait(timeout=30)
        await admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        await admin.close()
    print(f"| tool call | p50 ms | p99 ms | answer bytes | holds |  ({runs} calls each)")
    print("| --- | ---: | ---: | ---: | --- |")
    for label, p50, p99, size, shown in rows:
        print(f"| {label} | {p50:.1f} | {p99:.1f} | {size:,} | {shown} |")
    missed = [row[0] for row in rows[:3] if row[1] > TARGET_MS]
    print(
        f"target p50 <= {TARGET_MS:.0f} ms (lineage depth 10, impact_of_change on a column): "
        + ("met" if not missed else f"missed by {', '.join(missed)}")
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=200, help="calls per tool (default 200)")
    return asyncio.run(_main(parser.parse_args().runs))


if __name__ == "__main__":
    raise SystemExit(main())
