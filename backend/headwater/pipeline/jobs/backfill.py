"""Backfill steps: check archive rows with the server's own validation, drop duplicates, order.

``check_rows`` runs in the executors and calls ``headwater.ingest.validate.validate_event``, so an
event the server would reject with a 400 is rejected here for the same reason, and an accepted
event gets the same content hash (the idempotency key of ``raw_events``). The DataFrame steps after
it are pure: they decide which events to write and in which order, never how (that is
``headwater.ingest.service.ingest_prepared``, called by ``headwater.pipeline.db``).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import msgspec

from headwater.errors import InvalidEventError
from headwater.ingest.validate import UndecodableError, decode_json, validate_event

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from headwater.pipeline.sources import ArchiveRow

VALID, REJECTED, BLANK = "valid", "rejected", "blank"
# Order of ingest: eventTime, then the position in the archive (file, line, item in an array).
INGEST_ORDER = ("event_time_us", "file_index", "line", "item")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def checked_schema() -> StructType:
    """Schema of ``check_rows`` output."""
    from pyspark.sql import types as t

    return t.StructType(
        [
            t.StructField("file_index", t.IntegerType(), False),
            t.StructField("line", t.LongType(), True),
            t.StructField("item", t.IntegerType(), True),
            t.StructField("status", t.StringType(), False),
            t.StructField("reason", t.StringType(), True),
            t.StructField(
                "errors",
                t.ArrayType(
                    t.StructType(
                        [
                            t.StructField("path", t.StringType(), False),
                            t.StructField("message", t.StringType(), False),
                        ]
                    )
                ),
                True,
            ),
            t.StructField("content_hash", t.BinaryType(), True),
            t.StructField("event_time_us", t.LongType(), True),
            t.StructField("payload", t.StringType(), True),
        ]
    )


# Hadoop's text reader, which reads JSON-lines files, puts U+FFFD in place of bytes that are not
# UTF-8: a line holding it was not UTF-8 (a server refuses such a body), unless a producer wrote
# that character itself, which JSON lets it write as the escape instead. Stored, such names would
# differ from what was sent, and different ones could become one.
_REPLACED = "\ufffd"
_NOT_UTF8 = (
    "not valid UTF-8: the line holds bytes that are not UTF-8 (or U+FFFD itself, which JSON can "
    "write as \\ufffd)"
)


def check_rows(rows: Iterable[ArchiveRow]) -> Iterator[tuple[Any, ...]]:
    """Decode and validate each row; an array on one line is checked event by event."""
    for file_index, line, item, text in rows:
        if not text.strip():
            yield file_index, line, item, BLANK, None, None, None, None, None
            continue
        if item is None and _REPLACED in text:
            yield file_index, line, item, REJECTED, _NOT_UTF8, [("$", _NOT_UTF8)], None, None, text
            continue
        try:
            raw = decode_json(text, "line")
        except UndecodableError as exc:
            reason = exc.reason
            yield file_index, line, item, REJECTED, reason, [("$", reason)], None, None, text
            continue
        if isinstance(raw, list) and item is None:
            for position, element in enumerate(raw):
                yield _check(
                    file_index,
                    line,
                    position,
                    element,
                    msgspec.json.encode(element).decode(),
                    f"$[{position}]",
                )
        else:
            yield _check(file_index, line, item, raw, text, "$")


def _check(
    file_index: int, line: int | None, item: int | None, raw: Any, text: str, prefix: str
) -> tuple[Any, ...]:
    try:
        event = validate_event(raw, prefix)
    except InvalidEventError as exc:
        errors = [(e.path, e.message) for e in exc.errors]
        return file_index, line, item, REJECTED, exc.message, errors, None, None, text
    micros = (event.model.event_time - _EPOCH) // dt.timedelta(microseconds=1)
    return file_index, line, item, VALID, None, None, bytearray(event.content_hash), micros, text


def drop_duplicate_events(valid: DataFrame) -> DataFrame:
    """One row per content hash: its first occurrence in archive order (the one a server got first)."""
    from pyspark.sql import functions as F  # noqa: N812

    first = F.min(F.struct("file_index", "line", "item", "event_time_us", "payload")).alias("first")
    return valid.groupBy("content_hash").agg(first).select("content_hash", "first.*")


def drop_stored_events(events: DataFrame, stored_hashes: DataFrame | None) -> DataFrame:
    """Events whose content hash is not in ``raw_events`` (``stored_hashes``: a content_hash column)."""
    if stored_hashes is None:
        return events
    return events.join(stored_hashes, on="content_hash", how="left_anti")


def order_for_ingest(events: DataFrame, partitions: int) -> DataFrame:
    """Range-partition by ingest order: partition i holds events before partition i+1, each sorted."""
    ordered = events.repartitionByRange(partitions, *INGEST_ORDER)
    return ordered.sortWithinPartitions(*INGEST_ORDER)


def rejects_for_output(rejected: DataFrame, sources: DataFrame) -> DataFrame:
    """Rejected rows with their source file path, as written to the rejects folder."""
    return (
        rejected.join(sources, on="file_index", how="left")
        .select("source", "line", "item", "reason", "errors", rejected["payload"].alias("text"))
        .orderBy("source", "line", "item")
    )
