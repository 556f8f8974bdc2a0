"""A real `headwater serve` process for end-to-end tests, on a free port, stopped afterwards."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.pg import free_port, migrated_database

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class HeadwaterServer:
    url: str
    api_key: str
    log: Path
    pid: int


def start_uvicorn(
    database_url: str, *options: str, log: Path | None = None, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """``uvicorn headwater.app:create_app --factory`` on a free port, with uvicorn's ``options``, its
    output in ``log`` (else inherited), ``env`` adding settings: a server without `serve`'s
    embedded database, for tests and benchmarks that start several. Returns the process and URL."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "headwater.app:create_app",
        "--factory",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        *options,
    ]
    environment = {**os.environ, "HEADWATER_DATABASE_URL": database_url, **(env or {})}
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(log.open("wb")) if log else None
        process = subprocess.Popen(command, env=environment, stdout=out, stderr=subprocess.STDOUT)
    return process, f"http://127.0.0.1:{port}"


def wait_ready(process: subprocess.Popen[bytes], url: str, log: Path, timeout: float = 60) -> None:
    """Until the server started by ``start_uvicorn`` answers /readyz; its log if it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not become ready")


def stop_process_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group, then SIGKILL it if it has not gone within 15 s."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


@contextlib.contextmanager
def running_headwater(
    database_url: str,
    log: Path,
    *,
    api_key: str | None = None,
    secured: bool = True,
    env: dict[str, str] | None = None,
) -> Iterator[HeadwaterServer]:
    """Run `headwater serve` on ``database_url`` until the block ends: with an API key (every
    request then needs it), or open, as a fresh install is, when not ``secured``; ``env`` adds
    HEADWATER_* settings."""
    port = free_port()
    api_key = (api_key or secrets.token_urlsafe(16)) if secured else ""
    settings = env or {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env.update(
        HEADWATER_DATABASE_URL=database_url,
        HEADWATER_API_KEY=api_key,
        HEADWATER_POOL_MIN_SIZE="1",
        HEADWATER_POOL_MAX_SIZE="4",
    )
    env.update(settings)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "headwater.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=REPO,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"headwater serve exited with {proc.returncode}:\n{log.read_text()[-4000:]}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"headwater serve not ready after 60 s:\n{log.read_text()[-4000:]}")
            time.sleep(0.2)
        yield HeadwaterServer(url=url, api_key=api_key, log=log, pid=proc.pid)
    finally:
        stop_process_group(proc)


def server_of_its_own(database: str, **options: Any) -> Callable[..., Any]:
    """A module's ``server`` fixture: `headwater serve` on a new migrated database named after
    ``database``, for that module's tests alone (``options`` as for ``running_headwater``)."""

    @pytest.fixture(scope="module")
    async def server(
        pg_server: str, tmp_path_factory: pytest.TempPathFactory
    ) -> AsyncIterator[HeadwaterServer]:
        async with migrated_database(pg_server, database) as url:
            log = tmp_path_factory.mktemp(database) / "serve.log"
            with running_headwater(url, log, **options) as running:
                yield running

    return server
