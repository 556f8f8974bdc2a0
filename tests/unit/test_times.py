"""Times from clients and users, read as instants PostgreSQL can hold (headwater.times)."""

from __future__ import annotations

import datetime as dt

import pytest

from headwater import times
from headwater.errors import InvalidEventError
from headwater.ingest.validate import validate_event


def test_an_offset_past_what_postgresql_reads_becomes_the_same_instant_in_utc():
    assert times.parse_instant("2026-03-01T00:00:00-23:59") == dt.datetime(
        2026, 3, 1, 23, 59, tzinfo=dt.UTC
    )
    assert times.parse_instant("2026-03-01T00:00:00+23:30").utcoffset() == dt.timedelta(0)


def test_a_time_without_an_offset_is_utc():
    assert times.parse_instant("2026-03-01T12:00:00") == dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)
    assert times.instant(dt.datetime(2026, 3, 1)) == dt.datetime(2026, 3, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    "text",
    [
        "0001-01-01T00:00:00Z",
        "0001-01-01T00:00:00+14:00",
        "9999-12-31T23:59:59.999999Z",
        "9999-12-31T23:59:59-14:00",
    ],
)
def test_instants_outside_years_1_to_9999_in_utc_are_refused_naming_the_range(text):
    with pytest.raises(ValueError, match="must be, in UTC, after 0001-01-01T00:00:00Z"):
        times.parse_instant(text)


def test_the_first_and_last_instants_inside_the_range_are_kept():
    assert times.parse_instant("0001-01-01T00:00:00.000001Z").year == 1
    assert times.parse_instant("9999-12-31T23:59:59.999998Z").year == 9999


@pytest.mark.parametrize("text", ["", "garbage", "2026-13-01T00:00:00Z", "2026-01-01T25:00:00Z"])
def test_text_that_is_no_time_says_so(text):
    with pytest.raises(ValueError, match="is not an RFC 3339 time"):
        times.parse_instant(text)


def test_a_leap_second_is_named_as_one():
    # RFC 3339 allows second 60; neither PostgreSQL's instants here nor Python's hold it.
    with pytest.raises(ValueError, match=r"is a leap second \(second 60\)"):
        times.parse_instant("2016-12-31T23:59:60Z")
    event = {
        "eventType": "START",
        "eventTime": "2016-12-31T23:59:60Z",
        "run": {"runId": "0194a0c4-1f0e-7cc5-a1b5-4b3c7a9c2d11"},
        "job": {"namespace": "a", "name": "b"},
        "producer": "p",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    }
    with pytest.raises(InvalidEventError) as refused:
        validate_event(event)
    [error] = refused.value.errors
    assert (error.path, error.message) == (
        "$.eventTime",
        "Invalid RFC3339 encoded datetime: a leap second (second 60) cannot be stored",
    )
