"""A depth-100 GraphQL lineage on a 22,800-node graph against a real server: the query that once
took 29 s and held the server for 22 s is refused by its cost at once, and the largest answer the
budget admits (10,000 nodes) is built while /healthz keeps answering."""

from __future__ import annotations

import asyncio
import subprocess
import time

import asyncpg
import httpx
import pytest

from tests.layered_graph import build_layered
from tests.pg import migrated_database
from tests.server import start_uvicorn, wait_ready

pytestmark = [pytest.mark.db, pytest.mark.slow]

RICH = """query($id: ID!, $max: Int) {
  lineage(nodeId: $id, depth: 100, direction: BOTH, maxNodes: $max) {
    __typename
    ... on LineageGraph { truncated nodes { id hops
        dataset { name fields { name type } tags { name } } job { name }
        inEdges { origin } outEdges { destination } } }
    ... on Problem { code } } }"""

FLAT = """query($id: ID!) {
  lineage(nodeId: $id, depth: 100, direction: BOTH) {
    ... on LineageGraph { truncated nodes { id type hops } edges { origin destination manual } } } }"""


@pytest.fixture(scope="module")
async def server(pg_server, tmp_path_factory):
    async with migrated_database(pg_server, "headwater_lineage_load") as url:
        conn = await asyncpg.connect(url)
        try:
            graph = await build_layered(conn, reads=4)
        finally:
            await conn.close()
        log = tmp_path_factory.mktemp("server") / "server.log"
        process, base = start_uvicorn(url, log=log, env={"HEADWATER_POOL_MAX_SIZE": "4"})
        try:
            await asyncio.to_thread(wait_ready, process, base, log)
            yield base, graph
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


async def while_probing(http: httpx.AsyncClient, request) -> tuple[httpx.Response, list[float]]:
    """Run ``request`` while /healthz is asked every 20 ms; its answer and the probe latencies."""
    latencies: list[float] = []
    done = asyncio.Event()

    async def probe() -> None:
        while not done.is_set():
            started = time.perf_counter()
            assert (await http.get("/healthz")).status_code == 200
            latencies.append(time.perf_counter() - started)
            await asyncio.sleep(0.02)

    prober = asyncio.create_task(probe())
    await asyncio.sleep(0.05)
    try:
        response = await request
    finally:
        done.set()
        await prober
    return response, latencies


async def test_a_deep_lineage_asking_for_node_fields_is_refused_by_its_cost(server):
    base, graph = server
    async with httpx.AsyncClient(base_url=base, timeout=120) as http:
        started = time.perf_counter()
        response = await http.post("/graphql", json={"query": RICH, "variables": {"id": graph.first[0]}})
        elapsed = time.perf_counter() - started
    errors = response.json()["errors"]
    assert errors[0]["extensions"]["code"] == "query_too_complex"
    assert "maxNodes" in errors[0]["message"]
    assert elapsed < 1


async def test_a_deep_lineage_is_bounded_by_max_nodes(server):
    base, graph = server
    async with httpx.AsyncClient(base_url=base, timeout=120) as http:
        variables = {"id": graph.first[0], "max": 400}
        response = await http.post("/graphql", json={"query": RICH, "variables": variables})
        lineage = response.json()["data"]["lineage"]
        assert lineage["truncated"] is True
        assert len(lineage["nodes"]) == 400
        assert lineage["nodes"][0]["dataset"]["fields"]
        refused = await http.post(
            "/graphql", json={"query": RICH, "variables": {"id": graph.first[0], "max": 0}}
        )
    assert refused.json()["data"]["lineage"] == {
        "__typename": "InvalidInputError",
        "code": "invalid_request",
    }


async def test_the_largest_answer_the_budget_admits_leaves_the_server_answering(server):
    base, graph = server
    slowest: list[list[float]] = []
    async with httpx.AsyncClient(base_url=base, timeout=120) as http:
        await http.get("/healthz")
        # Built a chunk at a time: no probe waits for the whole answer (measured: 30 ms at most,
        # 330 ms when its lists were built in one go). Asked up to three times: a probe of one
        # attempt was once held 251 ms while the other test process ran, the others under 50 ms.
        for _ in range(3):
            request = http.post("/graphql", json={"query": FLAT, "variables": {"id": graph.first[0]}})
            response, latencies = await while_probing(http, request)
            lineage = response.json()["data"]["lineage"]
            assert lineage["truncated"] is True
            assert len(lineage["nodes"]) == 10_000
            assert len(lineage["edges"]) > 10_000
            assert len(latencies) >= 5
            slowest.append(sorted(latencies)[-5:])
            if max(latencies) < 0.25:
                return
    raise AssertionError(f"a probe waited 250 ms or more in every attempt: {slowest}")
