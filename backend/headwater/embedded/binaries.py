"""Finding PostgreSQL: the machine's binaries (PG_BINDIR, the Debian layout, PATH) or pgserver."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from headwater.embedded.instance import EmbeddedPostgresError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import ModuleType

DEBIAN_ROOT = Path("/usr/lib/postgresql")


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


def _import_pgserver() -> ModuleType | None:
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
