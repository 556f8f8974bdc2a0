"""The fallback: PostgreSQL 16 from the pgserver wheel."""

from __future__ import annotations

import contextlib
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING

from headwater.embedded.binaries import _import_pgserver
from headwater.embedded.connection import SOCKET_PORT, _ensure_database, _socket_url
from headwater.embedded.instance import EmbeddedPostgres, EmbeddedPostgresError
from headwater.embedded.processes import _clear_leftovers
from headwater.embedded.system import STOP_TIMEOUT_S, _log_tail
from headwater.embedded.system_user import _ensure_dir, _run, _RunAs

if TYPE_CHECKING:
    from collections.abc import Callable

    from headwater.embedded.processes import _DataDirLock

PGSERVER_SYSTEM_USER = "pgserver"  # the user pgserver creates and uses when run as root


def _pgserver_user_notice(say: Callable[[str], None]) -> None:
    if _RunAs.lookup(PGSERVER_SYSTEM_USER) is None:
        say(
            f"running as root: pgserver now creates the system user {PGSERVER_SYSTEM_USER!r} "
            "(useradd) and runs PostgreSQL as that user"
        )
    else:
        say(f"running as root: pgserver runs PostgreSQL as the system user {PGSERVER_SYSTEM_USER!r}")


def _start_pgserver(
    data_dir: Path,
    cluster: Path,
    say: Callable[[str], None],
    lock: _DataDirLock,
    as_root: bool,
    where: str,
) -> EmbeddedPostgres:
    pgserver = _import_pgserver()
    if pgserver is None:
        raise EmbeddedPostgresError(
            f"the cluster in {cluster} was made by the pgserver package, which is not installed"
        )
    from pgserver import _commands

    bindir: Path = _commands.POSTGRES_BIN_PATH
    if as_root:
        _pgserver_user_notice(say)
    # pgserver makes the parents of its data dir readable by its server user anyway
    _ensure_dir(cluster, 0o755 if as_root else 0o700, None)
    pgdata = cluster / "pgserver"

    def pg_ctl_stop(mode: str) -> None:
        if (pgdata / "PG_VERSION").exists():
            cmd = [str(bindir / "pg_ctl"), "-D", str(pgdata), "-m", mode, "-w", "stop"]
            run_as = _RunAs.lookup(PGSERVER_SYSTEM_USER) if as_root else None
            _run(cmd, run_as=run_as, timeout=STOP_TIMEOUT_S + 10)

    _clear_leftovers(pgdata, pgdata, lambda: pg_ctl_stop("fast"), say)
    pgserver_log = logging.getLogger("pgserver")
    if pgserver_log.level == logging.NOTSET:
        pgserver_log.setLevel(logging.WARNING)  # it logs every command it runs at INFO
    try:
        # cleanup_mode=None: pgserver only does its bookkeeping; stopping is ours, in fast mode
        server = pgserver.get_server(pgdata, cleanup_mode=None)
    except Exception as exc:
        tail = _log_tail(pgdata / "log")
        raise EmbeddedPostgresError(
            f"pgserver did not start PostgreSQL in {pgdata}: {exc}\n{tail}"
        ) from exc

    def stop_server() -> None:
        # pgserver's own stop waits for clients to disconnect (smart mode); ours does not.
        pg_ctl_stop("fast")
        with contextlib.suppress(Exception):
            server.cleanup()

    try:
        info = server.get_postmaster_info()
        if info.socket_dir is None:
            raise EmbeddedPostgresError("pgserver started a server without a unix socket")
        socket_dir = Path(info.socket_dir)
        port = int(info.port or SOCKET_PORT)
        _ensure_database(str(bindir / "psql"), str(socket_dir), port, None)
    except BaseException:
        stop_server()
        raise
    match = re.search(r"\(PostgreSQL\)\s+(\S+)", _run([str(bindir / "pg_ctl"), "--version"]).stdout)
    version = match.group(1) if match else "16"
    user = f", run as system user {PGSERVER_SYSTEM_USER}" if as_root else ""
    how = (
        f"PostgreSQL {version} from the pgserver package ({bindir}){user}, data in {pgdata}{where}, "
        f"socket in {socket_dir}"
    )
    return EmbeddedPostgres(
        url=_socket_url(socket_dir, port),
        data_dir=data_dir,
        how=how,
        backend="pgserver",
        version=version,
        cluster_dir=cluster,
        socket_dir=socket_dir,
        port=port,
        stop_server=stop_server,
        lock=lock,
    )
