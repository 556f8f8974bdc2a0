"""Which database each command uses, and how it answers when that database is not there."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest

from tests.cli.running import HEADWATER, embedded_env, serving, wait_until_healthy
from tests.factories import job_run
from tests.server import free_port

UNREACHABLE = "postgresql://postgres@127.0.0.1:1/headwater"  # port 1: refused at once


def run(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HEADWATER, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def commands(tmp: Path) -> dict[str, list[str]]:
    archive = tmp / "events.jsonl"
    archive.write_text(
        "".join(json.dumps(e) + "\n" for e in job_run("load", inputs=["a"], outputs=["b"]))
    )
    return {
        "serve": ["serve", "--port", "1"],
        "migrate": ["migrate"],
        "backfill": ["spark", "backfill", str(archive)],
        "export": ["spark", "export", "--format", "ndjson", str(tmp / "out")],
        "heat": ["spark", "heat"],
    }


def assert_one_line(result: subprocess.CompletedProcess[str], *expected: str) -> str:
    assert result.returncode != 0, result
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("command", ["serve", "migrate", "backfill", "export", "heat"])
def test_an_unreachable_database_is_one_line_without_starting_spark(
    tmp_path: Path, command: str
) -> None:
    # serve waits for a database that is not there yet, unless told not to
    env = {**os.environ, "HEADWATER_DATABASE_URL": UNREACHABLE, "HEADWATER_DATABASE_WAIT_S": "0"}
    started = time.monotonic()
    result = run(commands(tmp_path)[command], env, tmp_path)
    line = assert_one_line(result, "127.0.0.1:1/headwater", "HEADWATER_DATABASE_URL")
    assert line.startswith("headwater: cannot reach PostgreSQL"), line
    assert time.monotonic() - started < 20, "the database is checked before Spark starts"


@pytest.mark.parametrize("command", ["backfill", "heat"])
def test_spark_commands_name_a_malformed_database_url(tmp_path: Path, command: str) -> None:
    args = [*commands(tmp_path)[command], "--database-url", "mysql://somewhere/db"]
    assert_one_line(run(args, dict(os.environ), tmp_path), "not a usable postgresql:// URL")


def test_export_refuses_an_existing_folder_before_anything_starts(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    env = {**os.environ, "HEADWATER_DATABASE_URL": UNREACHABLE}
    assert_one_line(run(commands(tmp_path)["export"], env, tmp_path), "out already exists")


@pytest.mark.db
def test_export_from_an_unmigrated_database_says_to_migrate(tmp_path: Path, fresh_database: str) -> None:
    args = [*commands(tmp_path)["export"], "--database-url", fresh_database]
    assert_one_line(
        run(args, dict(os.environ), tmp_path), "has no Headwater tables", "headwater migrate"
    )


@pytest.mark.db
@pytest.mark.slow
def test_migrate_starts_the_embedded_database_and_stops_it(scratch: Path) -> None:
    result = run(["migrate"], embedded_env(scratch / "data"), scratch)
    assert result.returncode == 0, result.stderr
    assert "started the embedded PostgreSQL" in result.stderr
    assert "embedded PostgreSQL stopped" in result.stderr
    assert (
        result.stdout.startswith("headwater: 14 migration(s) applied")
        or "migration(s) applied" in result.stdout
    )
    # the scratch fixture checks that no process of the instance is left


@pytest.mark.spark
@pytest.mark.db
@pytest.mark.slow
async def test_backfill_into_a_fresh_database_migrates_first(
    tmp_path: Path, fresh_database: str
) -> None:
    events = job_run("load", inputs=["a"], outputs=["b"])
    archive = tmp_path / "events.jsonl"
    archive.write_text("".join(json.dumps(e) + "\n" for e in events))
    args = ["spark", "backfill", "--master", "local[1]", str(archive), "--database-url", fresh_database]
    result = run([*args, "--progress-interval", "0.5"], dict(os.environ), tmp_path)
    assert result.returncode == 0, result.stderr
    assert "applied migrations: 0001_" in result.stderr
    # stderr is a pipe: the phases, and while Spark starts, lines that show time passing
    assert re.search(r"^\[00:0\d\] starting Spark: \d+ s so far$", result.stderr, re.M), result.stderr
    assert re.search(r"^\[\d\d:\d\d\] writing events in eventTime order$", result.stderr, re.M)
    conn = await asyncpg.connect(fresh_database)
    try:
        assert await conn.fetchval("SELECT count(*) FROM raw_events") == len(events)
    finally:
        await conn.close()


@pytest.mark.spark
@pytest.mark.slow
async def test_commands_join_the_embedded_database_serve_runs(scratch: Path) -> None:
    data_dir = scratch / "data"
    env = embedded_env(data_dir)
    with serving(data_dir) as (server, port):
        url = (data_dir / "embedded.url").read_text().strip()
        conn = await asyncpg.connect(url)  # the URL serve publishes works for other tools
        await conn.close()
        for event in job_run("load", inputs=["a"], outputs=["b"]):
            assert httpx.post(f"http://127.0.0.1:{port}/api/v1/lineage", json=event).status_code == 201

        migrated = run(["migrate"], env, scratch)
        assert migrated.returncode == 0, migrated.stderr
        assert migrated.stdout.strip() == "headwater: 0 migration(s) applied"
        assert f"run by pid {server.pid}" in migrated.stderr

        # One iteration: joining serve's database is the point, not the scores (each iteration is
        # some 5 s of Spark jobs here, even for three nodes).
        heat = run(["spark", "heat", "--master", "local[1]", "--max-iterations", "1"], env, scratch)
        assert heat.returncode == 0, heat.stderr
        assert re.search(r"nodes\s+3 \(2 datasets, 1 jobs\)", heat.stdout), heat.stdout
        assert server.poll() is None, "the commands left serve's database running"

        server.send_signal(signal.SIGTERM)
        output, _ = server.communicate(timeout=30)
    assert server.returncode == 0, output
    assert f"its URL, for other tools and HEADWATER_DATABASE_URL: {url}" in output, output


# SIGTERM as Spark starts, and once its JVM is on its way: a JVM interrupted while it starts ran on
# (holding 3 GB and the command's output) until ended with the command.
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("after_s", [0, 1.5], ids=["as Spark starts", "while its JVM starts"])
def test_sigterm_ends_a_spark_command_and_the_database_it_started(scratch: Path, after_s: float) -> None:
    command = subprocess.Popen(
        [HEADWATER, "spark", "heat", "--master", "local[1]"],
        env=embedded_env(scratch / "data"),
        cwd=scratch,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert command.stderr is not None
        lines = []
        for line in command.stderr:
            lines.append(line)
            if "starting Spark" in line:
                break
        time.sleep(after_s)
        command.send_signal(signal.SIGTERM)
        _, rest = command.communicate(timeout=60)
    finally:
        if command.poll() is None:
            command.kill()
            command.communicate()
    output = "".join(lines) + rest
    assert command.returncode == 130, output
    assert "Traceback" not in output
    assert "embedded PostgreSQL stopped" in output
    # the scratch fixture checks that no process of the instance is left


def test_serve_gives_up_on_a_database_that_never_comes_and_says_how_long_it_waited(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "HEADWATER_DATABASE_URL": UNREACHABLE, "HEADWATER_DATABASE_WAIT_S": "2"}
    started = time.monotonic()
    result = run(commands(tmp_path)["serve"], env, tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[0].startswith("headwater: waiting for PostgreSQL at 127.0.0.1:1/headwater"), lines
    assert lines[-1].startswith("headwater: cannot reach PostgreSQL"), lines
    assert lines[-1].endswith("(waited 2 s)"), lines
    assert 2 <= time.monotonic() - started < 20


class _Forwarder:
    """A TCP port that forwards to PostgreSQL once opened: a database that comes up late."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.port = free_port()
        self.target = target
        self._server: asyncio.Server | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    def open(self) -> None:
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._pipe, "127.0.0.1", self.port), self._loop
        ).result(timeout=10)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)

        async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        try:
            await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))
        finally:
            writer.close()
            up_writer.close()

    def close(self) -> None:
        async def shut() -> None:
            if self._server is not None:
                self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


@pytest.mark.db
@pytest.mark.slow
def test_serve_waits_for_a_database_that_comes_up_later(fresh_database: str) -> None:
    real = urlsplit(fresh_database)
    forwarder = _Forwarder((real.hostname or "127.0.0.1", real.port or 5432))
    late_url = real._replace(netloc=f"{real.username}@127.0.0.1:{forwarder.port}").geturl()
    port = free_port()
    server = subprocess.Popen(
        [HEADWATER, "serve", "--port", str(port)],
        env={**os.environ, "HEADWATER_DATABASE_URL": late_url, "HEADWATER_DATABASE_WAIT_S": "60"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert first.startswith(f"headwater: waiting for PostgreSQL at 127.0.0.1:{forwarder.port}/"), (
            first
        )
        time.sleep(1)
        assert server.poll() is None, "serve gave up instead of waiting"
        forwarder.open()
        wait_until_healthy(server, port)
        for event in job_run("load", inputs=["a"], outputs=["b"]):
            assert httpx.post(f"http://127.0.0.1:{port}/api/v1/lineage", json=event).status_code == 201
    finally:
        server.send_signal(signal.SIGINT)
        output, _ = server.communicate(timeout=30)
        forwarder.close()
    assert server.returncode == 0, output
