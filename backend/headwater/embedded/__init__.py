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
    ``embedded.url``    the server's URL while it runs (mode 0600: over TCP it holds the password)
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

Sharing
    Only one process starts the server of a data dir; ``use_embedded(data_dir)`` is what commands
    call: it joins the server another Headwater process runs (``SharedPostgres``, through
    ``embedded.url``; stopping it is left to its owner), else starts it (``started_here``).

Stopping
    ``stop()`` does a fast shutdown (clients are disconnected, everything committed is kept) and
    may be called any number of times; it also runs at interpreter exit, and the object is a
    context manager. Only the process that started the server stops it, so forked workers that
    inherit the object do not.
"""

from headwater.embedded.binaries import PostgresBinaries, find_system_binaries
from headwater.embedded.instance import DataDirBusyError, EmbeddedPostgres, EmbeddedPostgresError
from headwater.embedded.shared import SharedPostgres, has_cluster, use_embedded
from headwater.embedded.start import Backend, start_embedded

__all__ = [
    "Backend",
    "DataDirBusyError",
    "EmbeddedPostgres",
    "EmbeddedPostgresError",
    "PostgresBinaries",
    "SharedPostgres",
    "find_system_binaries",
    "has_cluster",
    "start_embedded",
    "use_embedded",
]
