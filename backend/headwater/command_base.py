"""What every command shares: the error that stops it, its time arguments, its settings, and the
database it resolves, the same way for each.

The database is HEADWATER_DATABASE_URL (or a command's ``--database-url``); when neither is set,
it is the embedded PostgreSQL of HEADWATER_DATA_DIR: the server `headwater serve` runs, joined
while it runs, else started by the command and stopped when it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import logging
import re
import signal
import sys
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from headwater import times
from headwater.errors import MigrationError
from headwater.settings import Settings, get_settings

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    import asyncpg

    from headwater.ingest.normalize import AliasRule

# The database driver and the migrations are imported where a command uses them, so that `headwater`
# itself, and the commands that need no database (sql-lineage, export-schemas), start without them.

log = logging.getLogger("headwater")


_stop_asked = False


def handle_stops() -> None:
    """Ctrl-C and SIGTERM end a command with KeyboardInterrupt (its cleanup runs: an embedded
    PostgreSQL it started is stopped), even one that arrives while a child process is forked."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop)
    sys.unraisablehook = _unraisable


def _stop(_signum: int, _frame: object) -> None:
    global _stop_asked
    _stop_asked = True
    raise KeyboardInterrupt


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    # A stop raised where Python can only print and drop it (see raise_stop_if_lost): raised again
    # where the command goes on, so no traceback of it either.
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _stop_asked:
        return
    sys.__unraisablehook__(unraisable)


def raise_stop_if_lost() -> None:
    """Raise the KeyboardInterrupt of a stop asked while Python could not raise it.

    A signal that arrives while a child process is being forked runs its handler inside the fork's
    own hooks, which drop the exception and carry on: the command would go on to the end. Called
    where a command goes on after starting a process.
    """
    if _stop_asked:
        raise KeyboardInterrupt


class CommandError(Exception):
    """What stops a command that the user can fix: printed as one line, with a non-zero exit."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def time_argument(value: str) -> dt.datetime:
    """An argparse type: an RFC 3339 time, in UTC; one without an offset is UTC, as at ingest."""
    try:
        return times.parse_instant(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r} {exc}") from None


def check_time_range(since: dt.datetime | None, until: dt.datetime | None) -> None:
    """A usage error (exit 2) for a --since at or after --until: nothing could ever be selected."""
    if since is not None and until is not None and since >= until:
        raise CommandError(
            f"--since ({since.isoformat()}) must be before --until ({until.isoformat()})", 2
        )


# The largest value of a PostgreSQL bigint, which ids and row counts are stored or compared as.
BIGINT_MAX = 2**63 - 1
_INTEGER = re.compile(r"[+-]?[0-9]{1,30}")


def is_integer_text(value: str) -> bool:
    """Whether ``value`` is an integer in ASCII digits: int() also reads other scripts' digits
    (٣ is 3) and underscores, which no user means as a number."""
    return _INTEGER.fullmatch(value.strip()) is not None


def int_between(low: int, high: int = BIGINT_MAX) -> Callable[[str], int]:
    """An argparse type: an integer from ``low`` to ``high``; beyond either, an error naming them
    rather than a traceback from wherever the number would not fit."""

    def parse(value: str) -> int:
        if not is_integer_text(value):
            raise argparse.ArgumentTypeError(f"not an integer: {value!r}")
        number = int(value)
        if number < low:
            raise argparse.ArgumentTypeError(f"must be {low:,} or more, got {value}")
        if number > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:,}, got {value}")
        return number

    return parse


# A server that does not answer within this is as good as absent for a command about to start.
CONNECT_TIMEOUT_S = 15
_NO_DATABASE = (
    "start it, or set HEADWATER_DATABASE_URL (spark commands: --database-url) to one that runs"
)


class DatabaseUnreachableError(CommandError):
    """PostgreSQL is not there (yet): nothing answers, or it is still starting up."""


# While waiting for PostgreSQL, say so this often.
_WAIT_REPORT_S = 5


def _say(message: str) -> None:
    print(f"headwater: {message}", file=sys.stderr, flush=True)


def alias_rules_or_error(path: Path | None) -> list[AliasRule]:
    """The alias rules in ``path`` (none without one), or a CommandError saying what is wrong."""
    from headwater.ingest.aliases import load_alias_rules

    try:
        return load_alias_rules(path)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def load_settings() -> Settings:
    """The process's settings; a malformed HEADWATER_* variable is the user's to fix."""
    try:
        return get_settings()
    except ValueError as exc:
        raise CommandError(str(exc)) from exc


def describe(url: str) -> str:
    """Where a URL points, without its password: ``host:port/database`` or ``socket dir/database``."""
    try:
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        host = query.get("host", [parts.hostname or "localhost"])[0]
        port = query.get("port", [str(parts.port or 5432)])[0]
    except ValueError:
        return "(a URL that cannot be parsed)"
    database = parts.path.lstrip("/") or parts.username or "postgres"
    return f"{host}:{port}/{database}"


async def connect(url: str) -> asyncpg.Connection:
    """A connection to url, or a CommandError that says what is wrong and what to do."""
    import asyncpg

    where = describe(url)
    try:
        return await asyncpg.connect(url, timeout=CONNECT_TIMEOUT_S)
    except TimeoutError:  # before OSError, of which it is a subclass
        raise DatabaseUnreachableError(
            f"PostgreSQL at {where} did not answer within {CONNECT_TIMEOUT_S} s; {_NO_DATABASE}"
        ) from None
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise DatabaseUnreachableError(
            f"cannot reach PostgreSQL at {where} ({reason}); {_NO_DATABASE}"
        ) from None
    except asyncpg.CannotConnectNowError as exc:  # starting up, shutting down, in recovery
        raise DatabaseUnreachableError(
            f"PostgreSQL at {where} is not accepting connections yet: {exc}"
        ) from None
    except asyncpg.InvalidCatalogNameError:
        raise CommandError(
            f"the database of {where} does not exist; create it (createdb) or fix the URL"
        ) from None
    except (asyncpg.InvalidPasswordError, asyncpg.InvalidAuthorizationSpecificationError) as exc:
        raise CommandError(
            f"PostgreSQL at {where} refused the login ({exc}); fix the user or password in the URL"
        ) from None
    except (asyncpg.ClientConfigurationError, ValueError) as exc:
        raise CommandError(f"not a usable postgresql:// URL: {exc}") from None
    except asyncpg.PostgresError as exc:
        raise CommandError(f"PostgreSQL at {where} refused the connection: {exc}") from None


async def connect_waiting(url: str, wait_s: float) -> asyncpg.Connection:
    """``connect``, retrying for up to ``wait_s`` seconds while PostgreSQL is not there yet.

    Only an absent or starting database is waited for: a wrong password, database or URL will
    not fix itself and fails at once.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    next_report = loop.time()
    while True:
        try:
            return await connect(url)
        except DatabaseUnreachableError as exc:
            now = loop.time()
            if now >= deadline:
                if wait_s:
                    raise DatabaseUnreachableError(f"{exc} (waited {wait_s:g} s)") from None
                raise
            if now >= next_report:
                _say(f"waiting for PostgreSQL at {describe(url)}, {deadline - now:.0f} s left: {exc}")
                next_report = now + _WAIT_REPORT_S
            await asyncio.sleep(min(0.5, deadline - now))


