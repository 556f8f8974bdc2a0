"""Embedded PostgreSQL: what `headwater serve` runs when HEADWATER_DATABASE_URL is unset.

``start_embedded(data_dir)`` starts a private PostgreSQL server whose data lives in the data dir
(HEADWATER_DATA_DIR, default ``~/.local/share/headwater``), creates the ``headwater`` database if it
is missing, and returns an :class:`EmbeddedPostgres` with a ``postgresql://`` URL for asyncpg. The
data persists: a later start on the same data dir reuses the cluster and gives the same URL.

Which PostgreSQL
    1. The machine's own binaries: ``PG_BINDIR`` if set (it must then be valid), else the newest
       ``/usr/lib/postgresql/*/bin`` (Debian/Ubuntu layout), else ``pg_ctl`` on PATH.
    2. Else the ``pgserver`` wheel (PostgreSQL 16 shipped inside a Python wheel).
    3. Else :class:`EmbeddedPostgresError`, naming what is missing.
    A cluster keeps the kind that created it: a data dir made with the system's PostgreSQL 15 needs
    PostgreSQL 15 binaries later on too (PostgreSQL cannot open another major version's files), and
    one made by pgserver keeps using pgserver.

Layout of the data dir
    ``embedded.lock``   held while a server started from this data dir runs (one Headwater per dir)
    ``postgres/``       the cluster (or a symlink to it, see "As root"), owned by the server's user:
        ``data/``              PGDATA (system binaries) or ``pgserver/`` (pgserver)
        ``run/``               unix socket directory (mode 0700)
        ``server.log``         server log, rotated at start once it passes 10 MB
        ``superuser.password`` password of the ``postgres`` role for TCP connections (mode 0600)
        ``port``               the TCP port, only when the server has to listen on TCP

Connections
    The server listens on a unix socket in ``postgres/run`` only (``listen_addresses = ''``); local
    connections use trust authentication and the socket directory is private to the server's
    user (root can reach it anyway). When a socket cannot be used there (the socket path would pass
    the 107-byte limit, contains a comma, or the file system refuses sockets) it listens on
    127.0.0.1 instead, with password authentication, on a port chosen once per data dir and kept in
    ``postgres/port`` so restarts give the same URL (a new port is chosen only if that one is
    taken). These settings are written to ``data/headwater.conf`` at every start, included at the
    end of postgresql.conf; other settings can be changed in postgresql.conf.

As non-root
    initdb, pg_ctl and the server run as the current user.

As root
    PostgreSQL refuses to run as root, so initdb, pg_ctl and the server run as the ``postgres``
    system user (the Debian package creates it), exactly like ``runuser -u postgres --`` but
    without needing runuser: the cluster directory is chowned to ``postgres``. That user must be
    able to traverse every parent folder of the cluster. A data dir under ``/root`` (mode 0700) is
    not traversable, and Headwater does not loosen the permissions of anyone's home. Instead the
    cluster is placed in ``/var/lib/headwater/<name>-<hash of the data dir path>/`` and
    ``<data dir>/postgres`` is made a symlink to it; this is printed on stderr when it happens and
    shows in ``how``. The placement depends only on the data dir path, so restarts find the same
    cluster even if the symlink is removed; to start afresh, delete both the data dir and the
    folder it points to. To keep everything in one place instead, set HEADWATER_DATA_DIR to a
    folder ``postgres`` can traverse (for example ``/var/lib/headwater/data``). A
    ``<data dir>/postgres`` symlink made by hand is followed too, so the cluster can live anywhere.
    Without a ``postgres`` user the pgserver wheel is used: as root it creates a system user
    ``pgserver`` (``useradd``) and runs the server as that user; this is printed when it happens.
    pgserver also makes every parent of its cluster readable and traversable by all users, so
    Headwater hands it a data dir whose parents already are (else the same relocation applies).

Restarts after a crash
    A server left running by a Headwater process that was killed is stopped (fast) and started
    again. A ``postmaster.pid`` whose process is gone, or whose PID now belongs to an unrelated
    process (after a reboot or in a container), is removed once no process of the cluster is alive
    (Linux: found through ``/proc/*/cwd``); PostgreSQL then runs its normal crash recovery.

Stopping
    ``stop()`` does a fast shutdown (clients are disconnected, everything committed is kept) and
    may be called any number of times; it also runs at interpreter exit, and the object is a
    context manager. Only the process that started the server stops it, so forked workers that
    inherit the object do not.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import logging
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from types import TracebackType

DATABASE = "headwater"
SUPERUSER = "postgres"  # the database role; unrelated to the system user below
SYSTEM_USER = "postgres"  # the system user that runs the server when Headwater runs as root
PGSERVER_SYSTEM_USER = "pgserver"  # the user pgserver creates and uses when run as root
RELOCATION_ROOT = Path("/var/lib/headwater")
DEBIAN_ROOT = Path("/usr/lib/postgresql")
SOCKET_PORT = 5432  # the socket directory is private, so the usual port never clashes
START_TIMEOUT_S = 120  # crash recovery after a kill can take a while on a big cluster
STOP_TIMEOUT_S = 60
LOG_ROTATE_BYTES = 10 * 1024 * 1024

_SUN_PATH_MAX = 107  # sockaddr_un.sun_path is 108 bytes with the final NUL
_SHELL_UNSAFE = set('"$`\\\n')  # pg_ctl puts paths in double quotes inside a /bin/sh command line

Backend = Literal["auto", "system", "pgserver"]


class EmbeddedPostgresError(RuntimeError):
    """The embedded PostgreSQL could not be started; the message says what is missing or wrong."""


# --------------------------------------------------------------------------------------------
# The result


class EmbeddedPostgres:
    """A running embedded PostgreSQL; ``stop()`` ends it (idempotent), also as a context manager."""

    def __init__(
        self,
        *,
        url: str,
        data_dir: Path,
        how: str,
        backend: str,
        version: str,
        cluster_dir: Path,
        socket_dir: Path | None,
        port: int,
        stop_server: Callable[[], None],
        lock: _DataDirLock,
    ) -> None:
        self.url = url
        self.data_dir = data_dir
        self.how = how
        self.backend = backend  # "system" or "pgserver"
        self.version = version  # e.g. "15.20"
        self.cluster_dir = cluster_dir
        self.socket_dir = socket_dir  # None when listening on 127.0.0.1
        self.port = port
        self._stop_server = stop_server
        self._lock = lock
        self._owner_pid = os.getpid()
        self._stopped = False
        self._stop_mutex = threading.Lock()
        atexit.register(self.stop)

    @property
    def running(self) -> bool:
        """False once stop() has run in this process."""
        return not self._stopped

    def stop(self) -> None:
        """Fast shutdown of the server; does nothing after the first call or in another process."""
        with self._stop_mutex:
            if self._stopped or os.getpid() != self._owner_pid:
                return
            self._stopped = True
            try:
                self._stop_server()
            finally:
                self._lock.release()
                atexit.unregister(self.stop)

    def __enter__(self) -> EmbeddedPostgres:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<EmbeddedPostgres {state}: {self.how}>"


# --------------------------------------------------------------------------------------------
# Finding PostgreSQL


@dataclass(frozen=True)
class PostgresBinaries:
    """A folder holding initdb, pg_ctl, postgres and psql of one PostgreSQL version."""

    bindir: Path
    version: str  # as printed by pg_ctl --version, e.g. "15.20"

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    def __getitem__(self, program: str) -> str:
        return str(self.bindir / program)


_REQUIRED_PROGRAMS = ("initdb", "pg_ctl", "postgres", "psql")


def _binaries_in(bindir: Path) -> PostgresBinaries | None:
    """The binaries in bindir with their version, or None when some program is missing or broken."""
    if not all(os.access(bindir / name, os.X_OK) for name in _REQUIRED_PROGRAMS):
        return None
    try:
        out = subprocess.run(
            [str(bindir / "pg_ctl"), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
            stdin=subprocess.DEVNULL,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"\(PostgreSQL\)\s+(\d+(?:\.\d+)?)", out)
    return PostgresBinaries(bindir, match.group(1)) if match else None


def find_system_binaries(
    env: Mapping[str, str] | None = None,
    *,
    search_root: Path = DEBIAN_ROOT,
    major: int | None = None,
) -> PostgresBinaries | None:
    """The machine's PostgreSQL: PG_BINDIR, else the newest search_root/*/bin, else pg_ctl on PATH.

    With ``major``, only binaries of that major version qualify. A PG_BINDIR that lacks a program
    or has the wrong major version is an error rather than silently passed over.
    """
    env = os.environ if env is None else env
    if env.get("PG_BINDIR"):
        bindir = Path(env["PG_BINDIR"]).expanduser()
        found = _binaries_in(bindir)
        if found is None:
            missing = [p for p in _REQUIRED_PROGRAMS if not os.access(bindir / p, os.X_OK)]
            detail = f"it lacks {', '.join(missing)}" if missing else "pg_ctl --version failed"
            raise EmbeddedPostgresError(f"PG_BINDIR={bindir} is not a PostgreSQL bin folder: {detail}")
        if major is not None and found.major != major:
            raise EmbeddedPostgresError(
                f"PG_BINDIR={bindir} holds PostgreSQL {found.version}, but the cluster needs {major}"
            )
        return found

    candidates: list[tuple[int, Path]] = []
    with contextlib.suppress(OSError):
        for child in search_root.iterdir():
            if child.name.isdigit() and (child / "bin").is_dir():
                candidates.append((int(child.name), child / "bin"))
    for _, bindir in sorted(candidates, reverse=True):
        found = _binaries_in(bindir)
        if found is not None and (major is None or found.major == major):
            return found

    on_path = shutil.which("pg_ctl", path=env.get("PATH", os.defpath))
    if on_path:
        found = _binaries_in(Path(os.path.realpath(on_path)).parent)
        if found is not None and (major is None or found.major == major):
            return found
    return None


def _import_pgserver():  # -> the pgserver module or None
    """The pgserver module, or None when it is not installed or has no binaries for this platform."""
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset; pgserver copes with its fallback.
            warnings.simplefilter("ignore")
            import pgserver
            from pgserver import _commands
    except Exception:  # any import failure means "not usable"
        return None
    if not (_commands.POSTGRES_BIN_PATH / "pg_ctl").exists():
        return None
    return pgserver


# --------------------------------------------------------------------------------------------
# Users, processes and files


@dataclass(frozen=True)
class _RunAs:
    """The system user that runs initdb, pg_ctl and the server when Headwater runs as root."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str

    @classmethod
    def lookup(cls, name: str) -> _RunAs | None:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            return None
        groups = tuple(os.getgrouplist(name, entry.pw_gid))
        return cls(name, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir)

    def chown(self, path: Path) -> None:
        os.chown(path, self.uid, self.gid, follow_symlinks=False)


