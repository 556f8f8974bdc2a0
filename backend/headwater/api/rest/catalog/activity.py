"""Marquez's event list and dashboard counts, from the raw events and the catalog's creation times.

Both read a time window through indexes (migration 0068): the event list and its total count are
index scans of the window's events, the counts per hour or day index-only scans of the last 24
hours or 7 days, whatever the number of events stored before.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import Annotated, Any, Literal

from litestar import Response, get
from litestar.datastructures import State
from litestar.params import Parameter, QueryParameter

from headwater import times
from headwater.api.rest.catalog.routing import PROBLEMS, Limit, Offset
from headwater.api.rest.catalog.shapes import iso
from headwater.errors import InvalidRequestError
from headwater.store.catalog import activity

# Marquez's defaults when a bound is absent (its UI sends empty ones).
_EARLIEST = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_LATEST = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
# DAY: the last 24 hours by hour; WEEK: the last 7 days by day (Marquez's dashboard periods).
_PERIODS: dict[str, tuple[activity.Bucket, int, dt.timedelta]] = {
    "DAY": ("hour", 24, dt.timedelta(hours=1)),
    "WEEK": ("day", 7, dt.timedelta(days=1)),
}

Period = Annotated[
    Literal["DAY", "WEEK", "day", "week"],
    Parameter(description="DAY: the last 24 hours, by hour; WEEK: the last 7 days, by day."),
]
TimeZone = Annotated[
    str, Parameter(description="The IANA time zone days start in (default UTC), e.g. Europe/Paris.")
]


def _time(value: str | None, default: dt.datetime, param: str) -> dt.datetime:
    """An ISO 8601 time, in UTC (UTC without an offset); ``default`` when absent or empty."""
    if not value:
        return default
    try:
        return times.parse_instant(value)
    except ValueError as exc:
        raise InvalidRequestError(f"`{param}` '{value}' {exc}.") from None


def _zone(timezone: str) -> str:
    try:
        zoneinfo.ZoneInfo(timezone)
    # OSError: a name too long for a file name (zoneinfo looks the zone up as a file).
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidRequestError(f"Unknown time zone '{timezone}'.") from None
    return timezone


def _window(period: str) -> tuple[dt.datetime, activity.Bucket, int]:
    bucket, count, step = _PERIODS[period.upper()]
    return dt.datetime.now(dt.UTC) - (count - 1) * step, bucket, count


@get("/api/v1/events/lineage", summary="List stored events", tags=["catalog"], responses=PROBLEMS)
async def list_events(
    state: State,
    before: Annotated[str | None, Parameter(description="Only events before this time.")] = None,
    after: Annotated[str | None, Parameter(description="Only events at or after this time.")] = None,
    limit: Limit = 100,
    offset: Offset = 0,
    sort_direction: Annotated[
        Literal["asc", "desc", "ASC", "DESC"],
        QueryParameter(
            name="sortDirection", description="By eventTime; newest first (desc) by default."
        ),
    ] = "desc",
) -> Response[bytes]:
    """The events as received, in the window: {events, totalCount}."""
    start, end = _time(after, _EARLIEST, "after"), _time(before, _LATEST, "before")
    async with state.pool.acquire() as conn:
        events, total = await activity.page_raw_events(
            conn, start, end, ascending=sort_direction.lower() == "asc", limit=limit, offset=offset
        )
    # The events are stored as JSON: they are joined as they are rather than parsed and encoded.
    body = b'{"events":[' + ",".join(events).encode() + b'],"totalCount":%d}' % total
    return Response(body, media_type="application/json")


@get(
    "/api/v1/stats/lineage-events",
    summary="Count events by type over time",
    tags=["catalog"],
    responses=PROBLEMS,
)
async def lineage_event_stats(
    state: State, period: Period = "DAY", timezone: TimeZone = "UTC"
) -> list[dict[str, Any]]:
    """[{startInterval, endInterval, fail, start, complete, abort}], oldest first."""
    start, bucket, count = _window(period)
    async with state.pool.acquire() as conn:
        rows = await activity.count_events_by_type(conn, start, bucket, _zone(timezone), count)
    return [
        {
            "startInterval": iso(r.start),
            "endInterval": iso(r.end),
            "fail": r.fail,
            "start": r.started,
            "complete": r.complete,
            "abort": r.abort,
        }
        for r in rows
    ]


@get(
    "/api/v1/stats/{what:str}",
    summary="Count datasets, jobs or sources over time",
    tags=["catalog"],
    responses=PROBLEMS,
)
async def created_stats(
    state: State,
    what: Literal["datasets", "jobs", "sources"],
    period: Period = "DAY",
    timezone: TimeZone = "UTC",
) -> list[dict[str, Any]]:
    """How many existed at the end of each hour or day: [{startInterval, endInterval, count}]."""
    start, bucket, count = _window(period)
    async with state.pool.acquire() as conn:
        rows = await activity.count_created(conn, what, start, bucket, _zone(timezone), count)
    return [{"startInterval": iso(r.start), "endInterval": iso(r.end), "count": r.count} for r in rows]


activity_handlers = [list_events, lineage_event_stats, created_stats]
