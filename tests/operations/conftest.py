"""Databases of their own for the operations tests: they drop partitions and remove history."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from headwater.db.pool import register_codecs
from headwater.ingest.service import IngestResult
from headwater.ingest.validate import validate_event
from tests.pg import migrated_database
from tests.writes import ingest_events

pytestmark = pytest.mark.db


@pytest.fixture
async def ops_url(pg_server: str) -> AsyncIterator[str]:
    """A new migrated database, dropped afterwards."""
    async with migrated_database(pg_server, "headwater_ops") as url:
        yield url


@pytest.fixture
async def ops(ops_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection to it, with the server's JSON codecs."""
    conn = await asyncpg.connect(ops_url)
    await register_codecs(conn)
    try:
        yield conn
    finally:
        await conn.close()


async def ingest(conn: asyncpg.Connection, events: list[dict[str, Any]]) -> list[IngestResult]:
    """Store events as the server does, in one transaction."""
    return await ingest_events(conn, [validate_event(e) for e in events])
