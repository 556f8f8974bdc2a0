"""PostgreSQL from Spark: partitioned reads by id range, ordered ingest, and heat staging.

There is no JDBC driver here: each Spark task opens its own asyncpg connection (on a private event
loop) and runs the named queries of ``db/queries/pipeline.sql`` over its id ranges, in chunks, so no
task holds more than one chunk. Writes of events go through ``ingest_prepared``, the one
implementation of the event-to-rows rules that the server uses.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import asyncpg
import msgspec

from headwater import event_loops
from headwater.db.pool import PLAN_SETTINGS, register_codecs
from headwater.ingest.aliases import load_alias_rules
from headwater.ingest.service import (
    PreparedEvent,
    ingest_prepared,
    prepare_events,
    rare_collections,
    retrying_races,
)
from headwater.ingest.validate import validate_event
from headwater.store import pipeline as pipeline_store

if TYPE_CHECKING:
    from collections.abc import Coroutine, Iterable, Iterator

    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from headwater.ingest.normalize import AliasRule
    from headwater.ingest.service import IngestResult

READ_CHUNK = 20_000
# Batches written between two VACUUMs of the tables ingest updates in place (``vacuum_model``): often
# enough that dead row versions never outnumber live ones by much, rarely enough that the VACUUMs
# themselves stay a small share of the writing.
VACUUM_EVERY = 5
T = TypeVar("T")


class _Connection:
    """A blocking facade over one asyncpg connection, on an event loop of its own in a thread.

    Its own thread, so it also works where a loop is already running (the driver inside a test).
    """

    def __init__(self, url: str) -> None:
        self.loop = event_loops.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="headwater-db", daemon=True)
        self._thread.start()
        try:
            self.conn: asyncpg.Connection = self.run(
                asyncpg.connect(
                    url, server_settings={**PLAN_SETTINGS, "application_name": "headwater-spark"}
                )
            )
        except BaseException:
            self._stop_loop()
            raise
        self.run(register_codecs(self.conn))

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.submit(coro).result()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``coro`` on the connection's thread; the caller goes on meanwhile."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.run(self.conn.close())
        self._stop_loop()

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


@contextlib.contextmanager
def connect(url: str) -> Iterator[_Connection]:
    """A connection for the duration of a block."""
    connection = _Connection(url)
    try:
        yield connection
    finally:
        connection.close()


# -- partitioned reads --------------------------------------------------------------------------


def id_ranges(lo: int | None, hi: int | None, parts: int) -> list[tuple[int, int]]:
    """Split [lo, hi] into at most ``parts`` contiguous half-open ranges."""
    if lo is None or hi is None:
        return []
    span = hi - lo + 1
    parts = max(1, min(parts, span))
    step = -(-span // parts)
    return [(start, min(start + step, hi + 1)) for start in range(lo, hi + 1, step)]


def read_ranges(
    url: str, read: str, params: tuple[Any, ...], ranges: Iterable[tuple[int, int]]
) -> Iterator[tuple[Any, ...]]:
    """Rows of ``read`` over id ranges, fetched a chunk at a time."""
    with connect(url) as db:
        for lo, hi in ranges:
            for start in range(lo, hi, READ_CHUNK):
                yield from db.run(
                    pipeline_store.fetch_id_range(
                        db.conn, read, start, min(hi, start + READ_CHUNK), params
                    )
                )


def read_table(
    spark: SparkSession,
    url: str,
    read: str,
    schema: StructType,
    params: tuple[Any, ...] = (),
    parts: int | None = None,
) -> DataFrame:
    """A DataFrame of a range read, a Spark partition per id range; the driver reads only the bounds."""
    with connect(url) as db:
        bounds = db.run(pipeline_store.fetch_id_bounds(db.conn, read))
    sc = spark.sparkContext
    if parts is None:
        parts = max(sc.defaultParallelism, bounds.rows // 200_000 + 1)
    ranges = id_ranges(bounds.lo, bounds.hi, parts)
    if not ranges:
        return spark.createDataFrame(sc.emptyRDD(), schema)
    rdd = sc.parallelize(ranges, len(ranges)).mapPartitions(
        lambda it: read_ranges(url, read, params, it)
    )
    return spark.createDataFrame(rdd, schema, verifySchema=False)


# -- ordered ingest -----------------------------------------------------------------------------


@dataclass
class IngestTotals:
    """What the writes of one or more partitions did."""

    created: int = 0
    duplicates: int = 0
    with_warnings: int = 0

    @classmethod
    def of(cls, results: list[IngestResult]) -> IngestTotals:
        return cls(
            created=sum(r.status == "created" for r in results),
            duplicates=sum(r.status == "duplicate" for r in results),
            with_warnings=sum(bool(r.warnings) for r in results),
        )

    def add(self, other: IngestTotals) -> None:
        self.created += other.created
        self.duplicates += other.duplicates
        self.with_warnings += other.with_warnings


def ingest_partition(
    payloads: Iterable[str], url: str, alias_rules_file: str | None, batch_size: int
) -> Iterator[IngestTotals]:
    """Ingest events (JSON text, in the order given) with ``ingest_prepared``, a transaction per batch.

    Two stages overlap: while the connection's thread writes one batch, this thread decodes,
    validates and prepares the next (PostgreSQL works meanwhile on the other core). Every
    ``VACUUM_EVERY`` batches, and at the end unless the last batch just did, the tables updated in
    place are vacuumed; at the end,
    the statistics of the others are refreshed too, as they grow. The garbage collector runs
    rarely meanwhile (``rare_collections``).
    """
    rules = load_alias_rules(Path(alias_rules_file)) if alias_rules_file else []
    totals = IngestTotals()
    with rare_collections(), connect(url) as db:
        writing: concurrent.futures.Future[list[IngestResult]] | None = None
        unvacuumed = 0  # batches written since the last VACUUM
        for batch in _batches(payloads, batch_size):
            prepared = prepare_events([validate_event(msgspec.json.decode(p)) for p in batch], rules)
            if writing is not None:
                totals.add(IngestTotals.of(writing.result()))
            unvacuumed = (unvacuumed + 1) % VACUUM_EVERY
            writing = db.submit(_store(db.conn, prepared, rules, vacuum_after=unvacuumed == 0))
        if writing is not None:
            totals.add(IngestTotals.of(writing.result()))
        if unvacuumed:
            db.run(pipeline_store.vacuum_model(db.conn))
        db.run(pipeline_store.analyze_model(db.conn))
    yield totals


def _batches(items: Iterable[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


async def _store(
    conn: asyncpg.Connection, events: list[PreparedEvent], rules: list[AliasRule], *, vacuum_after: bool
) -> list[IngestResult]:
    """Ingest one batch in a transaction (run again on a race), then VACUUM if asked."""
    results = await retrying_races(lambda: ingest_prepared(conn, events, rules), pause=0.05)
    if vacuum_after:
        await pipeline_store.vacuum_model(conn)
    return results


# -- heat -----------------------------------------------------------------------------------------


def stage_heat_partition(
    scores: Iterable[tuple[int, float]], url: str, heat_run_id: int
) -> Iterator[int]:
    """COPY one partition's (node_id, heat) scores into heat_scores; yields how many."""
    rows = [(int(n), float(h)) for n, h in scores]
    with connect(url) as db:
        db.run(pipeline_store.stage_heat_scores(db.conn, heat_run_id, rows))
    yield len(rows)
