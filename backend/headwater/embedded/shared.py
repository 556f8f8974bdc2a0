"""One embedded server per data dir, used by every command: the running one, else one started here.

``headwater serve`` keeps the embedded server running while it serves; the other commands
(``migrate``, ``spark ...``) must not start a second server on the same files, so they connect to
that one, with the URL its owner wrote to ``<data dir>/embedded.url``. When no process holds the
data dir, the command starts the server itself and stops it when done.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from headwater.embedded.instance import (
    URL_FILE,
    DataDirBusyError,
    EmbeddedPostgresError,
    shown_url,
)
from headwater.embedded.start import _say, start_embedded

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from types import TracebackType

    from headwater.embedded.instance import EmbeddedPostgres

# How long to wait for a server that another process is starting (or stopping): a start after a
# crash may run PostgreSQL's recovery first.
WAIT_FOR_OWNER_S = 150


class SharedPostgres:
    """The embedded server another process runs: its URL; stopping it is left to that process."""

    def __init__(self, url: str, data_dir: Path, owner_pid: str) -> None:
        self.url = url
        self.how = f"the embedded PostgreSQL of {data_dir}, run by pid {owner_pid}"
        self.shown_url = shown_url(url, data_dir)
        self.started_here = False

    def stop(self) -> None:
        """Nothing to do: the server belongs to the process that started it."""

    def __enter__(self) -> SharedPostgres:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def use_embedded(
    data_dir: Path,
    *,
    say: Callable[[str], None] = _say,
    wait_s: float = WAIT_FOR_OWNER_S,
) -> EmbeddedPostgres | SharedPostgres:
    """The server of data_dir: joined if another process runs it, else started (``started_here``).

    say: where notices go, as for ``start_embedded``.
    """
    deadline = time.monotonic() + wait_s
    waiting = False
    while True:
        try:
            return start_embedded(data_dir, say=say)
        except DataDirBusyError as busy:
            url = _published_url(data_dir)
            if url is not None:
                return SharedPostgres(url, data_dir, busy.holder)
            if not waiting:
                say(f"waiting for the embedded PostgreSQL that pid {busy.holder} is starting")
                waiting = True
            if time.monotonic() > deadline:
                raise EmbeddedPostgresError(
                    f"{data_dir} is held by pid {busy.holder}, whose embedded PostgreSQL has not "
                    f"come up within {wait_s:.0f} s; stop that process, or set HEADWATER_DATABASE_URL"
                ) from None
            time.sleep(0.2)  # its owner is starting the server (or stopping it)


def has_cluster(data_dir: Path) -> bool:
    """Whether an embedded cluster was ever made for data_dir (else a start would initialise one)."""
    return (data_dir / "postgres").exists()


def _published_url(data_dir: Path) -> str | None:
    try:
        return (data_dir / URL_FILE).read_text().strip() or None
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EmbeddedPostgresError(f"cannot read {data_dir / URL_FILE}: {exc}") from exc
