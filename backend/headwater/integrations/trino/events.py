"""Trino's event listener events as it sends them: its SPI objects, decoded leniently.

The HTTP event listener posts QueryCreatedEvent, QueryCompletedEvent and SplitCompletedEvent objects
as JSON, with no type field: ``event_kind`` tells them apart by shape. Timestamps are Jackson's
decimal epoch seconds, or RFC 3339.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Annotated, Any, Literal

import msgspec

from headwater import times
from headwater.errors import FieldError, InvalidRequestError
from headwater.ingest.validate import json_type

TrinoEventKind = Literal["QueryCompletedEvent", "QueryCreatedEvent", "SplitCompletedEvent"]
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Instant = float | str


class InvalidTrinoEventError(InvalidRequestError):
    """The body is not a Trino event listener event; errors name the JSON paths."""

    code = "invalid_trino_event"
    title = "Invalid Trino event"


# -- Trino's SPI event objects, decoded leniently (unknown fields are ignored) ---------------------


class TableColumn(msgspec.Struct, forbid_unknown_fields=False):
    column: str


class TableInfo(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    catalog: NonEmpty
    schema: NonEmpty
    table: NonEmpty
    columns: list[TableColumn] | None = None
    directly_referenced: bool = True


class QueryMetadata(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    query_id: NonEmpty
    query: str | None = None
    query_state: str | None = None
    transaction_id: str | None = None
    update_type: str | None = None
    uri: str | None = None
    plan: str | None = None
    tables: list[TableInfo] | None = None


class QueryContext(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    user: str | None = None
    original_user: str | None = None
    principal: str | None = None
    source: str | None = None
    client_info: str | None = None
    remote_client_address: str | None = None
    user_agent: str | None = None
    trace_token: str | None = None
    catalog: str | None = None
    schema: str | None = None
    server_address: str | None = None
    server_version: str | None = None
    environment: str | None = None
    query_type: str | None = None


class InputMetadata(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    catalog_name: NonEmpty
    schema: NonEmpty
    table: NonEmpty
    # Column names; lenient about objects in case a version sends {"column": ...} or {"name": ...}.
    columns: list[Any] | None = None


class SourceColumn(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    catalog: NonEmpty
    schema: NonEmpty
    table: NonEmpty
    column_name: NonEmpty


class OutputColumn(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    column_name: NonEmpty
    column_type: str | None = None
    source_columns: list[SourceColumn] | None = None


class OutputMetadata(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    catalog_name: NonEmpty
    schema: NonEmpty
    table: NonEmpty
    columns: list[OutputColumn] | None = None


class IoMetadata(msgspec.Struct, forbid_unknown_fields=False):
    inputs: list[InputMetadata] | None = None
    output: OutputMetadata | None = None


class ErrorCode(msgspec.Struct, forbid_unknown_fields=False):
    code: int | None = None
    name: str | None = None
    type: str | None = None


class FailureInfo(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    error_code: ErrorCode | None = None
    failure_type: str | None = None
    failure_message: str | None = None


class QueryCompletedEvent(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    metadata: QueryMetadata
    create_time: Instant
    end_time: Instant
    context: QueryContext | None = None
    io_metadata: IoMetadata | None = None
    statistics: dict[str, Any] | None = None
    failure_info: FailureInfo | None = None
    execution_start_time: Instant | None = None


class QueryCreatedEvent(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    metadata: QueryMetadata
    create_time: Instant
    context: QueryContext | None = None


# -- options and results ---------------------------------------------------------------------------


def event_kind(raw: Any, prefix: str = "$") -> TrinoEventKind:
    """Which listener event a JSON object is, by its shape (the listener sends no type field)."""
    if not isinstance(raw, dict):
        raise InvalidTrinoEventError(
            "A Trino event must be a JSON object (a QueryCompletedEvent).",
            [FieldError(prefix, f"Expected `object`, got `{json_type(raw)}`")],
        )
    if "eventType" in raw and "run" in raw and "job" in raw:
        raise InvalidTrinoEventError(
            "This is an OpenLineage RunEvent, not a Trino event: post it to /api/v1/lineage.",
            [FieldError(prefix, "an OpenLineage event; post it to /api/v1/lineage")],
        )
    if any(key in raw for key in ("endTime", "ioMetadata", "statistics", "failureInfo")):
        return "QueryCompletedEvent"
    if "metadata" not in raw and ("stageId" in raw or "taskId" in raw):
        return "SplitCompletedEvent"
    if "metadata" in raw and "createTime" in raw:
        return "QueryCreatedEvent"
    return "QueryCompletedEvent"  # decoding it names what is missing


_AT_PATH = re.compile(r"^(?P<message>.*?)(?: - at `(?P<path>[^`]*)`)?$", re.DOTALL)


def decode_event(raw: dict[str, Any], model: type[Any], prefix: str) -> Any:
    try:
        return msgspec.convert(raw, model)
    except msgspec.ValidationError as exc:
        match = _AT_PATH.match(str(exc))
        assert match is not None  # the pattern matches any string
        path = prefix + (match.group("path") or "$")[1:]
        message = match.group("message")
        raise InvalidTrinoEventError(
            f"Not a Trino {model.__name__}: {message} at {path}", [FieldError(path, message)]
        ) from None


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def parse_instant(value: Instant, path: str) -> dt.datetime:
    """Jackson's Instant: decimal epoch seconds (or epoch milliseconds), or an RFC 3339 string; in
    UTC, inside the range PostgreSQL holds (headwater.times)."""
    if isinstance(value, str):
        try:
            number = float(value)
            if math.isnan(number):  # "NaN" reads as a float, and is no time
                raise ValueError(value)
        except ValueError:
            try:
                parsed = dt.datetime.fromisoformat(value)
            except ValueError:
                raise InvalidTrinoEventError(
                    f"{path} is neither epoch seconds nor an RFC 3339 time: {value!r}",
                    [FieldError(path, "Expected epoch seconds or an RFC 3339 time")],
                ) from None
            return _in_range(parsed, value, path)
    else:
        number = value
    # Epoch milliseconds (as seconds, 1e11 is past the year 5000).
    seconds = number / 1000 if abs(number) >= 1e11 else number
    try:
        parsed = _EPOCH + dt.timedelta(microseconds=round(seconds * 1_000_000))
    except OverflowError:
        raise InvalidTrinoEventError(
            f"{path} is out of range: {value}", [FieldError(path, "time out of range")]
        ) from None
    return _in_range(parsed, value, path)


def _in_range(parsed: dt.datetime, value: Instant, path: str) -> dt.datetime:
    """``parsed`` in UTC, or an error naming the range PostgreSQL holds."""
    try:
        return times.instant(parsed)
    except ValueError as exc:
        raise InvalidTrinoEventError(f"{path} {exc}: {value}", [FieldError(path, str(exc))]) from None
