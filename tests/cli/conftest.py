"""A data dir per test, in a folder checked for leftover processes afterwards."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.cli.running import processes_under
from tests.pg import with_database


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
    name = f"headwater_fresh_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(pg_server)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield with_database(pg_server, name)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
