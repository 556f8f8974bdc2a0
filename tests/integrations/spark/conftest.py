"""One real PySpark job (local[2], in a subprocess) with lineage switched on from the environment.

- ``headwater``: ``headwater serve`` as a subprocess over the session's test database, with an API
  key, or None when no PostgreSQL is available.
- ``spark_job``: runs ``lineage_job.py`` once per module. The listener posts to a small local
  receiver that keeps every request (headers and decoded body) and, when ``headwater`` is up, passes
  it on to that server and answers with its response, so the job talks to Headwater for real.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import secrets
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server import HeadwaterServer, running_headwater

REPO = Path(__file__).resolve().parents[3]
JOB = Path(__file__).with_name("lineage_job.py")
NAMESPACE = "spark_e2e"


def spark_missing() -> str | None:
    """Why the end-to-end job cannot run here, or None."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime"
    if importlib.util.find_spec("headwater_spark") is None:
        return "headwater-spark is not installed (pip install ./integrations/spark)"
    if not (Path(sysconfig.get_paths()["purelib"]) / "headwater_spark_autoload.pth").exists():
        return "headwater_spark_autoload.pth is not in site-packages"
    return None


# --- A real Headwater server (optional) -------------------------------------------------------------


@pytest.fixture(scope="module")
def headwater(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HeadwaterServer | None]:
    if spark_missing():
        yield None
        return
    try:
        database_url = request.getfixturevalue("database_url")
    except Exception:  # no PostgreSQL here: the receiver answers on its own
        yield None
        return
    log = tmp_path_factory.mktemp("headwater-server") / "server.log"
    with running_headwater(database_url, log) as server:
        yield server


# --- The receiver --------------------------------------------------------------------------------


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    status: int
    received_at: float  # epoch seconds


class Receiver:
    """Keeps what the listener posts; passes it on to ``forward`` (if any) and answers with its reply."""

    def __init__(self, forward: str | None) -> None:
        self.forward = forward
        self.requests: list[Received] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = dict(self.headers)
                body = json.loads(
                    gzip.decompress(raw) if headers.get("Content-Encoding") == "gzip" else raw
                )
                status, reply = 201, b""
                if receiver.forward:
                    passed = {
                        k: v
                        for k, v in headers.items()
                        if k.lower() in ("content-type", "content-encoding", "authorization")
                    }
                    response = httpx.post(
                        receiver.forward + self.path, content=raw, headers=passed, timeout=30
                    )
                    status, reply = response.status_code, response.content
                with receiver.lock:
                    receiver.requests.append(Received(self.path, headers, body, status, time.time()))
                self.send_response(status)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


# --- The job --------------------------------------------------------------------------------------


@dataclass
class SparkJobRun:
    workdir: Path
    api_key: str
    requests: list[Received]
    output: list[dict[str, Any]]
    headwater: HeadwaterServer | None
    log: str = field(repr=False)

    @property
    def events(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests]

    def printed(self, key: str) -> Any:
        return next(line[key] for line in self.output if key in line)


def run_spark_script(
    script: Path,
    headwater: HeadwaterServer | None,
    workdir: Path,
    *args: str,
    env: dict[str, str] | None = None,
) -> SparkJobRun:
    """Run ``script WORKDIR ARGS…`` with lineage switched on from the environment, its events
    received (and passed on to ``headwater`` when it is up)."""
    reason = spark_missing()
    if reason:
        pytest.skip(reason)
    api_key = headwater.api_key if headwater else secrets.token_urlsafe(16)
    with Receiver(headwater.url if headwater else None) as receiver:
        environment = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OPENLINEAGE_", "HEADWATER_", "SPARK_"))
        }
        environment.update(
            HEADWATER_SPARK_LINEAGE="1",
            OPENLINEAGE_URL=receiver.url,
            OPENLINEAGE_API_KEY=api_key,
            OPENLINEAGE_NAMESPACE=NAMESPACE,
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
            SPARK_LOCAL_IP="127.0.0.1",
            **(env or {}),
        )
        proc = subprocess.run(
            [sys.executable, str(script), str(workdir), *args],
            cwd=workdir,
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        log = proc.stdout + proc.stderr
        assert proc.returncode == 0, log[-6000:]
        requests = list(receiver.requests)
    output = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return SparkJobRun(workdir, api_key, requests, output, headwater, log)


@pytest.fixture(scope="module")
def spark_job(
    headwater: HeadwaterServer | None, tmp_path_factory: pytest.TempPathFactory
) -> SparkJobRun:
    return run_spark_script(JOB, headwater, tmp_path_factory.mktemp("spark-job"))
