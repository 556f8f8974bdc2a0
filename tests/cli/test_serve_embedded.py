"""`headwater serve` on the embedded PostgreSQL: stopped with the server, however it is stopped."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.running import processes_under, serving

pytestmark = [pytest.mark.slow]

STOP_WITHIN_S = 30  # the grace period for open requests (10 s) plus a fast PostgreSQL shutdown


def stop_and_check(server: subprocess.Popen[str], sig: signal.Signals, scratch: Path) -> str:
    """Send sig; the server must exit 0 in time and leave no process of its instance behind."""
    started = time.monotonic()
    server.send_signal(sig)
    output, _ = server.communicate(timeout=STOP_WITHIN_S)
    assert server.returncode == 0, output
    assert time.monotonic() - started < STOP_WITHIN_S
    assert "embedded PostgreSQL stopped" in output, output
    assert not processes_under(scratch), output
    return output


def test_a_server_stopped_by_sigint_stops_its_embedded_postgres(scratch: Path) -> None:
    with serving(scratch / "data") as (server, _):
        stop_and_check(server, signal.SIGINT, scratch)


def test_sigterm_with_two_workers_stops_everything(scratch: Path) -> None:
    with serving(scratch / "data", "--workers", "2") as (server, _):
        stop_and_check(server, signal.SIGTERM, scratch)


def test_sigterm_stops_the_embedded_postgres_and_the_next_start_finds_no_server_left_over(
    scratch: Path,
) -> None:
    # The first start and stop are those of a server stopped by SIGTERM (as systemd, Docker and
    # Kubernetes stop it); the second start is on the data dir they left.
    with serving(scratch / "data") as (server, _):
        stop_and_check(server, signal.SIGTERM, scratch)
    with serving(scratch / "data") as (server, _):
        output = stop_and_check(server, signal.SIGTERM, scratch)
    assert "earlier run" not in output, output
