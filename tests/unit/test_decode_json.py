"""JSON decoding shared by HTTP bodies, Kafka messages and backfill lines: a reason for whatever
cannot be decoded, never an exception of the decoder's own."""

from __future__ import annotations

import pytest

from headwater.consume.messages import PoisonMessageError, decode
from headwater.ingest.validate import LONE_SURROGATE_ESCAPE, UndecodableError, decode_json
from headwater.pipeline.jobs.backfill import REJECTED, check_rows


@pytest.mark.parametrize(
    ("text", "lone"),
    [
        (r'"a\ud800"', r"\ud800"),
        (r'"\udc00"', r"\udc00"),
        (r'"\ud83d\ude00 \udfff"', r"\udfff"),
        (r'"\\\ud800"', r"\ud800"),  # an escaped backslash, then the escape
        (r'"\ud83d\ude00"', None),  # a pair: one character
        (r'"\\ud800"', None),  # an escaped backslash, then the text "ud800"
    ],
)
def test_a_lone_surrogate_escape_is_found_where_it_is(text: str, lone: str | None) -> None:
    found = LONE_SURROGATE_ESCAPE.search(text)
    assert (found.group("escape") if found else None) == lone
    if found is not None and lone is not None:
        assert found.start("escape") == text.rindex(lone)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"[" * 100_000, "not valid JSON: nested too deeply to decode (events may nest 256 levels)"),
        (b'{"a": "\xc3\xa9\xff"}', "not valid JSON: not valid UTF-8: byte 9 of the body (0xff)"),
        (
            b'{"a": "\xc3\xa9\\ud800"}',
            "not valid JSON: \\ud800 at byte 9 of the body is half of a UTF-16 surrogate pair, "
            "which is not a character",
        ),
        (
            '{"a": "\u00e9\\ud800"}',
            "not valid JSON: \\ud800 at character 8 of the body is half of a UTF-16 surrogate pair, "
            "which is not a character",
        ),
        (b'{"a": NaN}', "not valid JSON: JSON is malformed: invalid character (byte 6)"),
        (b"1e400", "valid JSON with a number too large to read"),
    ],
)
def test_what_cannot_be_decoded_is_said(data: bytes | str, reason: str) -> None:
    with pytest.raises(UndecodableError) as refused:
        decode_json(data)
    assert refused.value.reason.startswith(reason)


def test_a_kafka_message_nested_too_deeply_is_a_poison_message() -> None:
    with pytest.raises(PoisonMessageError, match="nested too deeply to decode"):
        decode(b"[" * 100_000, "openlineage", max_bytes=1 << 20, rules=[], bridge=None)


def test_a_backfill_line_nested_too_deeply_is_rejected() -> None:
    [row] = check_rows([(0, 7, None, "[" * 100_000)])
    assert row[:4] == (0, 7, None, REJECTED)
    assert row[4] == "not valid JSON: nested too deeply to decode (events may nest 256 levels)"
