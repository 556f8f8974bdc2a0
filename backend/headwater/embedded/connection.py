"""How clients reach the server (a private unix socket, else 127.0.0.1), and the database."""

from __future__ import annotations

import contextlib
import os
import socket
from typing import TYPE_CHECKING
from urllib.parse import quote

from headwater.embedded.instance import EmbeddedPostgresError
from headwater.embedded.processes import _read_pid
from headwater.embedded.system_user import _child_env, _run, _write_file

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from headwater.embedded.system_user import _RunAs

DATABASE = "headwater"
SUPERUSER = "postgres"  # the database role; unrelated to the system user below
SOCKET_PORT = 5432  # the socket directory is private, so the usual port never clashes
_SUN_PATH_MAX = 107  # sockaddr_un.sun_path is 108 bytes with the final NUL


def _conf_quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _socket_usable(run_dir: Path) -> bool:
    probe = run_dir / f".s.PGSQL.{SOCKET_PORT}"
    if len(os.fsencode(probe)) > _SUN_PATH_MAX or "," in str(run_dir):
        return False  # too long for a unix socket, or not expressible in a connection URL
    test = run_dir / ".headwater-socket-probe"
    with contextlib.suppress(FileNotFoundError):
        test.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(test))
    except OSError:
        return False
    finally:
        sock.close()
        with contextlib.suppress(FileNotFoundError):
            test.unlink()
    return True


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _tcp_port(cluster: Path, run_as: _RunAs | None, say: Callable[[str], None]) -> int:
    port_file = cluster / "port"
    stored = _read_pid(port_file)  # same format: one integer
    if stored and _port_free(stored):
        return stored
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    if stored:
        say(f"port {stored} of the embedded PostgreSQL is taken; using {port} from now on")
    _write_file(port_file, f"{port}\n", 0o644, run_as)
    return port


def _listen_settings(
    cluster: Path, run_dir: Path, run_as: _RunAs | None, say: Callable[[str], None]
) -> tuple[Path | None, int, list[str]]:
    """(socket dir or None for TCP, port, lines of headwater.conf)."""
    if _socket_usable(run_dir):
        quoted_dir = _conf_quote(f'"{run_dir}"')  # a quoted list entry: commas and spaces are fine
        return (
            run_dir,
            SOCKET_PORT,
            [
                "listen_addresses = ''",
                f"port = {SOCKET_PORT}",
                f"unix_socket_directories = {quoted_dir}",
            ],
        )
    port = _tcp_port(cluster, run_as, say)
    return (
        None,
        port,
        ["listen_addresses = '127.0.0.1'", f"port = {port}", "unix_socket_directories = ''"],
    )


def _socket_url(socket_dir: Path, port: int) -> str:
    return f"postgresql://{SUPERUSER}@/{DATABASE}?host={quote(str(socket_dir), safe='/')}&port={port}"


def _ensure_database(
    psql: str, host: str, port: int, password: str | None, run_as: _RunAs | None = None
) -> None:
    extra = {"PGPASSWORD": password} if password else {}
    env = _child_env(run_as, extra)
    base = [psql, "-X", "-w", "-q", "-At", "-h", host, "-p", str(port), "-U", SUPERUSER]
    base += ["-d", "postgres"]
    found = _run([*base, "-c", f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'"], env=env)
    if found.returncode != 0:
        raise EmbeddedPostgresError(f"cannot query the embedded PostgreSQL: {found.stdout.strip()}")
    if found.stdout.strip() == "1":
        return
    created = _run([*base, "-c", f'CREATE DATABASE "{DATABASE}"'], env=env)
    if created.returncode != 0:
        raise EmbeddedPostgresError(f"cannot create database {DATABASE}: {created.stdout.strip()}")
