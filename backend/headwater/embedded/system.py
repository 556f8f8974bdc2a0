"""The machine's PostgreSQL: initdb once, then pg_ctl starts and stops the server."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import time
from typing import TYPE_CHECKING
from urllib.parse import quote

from headwater.embedded.connection import (
    DATABASE,
    SUPERUSER,
    _ensure_database,
    _listen_settings,
    _socket_url,
)
from headwater.embedded.instance import EmbeddedPostgres, EmbeddedPostgresError
from headwater.embedded.processes import _clear_leftovers, _cluster_processes, _read_pid
from headwater.embedded.system_user import _ensure_dir, _run, _write_file

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from headwater.embedded.binaries import PostgresBinaries
    from headwater.embedded.processes import _DataDirLock
    from headwater.embedded.system_user import _RunAs

START_TIMEOUT_S = 120  # crash recovery after a kill can take a while on a big cluster
STOP_TIMEOUT_S = 60
LOG_ROTATE_BYTES = 10 * 1024 * 1024


def _initdb(bins: PostgresBinaries, cluster: Path, pgdata: Path, run_as: _RunAs | None) -> None:
    password = secrets.token_urlsafe(24)
    password_file = cluster / "superuser.password"
    _write_file(password_file, password + "\n", 0o600, run_as)
    staging = cluster / "data.initdb"
    if staging.exists():  # an earlier initdb was interrupted
        shutil.rmtree(staging)
    _ensure_dir(staging, 0o700, run_as)
    done = _run(
        [
            bins["initdb"],
            "-D",
            str(staging),
            "-U",
            SUPERUSER,
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            f"--pwfile={password_file}",
            "-E",
            "UTF8",
            "--no-locale",  # C collation: stable sort order, no glibc collation upgrades to worry about
            "--no-instructions",
        ],
        run_as=run_as,
        cwd=cluster,
        timeout=300,
    )
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise EmbeddedPostgresError(f"initdb failed in {cluster}:\n{done.stdout.strip()}")
    with open(staging / "postgresql.conf", "a") as conf:
        conf.write(
            "\n# Connection settings of Headwater's embedded server, rewritten at every start.\n"
            "include_if_exists = 'headwater.conf'\n"
        )
    staging.rename(pgdata)  # a cluster is either complete or absent


def _rotate_log(log: Path) -> None:
    with contextlib.suppress(OSError):
        if log.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(log, log.with_name(log.name + ".1"))


def _log_tail(log: Path, lines: int = 25) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


def _start_with_retries(
    pg_ctl: Callable[..., subprocess.CompletedProcess[str]],
    clear: Callable[[], None],
    log: Path,
    version: str,
) -> None:
    """pg_ctl start; once more after clearing leftovers if an old server's lock was in the way."""
    for attempt in range(3):
        started = pg_ctl(
            "-l", str(log), "-w", "-t", str(START_TIMEOUT_S), "start", timeout=START_TIMEOUT_S + 10
        )
        if started.returncode == 0:
            return
        tail = _log_tail(log)
        if attempt == 2 or ("lock file" not in tail and "shared memory block" not in tail):
            raise EmbeddedPostgresError(
                f"PostgreSQL {version} did not start:\n{started.stdout.strip()}\n"
                f"--- last lines of {log} ---\n{tail}"
            )
        time.sleep(0.5)
        clear()


def _start_system(
    data_dir: Path,
    cluster: Path,
    bins: PostgresBinaries,
    run_as: _RunAs | None,
    say: Callable[[str], None],
    lock: _DataDirLock,
    where: str,
) -> EmbeddedPostgres:
    pgdata = cluster / "data"
    run_dir = cluster / "run"
    log = cluster / "server.log"
    _ensure_dir(cluster, 0o700, run_as)
    if not (pgdata / "PG_VERSION").exists():
        _initdb(bins, cluster, pgdata, run_as)
    _ensure_dir(run_dir, 0o700, run_as)
    socket_dir, port, conf = _listen_settings(cluster, run_dir, run_as, say)
    _write_file(
        pgdata / "headwater.conf",
        "# Written by Headwater at every start of the embedded server: edits here are lost.\n"
        + "\n".join(conf)
        + "\n",
        0o600,
        run_as,
    )

    def pg_ctl(*args: str, timeout: float = STOP_TIMEOUT_S + 10) -> subprocess.CompletedProcess[str]:
        cmd = [bins["pg_ctl"], "-D", str(pgdata), *args]
        return _run(cmd, run_as=run_as, cwd=cluster, timeout=timeout)

    def stop_server() -> None:
        done = pg_ctl("-m", "fast", "-w", "-t", str(STOP_TIMEOUT_S), "stop")
        if done.returncode != 0 and _read_pid(pgdata / "postmaster.pid") in _cluster_processes(pgdata):
            pg_ctl("-m", "immediate", "-w", "stop")

    _clear_leftovers(pgdata, socket_dir, stop_server, say)
    _rotate_log(log)
    if not log.exists():
        _write_file(log, "", 0o600, run_as)
    _start_with_retries(
        pg_ctl, lambda: _clear_leftovers(pgdata, socket_dir, stop_server, say), log, bins.version
    )

    try:
        if socket_dir is not None:
            host, password = str(socket_dir), None
            url = _socket_url(socket_dir, port)
            listen = f"socket in {socket_dir}"
        else:
            host = "127.0.0.1"
            password = (cluster / "superuser.password").read_text().strip()
            url = f"postgresql://{SUPERUSER}:{quote(password, safe='')}@{host}:{port}/{DATABASE}"
            listen = f"listening on {host}:{port} (password in {cluster / 'superuser.password'})"
        _ensure_database(bins["psql"], host, port, password)
    except BaseException:
        stop_server()
        raise

    user = f", run as system user {run_as.name}" if run_as is not None else ""
    how = f"PostgreSQL {bins.version} from {bins.bindir}{user}, data in {pgdata}{where}, {listen}"
    return EmbeddedPostgres(
        url=url,
        data_dir=data_dir,
        how=how,
        backend="system",
        version=bins.version,
        cluster_dir=cluster,
        socket_dir=socket_dir,
        port=port,
        stop_server=stop_server,
        lock=lock,
    )
