"""`headwater spark backfill`: load archives of OpenLineage events into the store.

1. Read every file on the executors (``sources``), check each line with the server's validation and
   content hash (``jobs.backfill.check_rows``); rejects go to a folder with file, line and reason,
   with the lines longer than the server takes an event (``sources.LongLines``), which are not read.
2. Drop events that repeat in the archive or are already in ``raw_events`` (by content hash).
3. Range-partition the rest by (eventTime, position in the archive) and write the partitions one
   after another, each in batches of 2,000 events, a transaction each, through the server's own
   ``ingest_prepared``: a batch is written a wave of independent events at a time, one statement per
   store operation per wave, which is where a backfill gains over posting events one by one.

Why one ordered stream rather than parallel writers grouped by job: dataset rows (facets, schema,
versions, aliases) and the change log are shared by every job that reads or writes the dataset, and
their merges depend on the order events arrive. Writing in eventTime order is what makes the result
the same as posting the events to the server one by one in that order; on two cores, a second
writer gained about a third at best, for a change log no longer in event order."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from headwater.pipeline import db
from headwater.pipeline.jobs import backfill as steps
from headwater.pipeline.sources import (
    ArchiveFile,
    LongLines,
    find_archive_files,
    find_unreadable_archive,
    read_archive,
)
from headwater.settings import get_settings
from headwater.store import pipeline as pipeline_store

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from headwater.pipeline.progress import Progress


# The range read over raw_events, whose bounds query also counts the stored events.
RAW_EVENT_READ = "fetch_raw_event_hashes"


def _max_body_bytes() -> int:
    return get_settings().max_body_bytes


@dataclass(frozen=True)
class BackfillOptions:
    paths: list[str]
    database_url: str | None
    rejects_path: str
    alias_rules_file: str | None = None
    batch_size: int = 2000
    events_per_partition: int = 20_000
    dry_run: bool = False
    # A longer line is rejected unread: by default the most the server takes in one request body.
    max_line_bytes: int = field(default_factory=_max_body_bytes)


@dataclass
class BackfillSummary:
    files: int = 0
    bytes: int = 0
    rows: int = 0
    blank: int = 0
    rejected: int = 0
    reject_reasons: list[tuple[str, int]] = field(default_factory=list)
    rejects_path: str | None = None
    valid: int = 0
    unique: int = 0
    already_stored: int = 0
    to_write: int = 0
    written: db.IngestTotals = field(default_factory=db.IngestTotals)
    write_seconds: float = 0.0
    seconds: float = 0.0


def run_backfill(spark: SparkSession, options: BackfillOptions, progress: Progress) -> BackfillSummary:
    """Check, deduplicate and write the archives; returns the figures of the summary."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql import types as t

    started = time.monotonic()
    sc = spark.sparkContext
    summary = BackfillSummary()
    progress.set_phase("listing archives")
    files = find_archive_files(spark, options.paths)
    summary.files, summary.bytes = len(files), sum(f.size for f in files)

    progress.set_phase(
        "reading and validating events", f"({summary.files} files, {_size(summary.bytes)})"
    )
    read = read_archive(spark, files, options.max_line_bytes)
    rows = read.rows
    if len(files) < sc.defaultParallelism:
        # A single large archive is read by one task; spread the validation over every core.
        rows = rows.repartition(sc.defaultParallelism * 2)
    checked = spark.createDataFrame(
        rows.mapPartitions(steps.check_rows), steps.checked_schema(), verifySchema=False
    )
    checked = checked.persist(StorageLevel.DISK_ONLY)
    try:
        try:
            counts = {r["status"]: r["count"] for r in checked.groupBy("status").count().collect()}
        except Exception:
            # The first pass over the files: a compressed one cut short fails it (in Hadoop's reader
            # or in gzip's) without naming the file. Say which, if that is what happened.
            unreadable = find_unreadable_archive(spark, files)
            if unreadable is not None:
                raise unreadable from None
            raise
        long_lines = read.long_lines()
        summary.rows = sum(counts.values()) + len(long_lines.lines)
        summary.blank = counts.get(steps.BLANK, 0)
        summary.rejected = counts.get(steps.REJECTED, 0) + len(long_lines.lines)
        summary.valid = counts.get(steps.VALID, 0)
        if summary.rejected:
            progress.set_phase("writing rejects", options.rejects_path)
            rejected = _rejected(spark, checked, long_lines)
            _write_rejects(spark, rejected, files, options.rejects_path)
            summary.rejects_path = options.rejects_path
            reasons = (
                rejected.groupBy("reason").count().orderBy(F.desc("count"), "reason").limit(5).collect()
            )
            summary.reject_reasons = [(r["reason"], r["count"]) for r in reasons]

        valid = checked.where(F.col("status") == steps.VALID)
        stored = None
        if options.database_url:
            progress.set_phase("reading content hashes already stored")
            schema = t.StructType([t.StructField("content_hash", t.BinaryType(), False)])
            stored = db.read_table(spark, options.database_url, RAW_EVENT_READ, schema)
        progress.set_phase("dropping duplicates")
        hashes = valid.select("content_hash").distinct().persist(StorageLevel.DISK_ONLY)
        summary.unique = hashes.count()
        summary.to_write = (
            steps.drop_stored_events(hashes, stored).count() if stored is not None else summary.unique
        )
        hashes.unpersist()
        summary.already_stored = summary.unique - summary.to_write
        if options.dry_run or not options.database_url or not summary.to_write:
            summary.seconds = time.monotonic() - started
            return summary

        partitions = max(1, math.ceil(summary.to_write / options.events_per_partition))
        # The shuffles below carry whole events: as many partitions as written, so that no task
        # sorts more than a partition's worth (a few hundred MiB of JSON for a million events
        # would otherwise land in eight tasks).
        spark.conf.set("spark.sql.shuffle.partitions", str(max(partitions, sc.defaultParallelism)))
        fresh = steps.drop_stored_events(steps.drop_duplicate_events(valid), stored)
        progress.set_phase("ordering events by eventTime", f"({partitions} partitions)")
        payloads = steps.order_for_ingest(fresh, partitions).select("payload").rdd.map(lambda r: r[0])
        _write(spark, payloads, options, summary, progress)
    finally:
        checked.unpersist()
    summary.seconds = time.monotonic() - started
    return summary


