"""Spark on local[1] (one session per test module) and extra empty, migrated databases."""

from __future__ import annotations

import importlib.util
import shutil
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import asyncpg
import pytest

from headwater.db.migrate import migrate
from tests.pg import with_database

if importlib.util.find_spec("pyspark") is None or shutil.which("java") is None:
    pytest.skip("pyspark and a Java runtime are needed", allow_module_level=True)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A local[1] session for the module's tests, stopped after them."""
    from headwater.pipeline.session import build_session

    session = build_session("local[1]", "headwater-tests", {"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


@pytest.fixture
def progress(spark: Any) -> Any:
    from headwater.pipeline.progress import Progress

    return Progress(spark.sparkContext, enabled=False)


@pytest.fixture
def make_database(pg_server: str) -> Iterator[Callable[[], AbstractAsyncContextManager[str]]]:
    """Makes empty, migrated databases like the session's, dropped afterwards."""

    @asynccontextmanager
    async def make() -> AsyncIterator[str]:
        name = f"headwater_pipeline_{uuid.uuid4().hex[:8]}"
        admin = await asyncpg.connect(pg_server)
        try:
            await admin.execute(f'CREATE DATABASE "{name}"')
            url = with_database(pg_server, name)
            conn = await asyncpg.connect(url)
            try:
                await migrate(conn)
            finally:
                await conn.close()
            yield url
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await admin.close()

    yield make
