"""The import tests' databases: Marquez-shaped sources and Headwater targets of their own names."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.pg import empty_database


@pytest.fixture
async def marquez(pg_server: str) -> AsyncIterator[str]:
    """An empty database, to be filled in Marquez's layout (tests/marquez.py)."""
    async with empty_database(pg_server, "headwater_mqz_source") as url:
        yield url
