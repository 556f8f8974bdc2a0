"""The streaming listener's decisions, driven by Spark-shaped callbacks without Spark: when a query's
run starts, goes on and ends, and what its sources and sink name."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from headwater_spark.events import AppInfo, EventFactory
from headwater_spark.model import DatasetInfo
from headwater_spark.naming import DatasetId, stream_sink_dataset, stream_source_dataset
from headwater_spark.plan import InputField, Transformation

pytest.importorskip("pyspark")

from headwater_spark.streaming import StreamingLineage

QUERY = "51aedcfd-c865-44a4-8e51-a5f8e0eb9cbe"  # the query, across its runs
RUN = "8b9e8318-a8de-4357-b380-205dde8aa441"


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("FileStreamSource[file:/data/in]", DatasetId("file", "/data/in")),
        ("FileStreamSource[s3a://bucket/events]", DatasetId("s3://bucket", "events")),
        ("KafkaV2[Subscribe[orders]]", None),
        ("RateStreamV2[rowsPerSecond=5, rampUpTimeSeconds=0, numPartitions=default", None),
    ],
)
def test_stream_sources(description: str, expected: DatasetId | None) -> None:
    assert stream_source_dataset(description) == expected


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("FileSink[file:/data/out]", DatasetId("file", "/data/out")),
        ("FileSink[hdfs://nn:8020/warehouse/t]", DatasetId("hdfs://nn:8020", "/warehouse/t")),
        ("ForeachBatchSink", None),
        ("MemorySink", None),
        ("org.apache.spark.sql.execution.streaming.ConsoleTable$@1b2c3d", None),
    ],
)
def test_stream_sinks(description: str, expected: DatasetId | None) -> None:
    assert stream_sink_dataset(description) == expected


class Collected:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def submit(self, event: dict[str, Any]) -> bool:
        self.events.append(event)
        return True


def listener(interval: float) -> tuple[StreamingLineage, Collected]:
    factory = EventFactory(AppInfo("Stream App", "4.0.0", 1_700_000_000.0), "ns")
    collected = Collected()
    return StreamingLineage(factory, collected, running_interval=interval), collected  # type: ignore[arg-type]


def started(name: str | None = "orders") -> Any:
    return SimpleNamespace(id=QUERY, runId=RUN, name=name, timestamp="2026-11-30T08:00:00.000Z")


def progress(*sources: str, sink: str = "FileSink[file:/out]", at: str = "08:00:05") -> Any:
    return SimpleNamespace(
        progress=SimpleNamespace(
            runId=RUN,
            name="orders",
            timestamp=f"2026-11-30T{at}.000Z",
            sources=[SimpleNamespace(description=s) for s in sources],
            sink=SimpleNamespace(description=sink),
        )
    )


def summary(events: list[dict[str, Any]]) -> list[tuple[str, list[str], list[str]]]:
    return [
        (e["eventType"], [d["name"] for d in e["inputs"]], [d["name"] for d in e["outputs"]])
        for e in events
    ]


def test_a_query_starts_at_its_first_progress_and_runs_when_its_datasets_change() -> None:
    streaming, collected = listener(interval=3600)
    streaming.onQueryStarted(started())
    assert collected.events == []  # nothing says yet what it reads and writes
    streaming.onQueryProgress(progress("FileStreamSource[file:/in/a]"))
    streaming.onQueryProgress(progress("FileStreamSource[file:/in/a]"))  # nothing new: no event
    streaming.onQueryProgress(progress("FileStreamSource[file:/in/a]", "FileStreamSource[file:/in/b]"))
    streaming.onQueryTerminated(SimpleNamespace(runId=RUN, exception=None))
    assert summary(collected.events) == [
        ("START", ["/in/a"], ["/out"]),
        ("RUNNING", ["/in/a", "/in/b"], ["/out"]),
        ("COMPLETE", ["/in/a", "/in/b"], ["/out"]),
    ]
    start = collected.events[0]
    assert start["eventTime"] == "2026-11-30T08:00:00.000+00:00"  # when the query started
    assert start["run"]["runId"] == RUN
    assert {e["job"]["name"] for e in collected.events} == {"stream_app.orders.out"}
    assert start["job"]["facets"]["jobType"]["processingType"] == "STREAMING"


def test_columns_and_lineage_come_from_the_plan_once_it_has_run() -> None:
    field = InputField(("file", "/in/a"), "name", [Transformation("DIRECT", "TRANSFORMATION")])
    described: list[Any] = []

    def describe(stream: Any) -> Any:
        described.append(stream)
        inputs = [DatasetInfo(DatasetId("file", "/in/a"), [{"name": "name", "type": "string"}])]
        return inputs, [{"name": "shout", "type": "string"}], {"shout": [field]}

    factory = EventFactory(AppInfo("Stream App", "4.0.0", 1_700_000_000.0), "ns")
    collected = Collected()
    streaming = StreamingLineage(factory, collected, micro_batches=Tracked(), describe=describe)  # type: ignore[arg-type]
    streaming.onQueryStarted(started())
    streaming.onQueryProgress(progress("FileStreamSource[file:/in/a]"))
    assert described == ["the query"]
    [start] = collected.events
    assert start["inputs"][0]["facets"]["schema"]["fields"] == [{"name": "name", "type": "string"}]
    [out] = start["outputs"]
    assert (out["name"], out["facets"]["schema"]["fields"]) == (
        "/out",
        [{"name": "shout", "type": "string"}],
    )
    assert out["facets"]["columnLineage"]["fields"]["shout"]["inputFields"] == [
        {
            "namespace": "file",
            "name": "/in/a",
            "field": "name",
            "transformations": [{"type": "DIRECT", "subtype": "TRANSFORMATION", "masking": False}],
        }
    ]


class Tracked:
    """The micro-batch sessions, as far as the streaming listener asks them: the query it started."""

    def track(self, query_id: str) -> str:
        return "the query"


def test_a_long_query_says_it_is_alive_every_interval() -> None:
    streaming, collected = listener(interval=0)
    streaming.onQueryStarted(started(name=None))
    for _ in range(3):
        streaming.onQueryProgress(progress("FileStreamSource[file:/in/a]", sink="ForeachBatchSink"))
    assert [e["eventType"] for e in collected.events] == ["START", "RUNNING", "RUNNING"]
    # No output, no name: the job is named after what it reads.
    assert collected.events[0]["job"]["name"] == "stream_app.streaming_query.in_a"
    assert collected.events[0]["outputs"] == []


def test_a_query_that_fails_before_any_progress() -> None:
    streaming, collected = listener(interval=60)
    streaming.onQueryStarted(started())
    streaming.onQueryTerminated(SimpleNamespace(runId=RUN, exception="java.lang.ArithmeticException"))
    assert [e["eventType"] for e in collected.events] == ["START", "FAIL"]
    assert collected.events[1]["run"]["facets"]["errorMessage"]["message"] == (
        "java.lang.ArithmeticException"
    )


def test_queries_still_running_when_the_application_ends_are_aborted() -> None:
    streaming, collected = listener(interval=60)
    streaming.onQueryStarted(started())
    streaming.onQueryProgress(progress("FileStreamSource[file:/in/a]"))
    ending = streaming.abort_running()
    assert summary(ending) == [("ABORT", ["/in/a"], ["/out"])]
    assert ending[0]["run"]["runId"] == RUN
    assert streaming.abort_running() == []  # forgotten
    # Its end reported after all changes nothing: the run has ended.
    streaming.onQueryTerminated(SimpleNamespace(runId=RUN, exception=None))
    assert [e["eventType"] for e in collected.events] == ["START"]


def test_a_query_that_never_started_its_run_is_not_aborted() -> None:
    streaming, _ = listener(interval=60)
    streaming.onQueryStarted(started())
    assert streaming.abort_running() == []


def test_a_callback_that_cannot_be_read_never_raises_into_spark() -> None:
    streaming, collected = listener(interval=60)
    streaming.onQueryStarted(object())
    streaming.onQueryProgress(object())
    streaming.onQueryTerminated(object())
    assert collected.events == []