def _write(
    spark: SparkSession,
    payloads: object,
    options: BackfillOptions,
    summary: BackfillSummary,
    progress: Progress,
) -> None:
    """Write the ordered partitions one after another; each task ingests its events in order."""
    from pyspark import RDD

    assert isinstance(payloads, RDD)
    url, rules, batch = options.database_url, options.alias_rules_file, options.batch_size
    assert url is not None
    progress.set_phase("writing events in eventTime order", total=summary.to_write, unit="events")
    write_started = time.monotonic()
    with db.connect(url) as watch:

        def stored() -> int:
            return watch.run(pipeline_store.fetch_id_bounds(watch.conn, RAW_EVENT_READ)).rows

        # A partition is one Spark task of up to 20,000 events: while it runs, the events it has
        # committed so far (a batch at a time) are what tells how far the writing is.
        stored_before = stored()
        with progress.counting(lambda: stored() - stored_before):
            for index in range(payloads.getNumPartitions()):
                results = spark.sparkContext.runJob(
                    payloads, lambda it: db.ingest_partition(it, url, rules, batch), [index]
                )
                for totals in results:
                    summary.written.add(totals)
                progress.set_count(summary.written.created + summary.written.duplicates)
    summary.write_seconds = time.monotonic() - write_started


def _rejected(spark: SparkSession, checked: DataFrame, long_lines: LongLines) -> DataFrame:
    """The rejected rows, with the lines too long to read, all numbered as in their files."""
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql import types as t

    rejected = checked.where(F.col("status") == steps.REJECTED)
    if not long_lines.lines:
        return rejected

    @F.udf(t.LongType(), useArrow=False)  # Arrow needs pandas, which the backfill does without
    def line_number(file_index: int, line: int | None) -> int | None:
        return None if line is None else long_lines.line_number(file_index, line)

    reason = long_lines.reason
    unread = spark.createDataFrame(
        [
            (file_index, line, None, steps.REJECTED, reason, [("$", reason)], None, None, None)
            for file_index, line in long_lines.lines
        ],
        steps.checked_schema(),
    )
    renumbered = rejected.withColumn("line", line_number("file_index", "line"))
    return renumbered.unionByName(unread)


def _write_rejects(
    spark: SparkSession, rejected: DataFrame, files: list[ArchiveFile], path: str
) -> None:
    sources = spark.createDataFrame([(f.index, f.path) for f in files], "file_index int, source string")
    steps.rejects_for_output(rejected, sources).coalesce(1).write.json(path)


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:,.1f} {unit}" if unit != "B" else f"{n} B"
        size /= 1024
    return f"{n} B"
