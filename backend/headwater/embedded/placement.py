"""Where the cluster lives: in the data dir, or relocated when the server's user cannot reach it."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from headwater.embedded.instance import EmbeddedPostgresError
from headwater.embedded.system_user import (
    SYSTEM_USER,
    _can_traverse,
    _ensure_dir,
    _others_can_traverse,
    _RunAs,
)

if TYPE_CHECKING:
    from collections.abc import Callable

RELOCATION_ROOT = Path("/var/lib/headwater")
_SHELL_UNSAFE = set('"$`\\\n')  # pg_ctl puts paths in double quotes inside a /bin/sh command line


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


def _check_path(path: Path) -> None:
    bad = sorted(_SHELL_UNSAFE & set(str(path)))
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        raise EmbeddedPostgresError(
            f"{path} contains {shown}, which pg_ctl cannot pass to the server: choose another data dir"
        )


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
