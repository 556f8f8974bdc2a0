"""A JSON-array archive file is decompressed at most to a limit: past it, it is refused naming
the file, never inflated whole (a 1.5 MB .json.gz of 1.5 GB took the backfill to 3.2 GB)."""

from __future__ import annotations

import bz2
import gzip
import json

import pytest

from headwater.pipeline.sources import ArchiveUnreadableError, _array_rows

EVENTS = [{"eventType": "START", "n": i} for i in range(3)]


@pytest.mark.parametrize(
    ("suffix", "compress"), [(".json.gz", gzip.compress), (".json.bz2", bz2.compress)]
)
def test_an_array_file_within_the_limit_is_read_event_by_event(suffix, compress):
    content = compress(json.dumps(EVENTS).encode())
    rows = list(_array_rows(4, "file:/a" + suffix, content, limit=1_000))
    assert [(r[0], r[2], json.loads(r[3])) for r in rows] == [(4, i, e) for i, e in enumerate(EVENTS)]


@pytest.mark.parametrize(
    ("suffix", "compress"),
    [(".json.gz", gzip.compress), (".json.bz2", bz2.compress), (".json", lambda b: b)],
)
def test_an_array_file_past_the_limit_is_refused_naming_it(suffix, compress):
    content = compress(b"[" + b" " * 2_000_000 + b"]")
    with pytest.raises(ArchiveUnreadableError) as refused:
        list(_array_rows(0, "file:/bomb" + suffix, content, limit=1_000_000))
    assert str(refused.value).startswith(
        f"file:/bomb{suffix} is a JSON array of more than 1,000,000 bytes (decompressed), which is "
        "read whole: write it as JSON lines"
    )
