"""Which streaming query a micro-batch belongs to, so that a ``foreachBatch`` function's writes read
the query's sources.

Inside ``foreachBatch(f)``, ``f`` gets each micro-batch as a DataFrame over an RDD (a ``LogicalRDD``
in its plan) that names nothing it was read from. What does tie it to its query is the session:
Spark runs every micro-batch of a query in a session of the query's own
(``StreamExecution.sparkSessionForStream``), and the batch listener sees that session on each action
(``QueryExecution.sparkSession``). So the streaming listener records each query's session when the
query starts, and the batch listener gives a micro-batch read the sources of the query whose session
ran it (file sources, named by path as the streaming listener names them).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any

from headwater_spark.jvm import scala_list
from headwater_spark.naming import DatasetId, stream_source_dataset

log = logging.getLogger("headwater_spark")

# Queries remembered after they end: the batch listener may report a query's last micro-batch after
# the streaming listener has seen the query end.
REMEMBERED_QUERIES = 100
# A streaming query's sources in its plan.
_STREAMING_RELATIONS = frozenset({"StreamingExecutionRelation", "StreamingDataSourceV2Relation"})


class MicroBatchSessions:
    """Streaming queries by the identity of the session their micro-batches run in."""

    def __init__(self, jvm: Any, jsession: Any) -> None:
        self._jvm = jvm
        self._jsession = jsession
        self._streams: OrderedDict[int, Any] = OrderedDict()  # session identity -> StreamExecution
        self._lock = threading.Lock()

    def _identity(self, session: Any) -> int:
        return int(self._jvm.System.identityHashCode(session))

    def track(self, query_id: str) -> Any:
        """Record the session of a query that started, and return the query (its
        ``StreamExecution``); None if it has ended already (then the batch listener looks among the
        active queries, see ``sources_of``)."""
        wrapper = self._jsession.streams().get(query_id)
        if wrapper is None:
            return None
        stream = wrapper.streamingQuery()
        self._remember(stream)
        return stream

    def _remember(self, stream: Any) -> int:
        key = self._identity(stream.sparkSessionForStream())
        with self._lock:
            self._streams.pop(key, None)
            self._streams[key] = stream
            while len(self._streams) > REMEMBERED_QUERIES:
                self._streams.popitem(last=False)
        return key

    def sources_of(self, session: Any) -> list[DatasetId] | None:
        """The datasets the streaming query running in ``session`` reads, or None when ``session``
        runs no streaming query (a DataFrame over an RDD of the user's own)."""
        key = self._identity(session)
        with self._lock:
            stream = self._streams.get(key)
        if stream is None:
            for active in self._jsession.streams().active():
                if self._remember(active.streamingQuery()) == key:
                    stream = active.streamingQuery()
                    break
        if stream is None:
            return None
        found: dict[tuple[str, str], DatasetId] = {}
        for dataset in stream_sources(self._jvm, stream.logicalPlan()).values():
            found.setdefault(dataset.key, dataset)
        return list(found.values())


def stream_sources(jvm: Any, plan: Any) -> dict[int, DatasetId]:
    """The sources of a streaming query's plan (py4j), by the id of each one's first column, named
    by their descriptions as the query's progress reports give them (files only)."""
    found: dict[int, DatasetId] = {}
    for leaf in scala_list(jvm, plan.collectLeaves()):
        if str(leaf.getClass().getSimpleName()) in _STREAMING_RELATIONS and not leaf.output().isEmpty():
            dataset = stream_source_dataset(str(leaf.toString()))
            if dataset is not None:
                found[int(leaf.output().head().exprId().id())] = dataset
    return found
