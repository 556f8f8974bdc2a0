"""A data dir per test, in a folder checked for leftover processes afterwards."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.cli.running import processes_under
from tests.pg import empty_database


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A folder in /tmp that the `postgres` user can traverse, so that as root the embedded cluster
    stays inside it; nothing may still run in it afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="hw-cli-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        leftovers = processes_under(folder)
        for pid in leftovers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)
        assert not leftovers, f"processes left running: {leftovers}"


@pytest.fixture
async def fresh_database(pg_server: str) -> AsyncIterator[str]:
    """A new, empty database: not migrated, as a user's first one; dropped afterwards."""
    async with empty_database(pg_server, "headwater_fresh") as url:
        yield url
