"""Whether a failure is the database's (it cannot take the work now, whatever was asked) or the
work's own: one answer for HTTP (503 or not), ingest (fail the request, or only the event that
fails) and the Kafka consumer (pause, or dead-letter the message)."""

from __future__ import annotations

import asyncpg

# SQLSTATE classes that say the database cannot take work now, whatever it is: connection
# exceptions (08), authorization (28: a changed password), an unknown database (3D: renamed away), a
# missing table or function or privilege (42: migrations not applied), insufficient resources (53),
# object state (55: ALLOW_CONNECTIONS false, a lock timeout), operator intervention (57: shutdown,
# a statement timeout) and system errors (58: I/O). What an event's data can make fail is of other
# classes: data exceptions (22), integrity constraints (23), a trigger's exception (P0).
UNAVAILABLE_CLASSES = frozenset({"08", "28", "3D", "42", "53", "55", "57", "58"})


def is_database_unavailable(exc: BaseException) -> bool:
    """Whether an exception says the database cannot take work now (retry later)."""
    if isinstance(
        exc,
        OSError
        | TimeoutError
        | asyncpg.InterfaceError
        | asyncpg.PostgresConnectionError
        | asyncpg.exceptions.ConnectionDoesNotExistError,
    ):
        return True
    if isinstance(exc, asyncpg.PostgresError):
        return (exc.sqlstate or "")[:2] in UNAVAILABLE_CLASSES
    return False
