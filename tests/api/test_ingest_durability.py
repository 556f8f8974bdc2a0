"""Nothing acknowledged is lost: the server or PostgreSQL killed while clients post events.

An OpenLineage client that got 201 will never send its event again, so every event answered 201
must be stored, whatever dies afterwards. Clients keep posting through the failure, as retrying
clients do; a request cut off or answered 5xx is not acknowledged and may or may not be stored.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path

import asyncpg
import httpx
import pytest

from tests.factories import run_event
from tests.pg import migrated_database, temporary_cluster
from tests.server import running_headwater

pytestmark = [pytest.mark.db, pytest.mark.slow]

CLIENTS = 16


async def _post_until(url: str, end: float, acknowledged: set[str]) -> int:
    """Post events of new runs from CLIENTS clients until ``end``; returns the requests that failed."""
    failed = 0

    async def client(http: httpx.AsyncClient, i: int) -> None:
        nonlocal failed
        while time.monotonic() < end:
            run_id = str(uuid.uuid4())
            event = run_event(f"durable_{i}", run_id=run_id, inputs=[f"in_{i}"], outputs=[f"out_{i}"])
            try:
                response = await http.post(f"{url}/api/v1/lineage", json=event)
            except httpx.TransportError:
                response = None
            if response is not None and response.status_code == 201:
                acknowledged.add(run_id)
            else:
                failed += 1
                await asyncio.sleep(0.05)

    async with httpx.AsyncClient(timeout=5) as http:
        await asyncio.gather(*(client(http, i) for i in range(CLIENTS)))
    return failed


async def _missing(database_url: str, run_ids: set[str]) -> set[str]:
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch(
            "SELECT run_uuid::text FROM raw_events WHERE run_uuid = ANY($1::uuid[])", list(run_ids)
        )
        stored_runs = await conn.fetch(
            "SELECT run_uuid::text FROM runs WHERE run_uuid = ANY($1::uuid[])", list(run_ids)
        )
    finally:
        await conn.close()
    stored = {r["run_uuid"] for r in rows} & {r["run_uuid"] for r in stored_runs}
    return run_ids - stored


async def test_the_server_killed_under_load_loses_no_acknowledged_event(
    pg_server: str, tmp_path: Path
) -> None:
    async with migrated_database(pg_server, "headwater_durable") as database_url:
        acknowledged: set[str] = set()
        with running_headwater(database_url, tmp_path / "serve.log", secured=False) as server:
            end = time.monotonic() + 4
            load = asyncio.create_task(_post_until(server.url, end, acknowledged))
            await asyncio.sleep(2)
            before_kill = len(acknowledged)
            os.kill(server.pid, signal.SIGKILL)
            failed = await load
        assert before_kill >= 20, "too little load to tell anything"
        assert failed > 0, "the kill happened after the load"
        assert await _missing(database_url, acknowledged) == set()


async def test_postgres_crashing_under_load_loses_no_acknowledged_event(tmp_path: Path) -> None:
    # A cluster of its own, durable as production runs it; serve migrates its database.
    with temporary_cluster(durable=True) as cluster:
        acknowledged: set[str] = set()
        with running_headwater(cluster.url, tmp_path / "serve.log", secured=False) as server:
            end = time.monotonic() + 5
            load = asyncio.create_task(_post_until(server.url, end, acknowledged))
            await asyncio.sleep(1.5)
            cluster.crash()
            crashed_at = len(acknowledged)
            await asyncio.sleep(1)
            assert len(acknowledged) - crashed_at <= CLIENTS, "acknowledged with the database down"
            cluster.start()
            failed = await load
            # the server's pool reconnects by itself: ingest works again without a restart
            after = run_event("after_the_crash", outputs=["recovered"])
            async with httpx.AsyncClient(timeout=15) as http:
                response = await http.post(f"{server.url}/api/v1/lineage", json=after)
            assert response.status_code == 201, response.text
        assert crashed_at >= 20, "too little load to tell anything"
        assert failed > 0, "the crash happened after the load"
        assert await _missing(cluster.url, acknowledged) == set()