def _child_env(run_as: _RunAs | None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    # PG* variables (PGPORT, PGHOST, PGDATA, ...) would redirect pg_ctl and psql: drop them all.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    if run_as is not None:
        env.update(HOME=run_as.home, USER=run_as.name, LOGNAME=run_as.name)
    if extra:
        env.update(extra)
    return env


def _run(
    cmd: list[str],
    *,
    run_as: _RunAs | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a program (as run_as when given); output goes through files, never pipes.

    pg_ctl start leaves a server behind that could keep inherited pipes open; files cannot hang.
    """
    switch: dict[str, object] = {}
    if run_as is not None:
        switch = {"user": run_as.uid, "group": run_as.gid, "extra_groups": list(run_as.groups)}
    with tempfile.TemporaryFile("w+") as out:
        try:
            proc = subprocess.run(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
                env=dict(env) if env is not None else _child_env(run_as),
                cwd=str(cwd) if cwd else "/",
                timeout=timeout,
                check=False,
                **switch,  # type: ignore[arg-type]
            )
        except subprocess.TimeoutExpired as exc:
            raise EmbeddedPostgresError(f"{Path(cmd[0]).name} did not finish in {timeout:g} s") from exc
        out.seek(0)
        return subprocess.CompletedProcess(cmd, proc.returncode, out.read(), "")


def _can_traverse(path: Path, run_as: _RunAs) -> bool:
    """Whether run_as can reach path (search permission on it and every parent, ACLs included)."""
    test = shutil.which("test") or "/usr/bin/test"
    return _run([test, "-x", str(path)], run_as=run_as, timeout=30).returncode == 0


def _others_can_traverse(path: Path) -> bool:
    """Whether any user can list and enter path and its parents (what pgserver needs as root)."""
    want = stat.S_IROTH | stat.S_IXOTH
    for folder in [path, *path.parents]:
        try:
            if folder.stat().st_mode & want != want:
                return False
        except OSError:
            return False
    return True


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


def _write_file(path: Path, text: str, mode: int, run_as: _RunAs | None) -> None:
    """Write text atomically with the given mode, owned by run_as when given."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(tmp, mode)
    if run_as is not None:
        run_as.chown(tmp)
    os.replace(tmp, path)


def _ensure_dir(path: Path, mode: int, run_as: _RunAs | None) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if run_as is not None:
        st = path.stat()
        if st.st_uid != run_as.uid:
            run_as.chown(path)
    if stat.S_IMODE(path.stat().st_mode) != mode:
        os.chmod(path, mode)


def _check_path(path: Path) -> None:
    bad = sorted(_SHELL_UNSAFE & set(str(path)))
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        raise EmbeddedPostgresError(
            f"{path} contains {shown}, which pg_ctl cannot pass to the server: choose another data dir"
        )


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
            raise EmbeddedPostgresError(
                f"{path.parent} is in use by another Headwater process (pid {holder}); "
                "stop it, or give this one its own HEADWATER_DATA_DIR"
            ) from None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the flock
            self._fd = None


def _say(message: str) -> None:
    print(f"headwater: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Where the cluster lives


def _relocation_target(data_dir: Path) -> Path:
    digest = hashlib.sha256(str(data_dir).encode()).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", data_dir.name) or "data"
    return RELOCATION_ROOT / f"{name}-{digest}"


def _existing_kind(cluster: Path) -> tuple[str, int | None] | None:
    """("system", major) or ("pgserver", major) for an initialised cluster, else None."""
    for kind, sub in (("system", "data"), ("pgserver", "pgserver")):
        version_file = cluster / sub / "PG_VERSION"
        if version_file.exists():
            raw = version_file.read_text().strip()
            return kind, int(raw) if raw.isdigit() else None
    return None


def _make_data_dir(data_dir: Path, as_root: bool) -> None:
    if data_dir.is_dir():
        return
    if data_dir.exists():
        raise EmbeddedPostgresError(f"data dir {data_dir} exists and is not a folder")
    data_dir.mkdir(parents=True, exist_ok=True)
    # As root the cluster inside is private to its owner already, and the data dir itself must be
    # traversable by the server's user. As anyone else, keep it private.
    os.chmod(data_dir, 0o755 if as_root else 0o700)


# --------------------------------------------------------------------------------------------
# Starting


def start_embedded(
    data_dir: Path,
    *,
    backend: Backend = "auto",
    say: Callable[[str], None] | None = None,
) -> EmbeddedPostgres:
    """Start (initialising if needed) the PostgreSQL server of data_dir and return it.

    backend: "auto" (system binaries, else pgserver), "system" or "pgserver".
    say: where notices go (relocation, pgserver's system user, a stale server); stderr by default.
    Raises EmbeddedPostgresError naming what is missing when no PostgreSQL can be started.
    """
    if backend not in ("auto", "system", "pgserver"):
        raise ValueError(f"backend must be 'auto', 'system' or 'pgserver', not {backend!r}")
    if os.name != "posix":
        raise EmbeddedPostgresError(
            "the embedded PostgreSQL needs Linux or macOS; set HEADWATER_DATABASE_URL"
        )
    say = say or _say
    as_root = os.geteuid() == 0
    data_dir = Path(os.path.abspath(Path(data_dir).expanduser()))
    try:
        _make_data_dir(data_dir, as_root)
        lock = _DataDirLock(data_dir / "embedded.lock")
    except OSError as exc:
        raise EmbeddedPostgresError(f"cannot use the data dir {data_dir}: {exc}") from exc
    try:
        return _start_locked(data_dir, backend, say, as_root, lock)
    except OSError as exc:
        lock.release()
        raise EmbeddedPostgresError(f"cannot start PostgreSQL in {data_dir}: {exc}") from exc
    except BaseException:
        lock.release()
        raise


def _start_locked(
    data_dir: Path, backend: Backend, say: Callable[[str], None], as_root: bool, lock: _DataDirLock
) -> EmbeddedPostgres:
    link = data_dir / "postgres"
    cluster: Path | None = None
    if link.is_symlink() or link.exists():
        cluster = Path(os.path.realpath(link))
    elif as_root and _existing_kind(_relocation_target(data_dir)):
        cluster = _relocation_target(data_dir)
        link.symlink_to(cluster, target_is_directory=True)
        say(f"reusing the cluster of {data_dir} in {cluster} (linked again from {link})")

    system_user = _RunAs.lookup(SYSTEM_USER) if as_root else None
    use, bins = _choose(cluster, backend, as_root, system_user)
    if as_root:
        cluster = _place_as_root(data_dir, cluster, use, system_user, say)
    elif cluster is None:
        cluster = link
    _check_path(cluster)
    where = "" if cluster.is_relative_to(data_dir) else f" (linked from {link})"
    if use == "system":
        assert bins is not None
        return _start_system(data_dir, cluster, bins, system_user, say, lock, where)
    return _start_pgserver(data_dir, cluster, say, lock, as_root, where)


def _choose(
    cluster: Path | None, backend: Backend, as_root: bool, system_user: _RunAs | None
) -> tuple[str, PostgresBinaries | None]:
    """("system", binaries) or ("pgserver", None): an existing cluster decides, else what is there."""
    existing = _existing_kind(cluster) if cluster is not None else None
    if existing is not None:
        assert cluster is not None
        return _choose_for_existing(cluster, existing, backend, as_root, system_user)

    problems: list[str] = []
    if backend in ("auto", "system"):
        bins = find_system_binaries()
        if bins is None:
            problems.append(
                f"no PostgreSQL binaries (PG_BINDIR unset, nothing in {DEBIAN_ROOT}/*/bin, "
                "no pg_ctl on PATH)"
            )
        elif as_root and system_user is None:
            problems.append(
                f"PostgreSQL {bins.version} is in {bins.bindir}, but running as root needs "
                f"the system user {SYSTEM_USER!r}, which does not exist"
            )
        else:
            return "system", bins
        if backend == "system":
            raise EmbeddedPostgresError("cannot start the system PostgreSQL: " + "; ".join(problems))
    if _import_pgserver() is not None:
        return "pgserver", None
    problems.append("the pgserver package is not installed (or has no binaries for this platform)")
    raise EmbeddedPostgresError(
        "no PostgreSQL to embed: "
        + "; ".join(problems)
        + ". Install PostgreSQL (e.g. apt-get install postgresql) or pgserver, "
        "or set HEADWATER_DATABASE_URL to an existing server"
    )


def _choose_for_existing(
    cluster: Path,
    existing: tuple[str, int | None],
    backend: Backend,
    as_root: bool,
    system_user: _RunAs | None,
) -> tuple[str, PostgresBinaries | None]:
    kind, major = existing
    if backend not in ("auto", kind):
        raise EmbeddedPostgresError(
            f"the cluster in {cluster} was made with {kind}; it cannot be opened with {backend}"
        )
    if kind == "pgserver":
        return kind, None
    bins = find_system_binaries(major=major)
    if bins is None:
        raise EmbeddedPostgresError(
            f"the cluster in {cluster} was made by PostgreSQL {major}, whose binaries are "
            f"not found: install postgresql-{major} or set PG_BINDIR"
        )
    if as_root and system_user is None:
        raise EmbeddedPostgresError(
            f"running as root needs the system user {SYSTEM_USER!r} to run PostgreSQL"
        )
    return kind, bins


def _place_as_root(
    data_dir: Path,
    cluster: Path | None,
    use: str,
    system_user: _RunAs | None,
    say: Callable[[str], None],
) -> Path:
    """Where the cluster lives when running as root.

    The server's user must be able to reach the cluster; a private data dir (under /root, say)
    sends a new cluster to RELOCATION_ROOT, linked from <data dir>/postgres.
    """
    link = data_dir / "postgres"
    reachable: Callable[[Path], bool]
    if use == "system":
        assert system_user is not None
        run_user = system_user

        def reachable(path: Path) -> bool:
            return _can_traverse(path, run_user)

        who = f"the system user {SYSTEM_USER!r}"
    else:
        reachable = _others_can_traverse
        who = "other users (pgserver's server user)"

    if cluster is not None:
        if not reachable(cluster.parent):
            raise EmbeddedPostgresError(
                f"{who} cannot reach the cluster in {cluster}: a parent folder is private. Make "
                f"the parents traversable (chmod o+x) or move the cluster and link it from {link}"
            )
        return cluster
    if reachable(data_dir):
        return link
    target = _relocation_target(data_dir)
    try:
        _ensure_dir(RELOCATION_ROOT, 0o755, None)
        _ensure_dir(target, 0o700, None)
    except OSError as exc:
        raise EmbeddedPostgresError(
            f"{who} cannot reach {data_dir}, and {target} cannot be created ({exc}); "
            f"set HEADWATER_DATA_DIR to a folder {who} can traverse"
        ) from exc
    link.symlink_to(target, target_is_directory=True)
    say(
        f"{who} cannot enter {data_dir} (a parent folder is private), so the database cluster "
        f"is kept in {target}, linked from {link}; set HEADWATER_DATA_DIR to a folder {who} can "
        "traverse to keep it in the data dir"
    )
    return target


# --------------------------------------------------------------------------------------------
# The system's PostgreSQL


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
        port = sock.getsockname()[1]
    if stored:
        say(f"port {stored} of the embedded PostgreSQL is taken; using {port} from now on")
    _write_file(port_file, f"{port}\n", 0o644, run_as)
    return port


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
        pid = _read_pid(path)
        if pid is not None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _rotate_log(log: Path) -> None:
    with contextlib.suppress(OSError):
        if log.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(log, log.with_name(log.name + ".1"))


def _log_tail(log: Path, lines: int = 25) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


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


def _socket_url(socket_dir: Path, port: int) -> str:
    return f"postgresql://{SUPERUSER}@/{DATABASE}?host={quote(str(socket_dir), safe='/')}&port={port}"


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


# --------------------------------------------------------------------------------------------
# The pgserver wheel


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
