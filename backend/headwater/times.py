"""Times from clients and users, as instants PostgreSQL can hold: in UTC, strictly inside years 1 to
9999.

ISO 8601 allows offsets up to 23:59 where PostgreSQL reads at most 15:59, and the instants at either
end are the ones the driver writes as -infinity and infinity (or cannot write at all), so a time is
checked and turned to UTC where it comes in: an event's eventTime, an ``asOf``, a command's
``--since``. A time without an offset is read as UTC, as OpenLineage's own clients do.
"""

from __future__ import annotations

import datetime as dt
import re

_MIN = dt.datetime.min.replace(tzinfo=dt.UTC)
_MAX = dt.datetime.max.replace(tzinfo=dt.UTC)
OUT_OF_RANGE = "must be, in UTC, after 0001-01-01T00:00:00Z and before 9999-12-31T23:59:59.999999Z"


def instant(value: dt.datetime) -> dt.datetime:
    """``value`` in UTC (read as UTC when it has no offset); ValueError naming the range when it
    lies outside it."""
    try:
        utc = (value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
    except OverflowError:
        raise ValueError(OUT_OF_RANGE) from None
    if not _MIN < utc < _MAX:
        raise ValueError(OUT_OF_RANGE)
    return utc


def out_of_range(value: dt.datetime) -> str | None:
    """Why a time cannot be stored as it is, or None."""
    try:
        instant(value)
    except ValueError as exc:
        return str(exc)
    return None


def parse_instant(text: str) -> dt.datetime:
    """An RFC 3339 time given as text, in UTC; ValueError saying what is wrong with it (a phrase to
    follow the value: "is not …", "must be …")."""
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        if is_leap_second(text):
            raise ValueError("is a leap second (second 60), which no time stored here holds") from None
        raise ValueError("is not an RFC 3339 time, e.g. 2026-01-31T12:00:00Z") from None
    return instant(value)


# Second 60 of a time of day, which RFC 3339 allows and no time here (PostgreSQL's, Python's, Java's)
# holds.
_LEAP_SECOND = re.compile(r"T\d\d:\d\d:60(?![0-9])", re.IGNORECASE)


def is_leap_second(text: str) -> bool:
    """Whether an RFC 3339 time given as text names a leap second."""
    return _LEAP_SECOND.search(text) is not None
