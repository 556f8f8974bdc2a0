"""Running `headwater` as users do: real processes, on a data dir of their own."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.server import free_port

HEADWATER = str(Path(sys.executable).with_name("headwater"))


def processes_under(folder: Path) -> dict[int, str]:
    """Processes whose working directory is inside folder (every PostgreSQL process has one)."""
    found: dict[int, str] = {}
    prefix = os.path.realpath(folder) + os.sep
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (os.readlink(entry / "cwd") + os.sep).startswith(prefix):
                    found[int(entry.name)] = (
                        (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                    )
            except OSError:
                continue
    return found


def _still_running(found: dict[int, str]) -> dict[int, str]:
    """``found`` less the processes that were already exiting: one whose memory is released has no
    command line left (every PostgreSQL process has one) and still shows its working directory
    until its exit completes. Those are given a second to be gone; any other counts at once."""
    deadline = time.monotonic() + 1
    while any(not cmdline for cmdline in found.values()) and time.monotonic() < deadline:
        time.sleep(0.05)
        found = {pid: c for pid, c in found.items() if c or Path(f"/proc/{pid}").exists()}
    return found


@contextlib.contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """A folder in /tmp that the `postgres` user can traverse, so that as root an embedded cluster
    stays inside it; whatever still runs in it afterwards is killed, and fails the test."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        leftovers = _still_running(processes_under(folder))
        for pid in leftovers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)
        assert not leftovers, f"processes left running: {leftovers}"


def embedded_env(data_dir: Path) -> dict[str, str]:
    """The environment of a user who has set nothing: the embedded PostgreSQL in data_dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env["HEADWATER_DATA_DIR"] = str(data_dir)
    return env


def wait_until_healthy(server: subprocess.Popen[str], port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if server.poll() is not None:
            output = server.stdout.read() if server.stdout else ""
            raise AssertionError(f"the server exited before it was ready:\n{output}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the server did not become healthy"
        time.sleep(0.2)


@contextlib.contextmanager
def serving(data_dir: Path, *args: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """`headwater serve` on the embedded default, healthy; killed if the block leaves it running."""
    port = free_port()
    server = subprocess.Popen(
        [HEADWATER, "serve", "--port", str(port), *args],
        env=embedded_env(data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=data_dir.parent,
    )
    try:
        wait_until_healthy(server, port)
        yield server, port
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
