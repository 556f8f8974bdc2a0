"""A PostgreSQL server for the tests: a configured one, the local one, or a temporary cluster.

Order: $HEADWATER_TEST_DATABASE_URL (a server URL whose user may create databases), then the
local server on 127.0.0.1:5432 as user postgres, else a throwaway cluster from the machine's
PostgreSQL binaries (run as the postgres user when we are root, as initdb/pg_ctl refuse root).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _reachable(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def _bindir() -> Path | None:
    if os.environ.get("PG_BINDIR"):
        return Path(os.environ["PG_BINDIR"])
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    if found:
        return Path(found[-1])
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


class Cluster:
    """A throwaway cluster made by initdb, run by pg_ctl; ``durable`` keeps every commit across a
    crash (fsync and synchronous commit on), else it trades that for speed."""

    def __init__(self, durable: bool = False) -> None:
        bindir = _bindir()
        if bindir is None:
            raise RuntimeError(
                "No PostgreSQL server: set HEADWATER_TEST_DATABASE_URL or install PostgreSQL"
            )
        self.bindir = bindir
        self.tmp = Path(tempfile.mkdtemp(prefix="headwater-pg-"))
        self.tmp.chmod(0o755)
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.tmp, "postgres", "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.port = free_port()
        self.data = self.tmp / "data"
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        fast = "" if durable else "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
        self.options = (
            f"-p {self.port} -k {self.tmp} -c listen_addresses=127.0.0.1 {fast}-c max_connections=200"
        )
        subprocess.run(
            [
                *self.as_user,
                str(bindir / "initdb"),
                *("-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8"),
                "--no-locale",
                "-N",
            ],
            check=True,
            capture_output=True,
        )

    def _pg_ctl(self, *args: str, check: bool = True) -> None:
        subprocess.run(
            [*self.as_user, str(self.bindir / "pg_ctl"), "-D", str(self.data), *args],
            check=check,
            capture_output=True,
        )

    def start(self) -> None:
        self._pg_ctl("-l", str(self.tmp / "log"), "-w", "-o", self.options, "start")

    def crash(self) -> None:
        """Stop at once, as a crash does: no checkpoint, recovery from the WAL at the next start."""
        self._pg_ctl("-m", "immediate", "stop", check=False)

    def remove(self) -> None:
        self.crash()
        shutil.rmtree(self.tmp, ignore_errors=True)


@contextlib.contextmanager
def temporary_cluster(durable: bool = False) -> Iterator[Cluster]:
    """A started Cluster, removed afterwards."""
    cluster = Cluster(durable)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


@contextlib.contextmanager
def test_server() -> Iterator[str]:
    """The URL of a server the tests may create databases on."""
    url = os.environ.get("HEADWATER_TEST_DATABASE_URL")
    if url:
        yield url
    elif _reachable("127.0.0.1", 5432):
        yield "postgresql://postgres@127.0.0.1:5432/postgres"
    else:
        with temporary_cluster() as cluster:
            yield cluster.url


def with_database(server_url: str, database: str) -> str:
    """The same server URL pointing at another database."""
    base, _, query = server_url.partition("?")
    head, _, _ = base.rpartition("/")
    return f"{head}/{database}" + (f"?{query}" if query else "")


@contextlib.asynccontextmanager
async def empty_database(server_url: str, prefix: str) -> AsyncIterator[str]:
    """A new database named ``<prefix>_<random>``, not migrated; dropped (even if in use) afterwards."""
    import asyncpg

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(server_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield with_database(server_url, name)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@contextlib.asynccontextmanager
async def migrated_database(server_url: str, prefix: str) -> AsyncIterator[str]:
    """A new database named ``<prefix>_<random>``, migrated; dropped (even if in use) afterwards."""
    import asyncpg

    from headwater.db.migrate import migrate

    async with empty_database(server_url, prefix) as url:
        conn = await asyncpg.connect(url)
        try:
            await migrate(conn)
        finally:
            await conn.close()
        yield url


# A trigger of a test database: only there can the database refuse an event that validation took,
# as it would one breaking a limit no check foresaw. Refuses the raw event of every job whose name
# holds "poison", naming the job.
REFUSE_POISON = """
    CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.job_name LIKE '%poison%' THEN RAISE EXCEPTION '% refused', NEW.job_name; END IF;
        RETURN NEW;
    END $$;
    CREATE TRIGGER refuse_poison BEFORE INSERT ON raw_events
        FOR EACH ROW EXECUTE FUNCTION refuse_poison();
"""
