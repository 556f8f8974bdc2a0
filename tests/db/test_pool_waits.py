"""A wait for a connection of the server's pool that runs out is told apart: every connection in
use (a busy server, `database_busy`) or connecting did not finish (`database_unavailable`)."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time

import pytest

from headwater.db.pool import PoolBusyError, create_pool

pytestmark = pytest.mark.db


async def test_waits_that_run_out_as_a_connection_is_released_are_busy(database_url, settings):
    # Sixty readers on two connections, each wait at most 20 ms: many waits run out in the same
    # turn of the loop as a release, which leaves the connection released in the pool's queue.
    # Those waited for a connection in use, on a healthy database: each must say busy.
    busy_settings = dataclasses.replace(
        settings, pool_min_size=2, pool_max_size=2, pool_acquire_timeout_ms=20
    )
    pool = await create_pool(busy_settings, database_url)
    outcomes = {"served": 0, "busy": 0, "unavailable": 0}
    until = time.monotonic() + 1.5

    async def reader() -> None:
        while time.monotonic() < until:
            try:
                connection = await pool.acquire()
            except PoolBusyError:
                outcomes["busy"] += 1
                continue
            except TimeoutError:
                outcomes["unavailable"] += 1
                continue
            outcomes["served"] += 1
            try:
                await asyncio.sleep(random.uniform(0.005, 0.03))
            finally:
                # Released with time to reset the connection: by default the release has the
                # acquire's 20 ms, which a loaded machine can take.
                await pool.release(connection, timeout=5)

    try:
        await asyncio.gather(*(reader() for _ in range(60)))
    finally:
        await pool.close()
    assert outcomes["served"] > 50
    assert outcomes["busy"] > 1_000
    assert outcomes["unavailable"] == 0, outcomes
