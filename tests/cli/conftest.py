"""A data dir per test, in a folder checked for leftover processes afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.cli.running import scratch_folder
from tests.pg import empty_database


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A folder in /tmp that the `postgres` user can traverse, so that as root the embedded cluster
    stays inside it; nothing may still run in it afterwards."""
    with scratch_folder("hw-cli-") as folder:
        yield folder


@pytest.fixture
async def fresh_database(pg_server: str) -> AsyncIterator[str]:
    """A new, empty database: not migrated, as a user's first one; dropped afterwards."""
    async with empty_database(pg_server, "headwater_fresh") as url:
        yield url
