"""Structured Streaming queries as runs: START once a query's first micro-batch says what it reads
and writes, RUNNING as it goes on, COMPLETE or FAIL when it ends.

Spark does not call the batch listener (``QueryExecutionListener``) for micro-batches, so streaming
queries are followed through PySpark's ``StreamingQueryListener``, called like the batch listener on
Spark's listener-bus thread through py4j. A query's progress reports describe its sources and its
sink: files, and tables stored as files, are named from those descriptions (``FileStreamSource[path]``,
``FileSink[path]``), as a batch read or write of the same path is; the columns each reads and
writes, and the output's column lineage, come from the query's plan once its first micro-batch has
run (``Extractor.streaming_query``). A sink that is code
(``foreachBatch``) or memory names no dataset; what the code writes is reported by the batch
listener, as actions of their own that read the query's sources (see ``micro_batches``). Other
sources (Kafka, rate, sockets) are not named.

A query runs for as long as it likes: RUNNING is sent when its datasets change and otherwise at
most every ``running_interval`` seconds, so that Headwater sees the run alive without an event per
micro-batch; a query still running when the application ends is ended as ABORT. The run id is
Spark's own ``runId`` (a new one each time the query starts from its
checkpoint); the job's name stays the same across those runs. Nothing here may raise into Spark.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming.listener import StreamingQueryListener

from headwater_spark.model import DatasetInfo
from headwater_spark.naming import stream_sink_dataset, stream_source_dataset

if TYPE_CHECKING:
    from collections.abc import Callable

    from headwater_spark.emitter import Emitter
    from headwater_spark.events import EventFactory
    from headwater_spark.micro_batches import MicroBatchSessions
    from headwater_spark.plan import InputField

    # A query's inputs (with their columns), its output's columns, their column lineage.
    Description = tuple[list[DatasetInfo], list[dict[str, Any]], dict[str, list[InputField]] | None]

log = logging.getLogger("headwater_spark")

RUNNING_INTERVAL = 60.0  # seconds between two RUNNING events of a query whose datasets do not change


def _epoch(timestamp: str | None) -> float:
    """Spark's ISO-8601 timestamps (``2026-01-01T10:00:00.123Z``) as epoch seconds; now if absent."""
    if not timestamp:
        return time.time()
    return dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


@dataclass
class _Query:
    """A streaming query's run, as far as its events have told."""

    run_id: str
    name: str | None
    started: float
    inputs: dict[tuple[str, str], DatasetInfo] = field(default_factory=dict)
    output: DatasetInfo | None = None
    lineage: dict[str, list[InputField]] | None = None  # the output's column lineage
    job: str | None = None  # named, and START sent, at its first progress
    last_sent: float = 0.0
    stream: Any = None  # the query's StreamExecution (py4j), while it runs


class StreamingLineage(StreamingQueryListener):
    """The listener PySpark registers (``spark.streams.addListener``); events go to ``emitter``."""

    def __init__(
        self,
        factory: EventFactory,
        emitter: Emitter,
        running_interval: float = RUNNING_INTERVAL,
        micro_batches: MicroBatchSessions | None = None,
        describe: Callable[[Any], Description] | None = None,
    ) -> None:
        """``describe``: a query's inputs with their columns, its output's columns and their
        column lineage, from its plan (``Extractor.streaming_query``)."""
        self._factory = factory
        self._emitter = emitter
        self._interval = running_interval
        self._micro_batches = micro_batches
        self._describe = describe
        self._queries: dict[str, _Query] = {}
        self._lock = threading.Lock()

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - PySpark's callback names
        try:
            query = _Query(str(event.runId), event.name or None, _epoch(event.timestamp))
            with self._lock:
                self._queries[query.run_id] = query
            if self._micro_batches is not None:
                query.stream = self._micro_batches.track(str(event.id))
        except Exception:
            log.warning("Lineage: could not follow a streaming query's start", exc_info=True)

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        try:
            progress = event.progress
            with self._lock:
                query = self._queries.get(str(progress.runId))
                if query is None:  # started before lineage was switched on
                    query = _Query(str(progress.runId), progress.name or None, time.time())
                    self._queries[query.run_id] = query
                self._progress(query, progress)
        except Exception:
            log.warning("Lineage: could not follow a streaming query's progress", exc_info=True)

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        """An idle query has nothing new to say."""

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        try:
            with self._lock:
                query = self._queries.pop(str(event.runId), None)
            if query is None:
                return
            query.stream = None
            if query.job is None:  # ended before its first micro-batch
                self._start(query)
            error = str(event.exception) if event.exception else None
            self._send(query, "FAIL" if error else "COMPLETE", time.time(), error)
        except Exception:
            log.warning("Lineage: could not follow a streaming query's end", exc_info=True)

    def abort_running(self) -> list[dict[str, Any]]:
        """ABORT events for the queries still running as the application ends (their START sent
        and no end reported); the queries are forgotten."""
        with self._lock:
            running, self._queries = list(self._queries.values()), {}
        now = time.time()
        return [self._event(query, "ABORT", now) for query in running if query.job is not None]

    def _progress(self, query: _Query, progress: Any) -> None:
        changed = False
        for source in progress.sources or []:
            dataset = stream_source_dataset(str(source.description))
            if dataset is not None and dataset.key not in query.inputs:
                query.inputs[dataset.key] = DatasetInfo(dataset)
                changed = True
        if query.output is None and progress.sink is not None:
            dataset = stream_sink_dataset(str(progress.sink.description))
            query.output = DatasetInfo(dataset) if dataset is not None else None
            changed = changed or query.output is not None
        if query.job is None:
            self._read_plan(query)
            self._start(query)
            return
        now = time.time()
        if changed or now - query.last_sent >= self._interval:
            self._send(query, "RUNNING", _epoch(progress.timestamp))

    def _read_plan(self, query: _Query) -> None:
        """The columns the query reads and writes, and its column lineage, once its plan is
        analyzed (its first micro-batch has run); the names stay those of its progress report."""
        if query.stream is None or self._describe is None:
            return
        try:
            inputs, fields, lineage = self._describe(query.stream)
        except Exception:
            log.debug("Lineage: could not read a streaming query's plan", exc_info=True)
            return
        for info in inputs:
            if info.id.key in query.inputs:
                query.inputs[info.id.key] = info
        if query.output is not None:
            query.output = DatasetInfo(query.output.id, fields)
            query.lineage = lineage

    def _start(self, query: _Query) -> None:
        query.job = self._factory.streaming_job_name(
            query.name, query.output, list(query.inputs.values())
        )
        self._send(query, "START", query.started)

    def _send(self, query: _Query, event_type: str, when: float, error: str | None = None) -> None:
        query.last_sent = time.time()
        self._emitter.submit(self._event(query, event_type, when, error))

    def _event(
        self, query: _Query, event_type: str, when: float, error: str | None = None
    ) -> dict[str, Any]:
        assert query.job is not None
        return self._factory.streaming_event(
            event_type,
            when,
            query.run_id,
            query.job,
            list(query.inputs.values()),
            query.output,
            query.lineage,
            error,
        )
