"""The embedded PostgreSQL: real servers in temporary folders, stopped and checked afterwards."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import asyncpg
import pytest

from headwater.embedded import (
    EmbeddedPostgres,
    EmbeddedPostgresError,
    SharedPostgres,
    find_system_binaries,
    start_embedded,
    use_embedded,
)
from tests.cli.running import processes_under, scratch_folder

AS_ROOT = os.geteuid() == 0
HAS_SYSTEM_PG = find_system_binaries() is not None
needs_system_pg = pytest.mark.skipif(not HAS_SYSTEM_PG, reason="no system PostgreSQL binaries")


@pytest.fixture
def scratch() -> Path:
    """A folder in /tmp that the `postgres` user can traverse; nothing may run in it afterwards."""
    with scratch_folder("hw-embedded-") as folder:
        yield folder


async def _count_rows(url: str, table: str = "kept") -> int:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval(f"SELECT count(*) FROM {table}")
    finally:
        await conn.close()


async def _insert_row(url: str, table: str = "kept") -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (id serial PRIMARY KEY, note text)")
        await conn.execute(f"INSERT INTO {table} (note) VALUES ('hello')")
    finally:
        await conn.close()


def _postmaster_alive(pg: EmbeddedPostgres) -> bool:
    pid_file = pg.cluster_dir / ("data" if pg.backend == "system" else "pgserver") / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ---------------------------------------------------------------------------- system PostgreSQL


@pytest.mark.slow
@needs_system_pg
async def test_data_survives_a_restart_and_stop_is_idempotent(scratch: Path) -> None:
    data_dir = scratch / "data"
    pg = start_embedded(data_dir)
    try:
        assert pg.backend == "system"
        assert pg.data_dir == data_dir
        assert pg.url.startswith("postgresql://")
        assert "/headwater?" in pg.url
        assert pg.socket_dir is not None
        assert pg.socket_dir.is_relative_to(data_dir)
        assert "PostgreSQL" in pg.how
        assert str(pg.socket_dir) in pg.how
        if AS_ROOT:
            assert "run as system user postgres" in pg.how
            assert (data_dir / "postgres").stat().st_uid == pwd.getpwnam("postgres").pw_uid
        conn = await asyncpg.connect(pg.url)
        try:
            assert await conn.fetchval("SELECT current_database()") == "headwater"
            assert await conn.fetchval("SHOW listen_addresses") == ""
        finally:
            await conn.close()
        await _insert_row(pg.url)
        first_url = pg.url
    finally:
        pg.stop()
    assert not _postmaster_alive(pg)
    assert not pg.running
    pg.stop()  # a second stop does nothing

    with start_embedded(data_dir) as again:
        assert again.url == first_url
        assert await _count_rows(again.url) == 1
        await _insert_row(again.url)
        assert await _count_rows(again.url) == 2
    assert not _postmaster_alive(again)
    again.stop()


@pytest.mark.slow
@needs_system_pg
def test_a_data_dir_serves_one_process_at_a_time(scratch: Path) -> None:
    with (
        start_embedded(scratch / "data"),
        pytest.raises(EmbeddedPostgresError, match="in use by another Headwater process"),
    ):
        start_embedded(scratch / "data")
    # the lock goes with the server
    start_embedded(scratch / "data").stop()


@pytest.mark.slow
@needs_system_pg
async def test_commands_join_the_server_another_process_runs(scratch: Path) -> None:
    data_dir = scratch / "data"
    with start_embedded(data_dir) as owner:
        assert (data_dir / "embedded.url").read_text().strip() == owner.url
        assert (data_dir / "embedded.url").stat().st_mode & 0o077 == 0
        joined = use_embedded(data_dir, say=lambda _: None)
        assert isinstance(joined, SharedPostgres)
        assert not joined.started_here
        assert joined.url == owner.url
        assert str(owner.socket_dir) in joined.shown_url
        joined.stop()  # the server is its owner's to stop
        await _insert_row(joined.url)
    assert not (data_dir / "embedded.url").exists()
    assert not _postmaster_alive(owner)

    started = use_embedded(data_dir, say=lambda _: None)  # nobody runs it now: started here
    try:
        assert started.started_here
        assert await _count_rows(started.url) == 1
    finally:
        started.stop()


@pytest.mark.slow
@needs_system_pg
async def test_restart_after_the_server_was_killed(scratch: Path) -> None:
    data_dir = scratch / "data"
    pg = start_embedded(data_dir)
    await _insert_row(pg.url)
    pid_file = pg.cluster_dir / "data" / "postmaster.pid"
    postmaster = int(pid_file.read_text().split()[0])
    os.kill(postmaster, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while processes_under(scratch) and time.monotonic() < deadline:
        time.sleep(0.05)
    pg.stop()  # nothing left to stop; releases the data dir
    assert pid_file.exists(), "a killed postmaster leaves its pid file behind"

    with start_embedded(data_dir) as again:
        assert await _count_rows(again.url) == 1  # committed data survives crash recovery


@pytest.mark.slow
@needs_system_pg
async def test_restart_when_the_stale_pid_belongs_to_another_process(scratch: Path) -> None:
    data_dir = scratch / "data"
    with start_embedded(data_dir) as pg:
        await _insert_row(pg.url)
        pid_file = pg.cluster_dir / "data" / "postmaster.pid"
        lines = pid_file.read_text().splitlines()
    # After a reboot the PID in a leftover postmaster.pid may belong to anything: PostgreSQL alone
    # would refuse to start ("Is another postmaster running?").
    other = subprocess.Popen(["sleep", "60"])
    try:
        pid_file.write_text("\n".join([str(other.pid), *lines[1:]]) + "\n")
        with start_embedded(data_dir) as again:
            assert await _count_rows(again.url) == 1
    finally:
        other.kill()
        other.wait()


@pytest.mark.slow
@needs_system_pg
async def test_a_server_left_running_by_a_killed_process_is_taken_over(scratch: Path) -> None:
    data_dir = scratch / "data"
    script = textwrap.dedent(
        """
        import sys, time
        from pathlib import Path
        from headwater.embedded import start_embedded
        pg = start_embedded(Path(sys.argv[1]))
        print(pg.url, flush=True)
        time.sleep(120)
        """
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", script, str(data_dir)], stdout=subprocess.PIPE, text=True, cwd=scratch
    )
    try:
        url = owner.stdout.readline().strip()
        assert url, "the child did not start a server"
        await _insert_row(url)
    finally:
        owner.kill()  # no atexit, no stop(): the server keeps running
        owner.wait()
        owner.stdout.close()
    assert processes_under(scratch), "the server should outlive its killed owner"

    notices: list[str] = []
    with start_embedded(data_dir, say=notices.append) as pg:
        assert pg.url == url
        assert await _count_rows(pg.url) == 1
    assert any("still runs" in notice for notice in notices), notices


@pytest.mark.slow
@needs_system_pg
async def test_tcp_on_127_0_0_1_when_the_socket_path_is_too_long(scratch: Path) -> None:
    data_dir = scratch / ("x" * 60) / ("y" * 60)
    with start_embedded(data_dir) as pg:
        assert pg.socket_dir is None
        assert "@127.0.0.1:" in pg.url
        assert f":{pg.port}/headwater" in pg.url
        await _insert_row(pg.url)
        url = pg.url
        port_file = pg.cluster_dir / "port"
        assert int(port_file.read_text()) == pg.port
    with start_embedded(data_dir) as again:
        assert again.url == url  # the same port, the same password
        assert await _count_rows(again.url) == 1
        # trust is for the private socket only: TCP needs the password
        with pytest.raises(asyncpg.InvalidPasswordError):
            await asyncpg.connect(host="127.0.0.1", port=again.port, user="postgres", password="wrong")


# ---------------------------------------------------------------------------- as a non-root user


def _interpreter_for(uid: int, gid: int) -> tuple[str, str]:
    """A Python of this version that uid can execute, and the PYTHONPATH that finds our packages.

    This interpreter may live in root's private home (pyenv); the system's python3 of the same
    version can then load the same site-packages.
    """
    import site

    import headwater

    paths = [*site.getsitepackages(), str(Path(headwater.__file__).parent.parent)]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, shutil.which(f"python{version}"), "/usr/bin/python3"):
        if not candidate:
            continue
        try:
            probe = subprocess.run(
                [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True,
                text=True,
                user=uid,
                group=gid,
                extra_groups=[],
                cwd="/",
                check=False,
            )
        except OSError:  # not reachable for uid, e.g. inside root's home
            continue
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate, os.pathsep.join(paths)
    pytest.skip(f"no Python {version} that uid {uid} can run")


def _run_as_user(scratch: Path, script: str, *args: str) -> str:
    """Run a Python script as `postgres` when we are root (as ourselves otherwise); its stdout."""
    python, pythonpath = sys.executable, ""
    if AS_ROOT:
        entry = pwd.getpwnam("postgres")
        python, pythonpath = _interpreter_for(entry.pw_uid, entry.pw_gid)
        for path in [scratch, *scratch.rglob("*")]:
            os.chown(path, entry.pw_uid, entry.pw_gid)
        user: dict[str, object] = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        home = entry.pw_dir
    else:
        user, home = {}, os.environ.get("HOME", str(scratch))
    runtime = scratch / "runtime"  # where pgserver keeps its lock file
    runtime.mkdir(mode=0o700, exist_ok=True)
    if AS_ROOT:
        os.chown(runtime, entry.pw_uid, entry.pw_gid)
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": home,
        "XDG_RUNTIME_DIR": str(runtime),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run(
        [python, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=scratch,
        timeout=120,
        check=False,
        **user,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done.stdout


_ROUND_TRIP = """
    import asyncio, sys
    from pathlib import Path
    import asyncpg
    from headwater.embedded import start_embedded

    async def rows(url, write):
        conn = await asyncpg.connect(url)
        try:
            await conn.execute("CREATE TABLE IF NOT EXISTS kept (note text)")
            if write:
                await conn.execute("INSERT INTO kept VALUES ('hello')")
            return await conn.fetchval("SELECT count(*) FROM kept")
        finally:
            await conn.close()

    data_dir, backend = Path(sys.argv[1]), sys.argv[2]
    with start_embedded(data_dir, backend=backend) as pg:
        print(pg.backend, asyncio.run(rows(pg.url, True)), pg.how, sep="|")
    with start_embedded(data_dir, backend=backend) as pg:
        print(pg.backend, asyncio.run(rows(pg.url, False)), pg.how, sep="|")
