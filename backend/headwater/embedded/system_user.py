"""Running PostgreSQL's programs as the server's system user, and the files that user owns."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from headwater.embedded.instance import EmbeddedPostgresError

if TYPE_CHECKING:
    from collections.abc import Mapping

SYSTEM_USER = "postgres"  # the system user that runs the server when Headwater runs as root


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
                user=run_as.uid if run_as else None,
                group=run_as.gid if run_as else None,
                extra_groups=list(run_as.groups) if run_as else None,
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
