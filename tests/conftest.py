"""Shared fixtures: a migrated database per test session (per xdist worker), cleaned per test."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from headwater.app import create_app
from headwater.db.pool import register_codecs
from headwater.settings import Settings
from tests.pg import empty_database, migrated_database, test_server

# What the tests empty between them: every table the migrations made but their own bookkeeping.
TABLES_TO_EMPTY = (
    "SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables"
    " WHERE schemaname = current_schema() AND tablename <> 'schema_migrations'"
)


async def empty_tables(conn: asyncpg.Connection) -> None:
    """Every table of the database emptied, as if just migrated.

    The session's app may still be reading after a test ends: the resolvers of a GraphQL operation
    refused as too costly finish the counts they had begun, and the governance worker applies the
    test's last changes, locking tables in another order than TRUNCATE does. PostgreSQL then ends
    one of the two as a deadlock; if it is TRUNCATE, it is run again."""
    tables = await conn.fetchval(TABLES_TO_EMPTY)
    for attempt in range(1, 6):
        try:
            await conn.execute(f"TRUNCATE {tables} RESTART IDENTITY CASCADE")
            return
        except asyncpg.exceptions.DeadlockDetectedError:
            if attempt == 5:
                raise
            await asyncio.sleep(0.1 * attempt)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    with test_server() as url:
        yield url


@pytest.fixture
def make_database(pg_server: str) -> Callable[[], AbstractAsyncContextManager[str]]:
    """Makes empty, migrated databases like the session's, dropped afterwards."""

    def make() -> AbstractAsyncContextManager[str]:
        return migrated_database(pg_server, "headwater_extra")

    return make


@pytest.fixture(scope="session")
async def database_url(pg_server: str) -> AsyncIterator[str]:
    """A fresh, migrated database for this session (one per xdist worker), dropped at the end."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    async with migrated_database(pg_server, f"headwater_test_{worker}") as url:
        yield url


@pytest.fixture(scope="session")
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=5, init=register_codecs)
    yield pool
    await pool.close()


@pytest.fixture
async def db(pool: asyncpg.Pool) -> asyncpg.Pool:
    """The session database, emptied before the test: tests commit for real (NOTIFY, replicas)."""
    async with pool.acquire() as conn:
        await empty_tables(conn)
    return pool


@pytest.fixture
async def conn(db: asyncpg.Pool) -> AsyncIterator[asyncpg.Connection]:
    async with db.acquire() as connection:
        yield connection


@pytest.fixture(scope="session")
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, pool_min_size=1, pool_max_size=5)


@pytest.fixture(scope="session")
async def app_client(settings: Settings) -> AsyncIterator[AsyncTestClient[Any]]:
    async with AsyncTestClient(app=create_app(settings)) as client:
        yield client


@pytest.fixture
async def client(db: asyncpg.Pool, app_client: AsyncTestClient[Any]) -> AsyncTestClient[Any]:
    """The app over the emptied session database."""
    return app_client


@pytest.fixture
async def marquez(pg_server: str) -> AsyncIterator[str]:
    """An empty database, to be filled in Marquez's layout (tests/marquez.py)."""
    async with empty_database(pg_server, "marquez") as url:
        yield url
