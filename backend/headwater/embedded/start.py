"""Starting: lock the data dir, choose the PostgreSQL, place the cluster, start the server."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from headwater.embedded.binaries import DEBIAN_ROOT, _import_pgserver, find_system_binaries
from headwater.embedded.instance import URL_FILE, EmbeddedPostgresError
from headwater.embedded.pgserver_server import _start_pgserver
from headwater.embedded.placement import (
    _check_path,
    _existing_kind,
    _make_data_dir,
    _place_as_root,
    _relocation_target,
)
from headwater.embedded.processes import _DataDirLock
from headwater.embedded.system import _start_system
from headwater.embedded.system_user import SYSTEM_USER, _RunAs

if TYPE_CHECKING:
    from collections.abc import Callable

    from headwater.embedded.binaries import PostgresBinaries
    from headwater.embedded.instance import EmbeddedPostgres

Backend = Literal["auto", "system", "pgserver"]


def _say(message: str) -> None:
    print(f"headwater: {message}", file=sys.stderr, flush=True)


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
        # Left by a run that was killed: nobody may connect with it before the server is up again.
        (data_dir / URL_FILE).unlink(missing_ok=True)
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
