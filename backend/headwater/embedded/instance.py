"""A running embedded PostgreSQL, and the error raised when none can be started."""

from __future__ import annotations

import atexit
import os
import threading
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from types import TracebackType


# In the data dir, while a server started from it runs: the URL other processes connect with.
URL_FILE = "embedded.url"


def shown_url(url: str, data_dir: Path) -> str:
    """The URL to print: as is over the socket; over TCP without its password, which stays in a file."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}@{parts.hostname}:{parts.port}"
    bare = urlunsplit(parts._replace(netloc=netloc))
    return f"{bare} (with the password: the whole URL is in {data_dir / URL_FILE})"


class EmbeddedPostgresError(RuntimeError):
    """The embedded PostgreSQL could not be started; the message says what is missing or wrong."""


class DataDirBusyError(EmbeddedPostgresError):
    """Another process holds the data dir: it started (or is starting) the server of that dir."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message)
        self.holder = holder  # its pid, as written in the lock file


class Lock(Protocol):
    """What a running server holds its data dir by (processes._DataDirLock, which raises this
    module's errors: named here by what it does, so neither module imports the other's)."""

    def release(self) -> None: ...


class EmbeddedPostgres:
    """A running embedded PostgreSQL; ``stop()`` ends it (idempotent), also as a context manager."""

    started_here = True  # unlike ``SharedPostgres``, which another process runs

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
        lock: Lock,
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
        # Readable by this user only: over TCP the URL holds the password.
        self._url_file = data_dir / URL_FILE
        fd = os.open(self._url_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(url + "\n")

    @property
    def shown_url(self) -> str:
        """The URL as printed for people: the password, if any, is left in the URL file."""
        return shown_url(self.url, self.data_dir)

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
                self._url_file.unlink(missing_ok=True)
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
