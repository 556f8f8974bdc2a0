"""The `headwater` command as users run it: migrate, then serve on a real port, then stop cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from headwater.command_base import warn_if_autovacuum_is_off
from tests.factories import job_run
from tests.server import free_port, running_headwater

pytestmark = [pytest.mark.db, pytest.mark.slow]
HEADWATER = str(Path(sys.executable).with_name("headwater"))


def test_migrate_is_idempotent(database_url):
    env = {**os.environ, "HEADWATER_DATABASE_URL": database_url}
    result = subprocess.run([HEADWATER, "migrate"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "headwater: 0 migration(s) applied"


async def test_migrate_warns_when_nothing_reclaims_dead_rows(database_url, conn):
    autovacuum = await conn.fetchval("SELECT current_setting('autovacuum')::boolean")
    env = {**os.environ, "HEADWATER_DATABASE_URL": database_url}
    result = subprocess.run([HEADWATER, "migrate"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert ("autovacuum is off" in result.stderr) is not autovacuum
    assert (await warn_if_autovacuum_is_off(conn)) is not autovacuum


def test_serve_accepts_events_and_stops_on_sigint(db, database_url):
    port = free_port()
    env = {**os.environ, "HEADWATER_DATABASE_URL": database_url}
    server = subprocess.Popen(
        [HEADWATER, "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "server did not become ready"
            time.sleep(0.2)
        for event in job_run("load", inputs=["a"], outputs=["b"]):
            assert httpx.post(f"{base}/api/v1/lineage", json=event).status_code == 201
        graph = httpx.get(f"{base}/api/v1/lineage", params={"nodeId": "dataset:warehouse:b"}).json()
        assert sorted(n["id"] for n in graph["graph"]) == [
            "dataset:warehouse:a",
            "dataset:warehouse:b",
            "job:pipelines:load",
        ]
    finally:
        server.send_signal(signal.SIGINT)
        output, _ = server.communicate(timeout=30)
    assert server.returncode == 0, output


def test_cli_rejects_unknown_command():
    result = subprocess.run([HEADWATER, "frobnicate"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "invalid choice: 'frobnicate'" in result.stderr


@pytest.mark.parametrize("setting", [None, "0"], ids=["access log by default", "HEADWATER_ACCESS_LOG=0"])
def test_serve_logs_each_request_unless_told_not_to(database_url, tmp_path, setting):
    env = {} if setting is None else {"HEADWATER_ACCESS_LOG": setting}
    log = tmp_path / "serve.log"
    with running_headwater(database_url, log, env=env) as server:
        answer = httpx.get(
            f"{server.url}/api/v1/namespaces",
            headers={"authorization": f"Bearer {server.api_key}"},
            timeout=10,
        )
    assert answer.status_code == 200
    text = log.read_text()
    assert "started" in text.lower() or "uvicorn" in text.lower()  # the log is the server's
    assert ('"GET /api/v1/namespaces HTTP/1.1" 200' in text) is (setting is None)
