"""headwater spark backfill: a JSON-lines line longer than an event may be is rejected unread."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from headwater.pipeline.backfill import BackfillOptions, run_backfill
from tests.factories import run_event

pytestmark = [pytest.mark.spark, pytest.mark.db]

HEADWATER = str(Path(sys.executable).with_name("headwater"))
LIMIT = 1_000
REASON = "longer than the 1,000 bytes an event may have (HEADWATER_MAX_BODY_BYTES): the line is not read"


def padded(event: dict[str, Any], size: int) -> bytes:
    """The event as JSON of exactly ``size`` bytes (blanks after it)."""
    text = json.dumps(event).encode()
    return text + b" " * (size - len(text))


def long_line(size: int) -> bytes:
    return b'{"a":"' + b"a" * (size - 8) + b'"}'


def rejects_of(folder: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for f in sorted(folder.glob("part-*.json"))
        for line in f.read_text().splitlines()
    ]


async def stored_jobs(url: str) -> list[str]:
    conn = await asyncpg.connect(url)
    try:
        return [r["name"] for r in await conn.fetch("SELECT name FROM jobs ORDER BY name")]
    finally:
        await conn.close()


@pytest.mark.parametrize("name", ["events.jsonl", "events.jsonl.gz"])
@pytest.mark.parametrize("line_break", [b"\n", b"\r\n"])
async def test_lines_longer_than_an_event_are_rejected_and_the_others_read(
    spark, progress, make_database, tmp_path, name, line_break
):
    lines = [
        json.dumps(run_event("first", outputs=["a"])).encode(),
        long_line(5 * LIMIT),  # skipped by the reader
        json.dumps(run_event("second", outputs=["b"])).encode(),
        long_line(3 * LIMIT),  # two skipped one after the other
        long_line(LIMIT + 3),
        b"{not json",
        padded(run_event("at_the_limit", outputs=["c"]), LIMIT),
        padded(run_event("one_byte_over", outputs=["d"]), LIMIT + 1),  # read whole, then left out
        json.dumps(run_event("third", outputs=["e"])).encode(),
        long_line(2 * LIMIT),  # the last line, unterminated
    ]
    content = line_break.join(lines)
    archive = tmp_path / name
    archive.write_bytes(gzip.compress(content) if name.endswith(".gz") else content)
    async with make_database() as url:
        summary = run_backfill(
            spark,
            BackfillOptions(
                paths=[str(archive)],
                database_url=url,
                rejects_path=str(tmp_path / "rejects"),
                max_line_bytes=LIMIT,
            ),
            progress,
        )
        assert await stored_jobs(url) == ["at_the_limit", "first", "second", "third"]
    assert (summary.rows, summary.rejected, summary.valid, summary.written.created) == (10, 6, 4, 4)
    source = archive.resolve().as_uri().replace("file:///", "file:/")
    rejects = rejects_of(tmp_path / "rejects")
    assert [(r["source"], r["line"], r["reason"]) for r in rejects] == [
        (source, 2, REASON),
        (source, 4, REASON),
        (source, 5, REASON),
        (source, 6, rejects[3]["reason"]),
        (source, 8, REASON),
        (source, 10, REASON),
    ]
    assert rejects[3]["reason"].startswith("not valid JSON")
    assert rejects[3]["text"] == "{not json"
    assert rejects[0]["errors"] == [{"path": "$", "message": REASON}]
    assert summary.reject_reasons == [(REASON, 5), (rejects[3]["reason"], 1)]


async def test_lines_skipped_at_the_start_of_a_file_are_counted(spark, progress, tmp_path):
    # After a byte order mark, a line the reader skips, one it reads whole but is over the limit by a
    # byte (after a \r), and one that is no JSON.
    archive = tmp_path / "events.jsonl.gz"
    event = json.dumps(run_event("after", outputs=["a"])).encode()
    archive.write_bytes(
        gzip.compress(
            b"\xef\xbb\xbf" + long_line(2 * LIMIT) + b"\r" + long_line(LIMIT + 1) + b"\n{x\n" + event
        )
    )
    summary = run_backfill(
        spark,
        BackfillOptions(
            paths=[str(archive)],
            database_url=None,
            rejects_path=str(tmp_path / "rejects"),
            max_line_bytes=LIMIT,
            dry_run=True,
        ),
        progress,
    )
    assert (summary.rows, summary.rejected, summary.valid) == (4, 3, 1)
    assert [r["line"] for r in rejects_of(tmp_path / "rejects")] == [1, 2, 3]


def test_a_line_larger_than_the_memory_is_rejected_without_holding_it(tmp_path):
    # 300 MB of one line, with the least memory Spark runs on (and the limit of the setting the
    # server reads): held whole, it would not fit.
    archive = tmp_path / "events.jsonl.gz"
    with gzip.open(archive, "wb", compresslevel=1) as f:
        f.write(json.dumps(run_event("before", outputs=["a"])).encode() + b"\n")
        f.write(b'{"a":"')
        for _ in range(20):
            f.write(b"a" * 15_000_000)
        f.write(b'"}\n')
        f.write(json.dumps(run_event("after", outputs=["b"])).encode() + b"\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env |= {"HEADWATER_DATA_DIR": str(tmp_path / "data"), "HEADWATER_MAX_BODY_BYTES": str(LIMIT)}
    done = subprocess.run(
        [
            *(HEADWATER, "spark", "backfill", str(archive), "--dry-run", "--quiet"),
            *("--master", "local[1]", "--conf", "spark.driver.memory=512m"),
            *("--rejects", str(tmp_path / "rejects")),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^rejected +1 ", done.stdout, re.M)
    assert re.search(r"^valid events +2$", done.stdout, re.M)
    assert [(r["line"], r["reason"]) for r in rejects_of(tmp_path / "rejects")] == [(2, REASON)]