"""


@pytest.mark.slow
@needs_system_pg
def test_system_postgres_as_a_non_root_user(scratch: Path) -> None:
    out = _run_as_user(scratch, _ROUND_TRIP, str(scratch / "data"), "system")
    first, second = out.strip().splitlines()
    assert first.startswith("system|1|")
    assert second.startswith("system|1|")
    assert "run as system user" not in first  # it runs as the calling user itself


@pytest.mark.slow
def test_pgserver_fallback_as_a_non_root_user(scratch: Path) -> None:
    pytest.importorskip("pgserver")
    out = _run_as_user(scratch, _ROUND_TRIP, str(scratch / "data"), "pgserver")
    first, second = out.strip().splitlines()
    assert first.startswith("pgserver|1|PostgreSQL 16")
    assert second.startswith("pgserver|1|")
    assert (scratch / "data" / "postgres" / "pgserver" / "PG_VERSION").read_text().strip() == "16"


# ---------------------------------------------------------------------------- finding binaries


def test_pg_bindir_must_hold_postgresql(tmp_path: Path) -> None:
    with pytest.raises(
        EmbeddedPostgresError, match=r"PG_BINDIR=.* lacks initdb, pg_ctl, postgres, psql"
    ):
        find_system_binaries({"PG_BINDIR": str(tmp_path)})


def test_no_binaries_anywhere_is_none(tmp_path: Path) -> None:
    assert find_system_binaries({"PATH": str(tmp_path)}, search_root=tmp_path) is None


@needs_system_pg
def test_binaries_of_a_wanted_major_version() -> None:
    found = find_system_binaries()
    assert found is not None
    assert find_system_binaries(major=found.major) == found
    assert find_system_binaries({"PATH": ""}, major=found.major + 100) is None
    with pytest.raises(EmbeddedPostgresError, match="needs 1"):
        find_system_binaries({"PG_BINDIR": str(found.bindir)}, major=1)


def test_a_cluster_needs_its_own_major_version(scratch: Path) -> None:
    cluster = scratch / "data" / "postgres" / "data"
    cluster.mkdir(parents=True)
    (cluster / "PG_VERSION").write_text("9\n")
    with pytest.raises(EmbeddedPostgresError, match=r"made by PostgreSQL 9.*install postgresql-9"):
        start_embedded(scratch / "data")
    # the failed start released the data dir
    with pytest.raises(EmbeddedPostgresError, match="made by PostgreSQL 9"):
        start_embedded(scratch / "data")
