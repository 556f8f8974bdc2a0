"""A cluster's processes and lock files: leftovers of a killed run, and the data dir's own lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

from headwater.embedded.instance import DataDirBusyError, EmbeddedPostgresError

if TYPE_CHECKING:
    from collections.abc import Callable


def _cluster_processes(pgdata: Path) -> set[int]:
    """PIDs of the PostgreSQL processes of the cluster in pgdata: the postmaster and its children.

    Every PostgreSQL process changes into its data directory and keeps the command name
    ``postgres`` whatever its title says. Only Linux has /proc; elsewhere the answer is empty and
    PostgreSQL's own stale-lock handling applies.
    """
    target = os.path.realpath(pgdata)
    pids: set[int] = set()
    proc = Path("/proc")
    if not (proc / "self" / "cwd").exists():
        return pids
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if (
                os.readlink(entry / "cwd") == target
                and (entry / "comm").read_text().strip() == "postgres"
            ):
                pids.add(int(entry.name))
    return pids


def _read_pid(path: Path) -> int | None:
    try:
        first = path.read_text().split("\n", 1)[0].strip()
    except OSError:
        return None
    try:
        return abs(int(first))  # the socket lock file stores -PID while the postmaster starts
    except ValueError:
        return None


def _clear_leftovers(
    pgdata: Path,
    socket_dir: Path | None,
    stop: Callable[[], object],
    say: Callable[[str], None],
) -> None:
    """Stop a server left running by a killed Headwater, and remove lock files nobody holds."""
    procs = _cluster_processes(pgdata)
    postmaster = _read_pid(pgdata / "postmaster.pid")
    if postmaster is not None and postmaster in procs:
        say(f"a server from an earlier run still runs on {pgdata} (pid {postmaster}); restarting it")
        stop()
    deadline = time.monotonic() + 15
    while procs and time.monotonic() < deadline:
        # children of a killed postmaster notice its death and exit within moments
        time.sleep(0.1)
        procs = _cluster_processes(pgdata)
    for pid in procs:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while procs and time.monotonic() < deadline:
        time.sleep(0.05)
        procs = _cluster_processes(pgdata)
    if procs:
        raise EmbeddedPostgresError(f"processes {sorted(procs)} still use {pgdata} and do not exit")
    if not Path("/proc/self/cwd").exists():
        return  # cannot tell whose a PID is: leave the lock files to PostgreSQL
    # No process of this cluster is alive: any lock file left is stale, even if its PID was reused.
    stale = [pgdata / "postmaster.pid"]
    if socket_dir is not None:
        stale += list(socket_dir.glob(".s.PGSQL.*.lock"))
    for path in stale:
        holder = _read_pid(path)
        if holder is not None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


class _DataDirLock:
    """An exclusive flock on <data dir>/embedded.lock, released with the process at the latest."""

    def __init__(self, path: Path) -> None:
        self._fd: int | None = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self._fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(self._fd)
            self._fd = None
            raise DataDirBusyError(
                f"{path.parent} is in use by another Headwater process (pid {holder}); "
                "stop it, or give this one its own HEADWATER_DATA_DIR",
                holder,
            ) from None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the flock
            self._fd = None