async def apply_migrations(url: str, wait_s: float = 0) -> list[str]:
    """Apply pending migrations on the database at ``url``; returns the names applied.

    ``wait_s``: how long to wait for a database that is not there yet (see ``connect_waiting``).
    """
    from headwater.db.migrate import migrate

    conn = await connect_waiting(url, wait_s)
    try:
        result = await migrate(conn)
        await warn_if_autovacuum_is_off(conn)
    except MigrationError as exc:
        raise CommandError(str(exc)) from None
    finally:
        await conn.close()
    return result.applied


async def check_migrated(url: str) -> None:
    """For commands that only read: the database must hold every migration (they do not migrate)."""
    from headwater.db.migrate import MIGRATIONS_DIR

    conn = await connect(url)
    try:
        applied: set[str] = set()
        if await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL"):
            applied = {r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")}
    finally:
        await conn.close()
    pending = [p.name for p in sorted(MIGRATIONS_DIR.glob("*.sql")) if p.name not in applied]
    if pending:
        state = "has no Headwater tables" if not applied else f"lacks {len(pending)} migration(s)"
        raise CommandError(f"the database at {describe(url)} {state}; run `headwater migrate` first")


async def warn_if_autovacuum_is_off(conn: asyncpg.Connection) -> bool:
    """Say so when nothing reclaims dead rows: runs and edges leave old row versions behind."""
    if await conn.fetchval("SELECT current_setting('autovacuum')::boolean"):
        return False
    log.warning(
        "PostgreSQL's autovacuum is off: the row versions ingest leaves behind (runs change "
        "state, edges are confirmed by each new run) are never reclaimed, "
        "and ingest and lineage queries slow down as they pile up. Turn autovacuum on, or run "
        "VACUUM (ANALYZE) on the database regularly (headwater spark backfill vacuums as it writes)."
    )
    return True


@contextlib.contextmanager
def database(url: str | None, data_dir: Path) -> Iterator[str]:
    """url if given, else the URL of the embedded server of data_dir for the duration of a block.

    The embedded server is joined if another Headwater process (`headwater serve`) runs it, else
    started here and stopped when the block ends. Either way its URL is printed, for other tools.
    """
    if url:
        yield url
        return
    from headwater.embedded import EmbeddedPostgresError, use_embedded

    try:
        embedded = use_embedded(data_dir, say=_say)
    except EmbeddedPostgresError as exc:
        raise CommandError(str(exc)) from None
    try:
        raise_stop_if_lost()  # PostgreSQL was forked meanwhile
        verb = "started" if embedded.started_here else "using"
        _say(f"HEADWATER_DATABASE_URL is not set; {verb} the embedded PostgreSQL: {embedded.how}")
        _say(f"its URL, for other tools and HEADWATER_DATABASE_URL: {embedded.shown_url}")
        yield embedded.url
    finally:
        if embedded.started_here:
            embedded.stop()
            _say("embedded PostgreSQL stopped")
