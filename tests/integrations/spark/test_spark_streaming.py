"""Structured Streaming, end to end: a real PySpark streaming query (streaming_job.py) with lineage
switched on from the environment, its events checked, and the lineage a real Headwater built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integrations.spark.conftest import NAMESPACE, SparkJobRun, run_spark_script
from tests.integrations.spark.test_spark_e2e import datasets, edges, headwater_get, lineage, schema
from tests.server import HeadwaterServer

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOB = Path(__file__).with_name("streaming_job.py")
APP = "headwater_streaming"
SHOUT = f"{APP}.shouted.{{workdir}}_shouted"


@pytest.fixture(scope="module")
def streaming_job(
    headwater: HeadwaterServer | None, tmp_path_factory: pytest.TempPathFactory
) -> SparkJobRun:
    return run_spark_script(JOB, headwater, tmp_path_factory.mktemp("spark-streaming"))


def run_events(run: SparkJobRun, run_id: str) -> list[dict[str, Any]]:
    return [e for e in run.events if e["run"]["runId"] == run_id]


def test_each_run_of_a_streaming_query_is_a_run_of_one_job(streaming_job: SparkJobRun) -> None:
    w = str(streaming_job.workdir)
    job = SHOUT.format(workdir=streaming_job.workdir.name)
    app = next(e for e in streaming_job.events if e["job"]["name"] == APP)
    for key in ("first_run", "second_run"):
        events = run_events(streaming_job, streaming_job.printed(key))
        # Spark's own run id; START dated when the query started, COMPLETE when it stopped.
        assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
        assert {e["job"]["name"] for e in events} == {job}
        for event in events:
            assert event["job"]["namespace"] == NAMESPACE
            assert datasets(event, "inputs") == [("file", f"{w}/incoming")]
            assert datasets(event, "outputs") == [("file", f"{w}/shouted")]
            job_type = event["job"]["facets"]["jobType"]
            assert (job_type["jobType"], job_type["processingType"]) == ("SQL_JOB", "STREAMING")
            assert event["run"]["facets"]["parent"]["run"]["runId"] == app["run"]["runId"]
        assert events[0]["eventTime"] <= events[1]["eventTime"]
    assert streaming_job.printed("first_run") != streaming_job.printed("second_run")


def test_a_streaming_query_has_columns_and_column_lineage(streaming_job: SparkJobRun) -> None:
    """From the query's plan, as for a batch write: what it reads of its source, what it writes."""
    w = str(streaming_job.workdir)
    [start, _] = run_events(streaming_job, streaming_job.printed("first_run"))
    [source], [sink] = start["inputs"], start["outputs"]
    assert schema(source) == [("id", "integer"), ("name", "string")]
    assert schema(sink) == [("id", "integer"), ("shout", "string")]
    assert lineage(start) == {
        "id": {f"{w}/incoming.id": ["DIRECT:IDENTITY"]},
        "shout": {f"{w}/incoming.name": ["DIRECT:TRANSFORMATION"]},
    }


def test_a_foreach_batch_write_reads_the_stream_sources(streaming_job: SparkJobRun) -> None:
    """The function's write reads a micro-batch, an RDD naming nothing; it is given the sources of
    the query whose micro-batch it is, without columns, since the batch's columns are the query's."""
    w = str(streaming_job.workdir)
    [write] = [
        e
        for e in streaming_job.events
        if e["eventType"] == "COMPLETE" and datasets(e, "outputs") == [("file", f"{w}/whispered")]
    ]
    assert write["job"]["facets"]["jobType"]["processingType"] == "BATCH"
    assert datasets(write, "inputs") == [("file", f"{w}/incoming")]
    assert "schema" not in write["inputs"][0]["facets"]
    assert "columnLineage" not in write["outputs"][0]["facets"]


def test_a_failed_streaming_query_says_why(streaming_job: SparkJobRun) -> None:
    assert streaming_job.printed("failed_on_purpose") == "StreamingQueryException"
    events = run_events(streaming_job, streaming_job.printed("failed_run"))
    assert [e["eventType"] for e in events] == ["START", "FAIL"]
    # It failed in its first micro-batch: no progress ever said what it reads and writes.
    assert events[-1]["job"]["name"] == f"{APP}.broken"
    assert "DIVIDE_BY_ZERO" in events[-1]["run"]["facets"]["errorMessage"]["message"]


def test_a_query_running_when_the_application_stops_is_aborted(streaming_job: SparkJobRun) -> None:
    events = run_events(streaming_job, streaming_job.printed("running_run"))
    # START, maybe a RUNNING (a minute apart at most), then ABORT.
    types = [e["eventType"] for e in events]
    assert (types[0], types[-1]) == ("START", "ABORT")
    assert set(types[1:-1]) <= {"RUNNING"}
    assert {e["job"]["name"] for e in events} == {f"{APP}.kept.{streaming_job.workdir.name}_kept"}


@pytest.mark.db
def test_headwater_lineage_of_a_streaming_query(streaming_job: SparkJobRun) -> None:
    w = str(streaming_job.workdir)
    job = f"job:{NAMESPACE}:{SHOUT.format(workdir=streaming_job.workdir.name)}"
    incoming, shouted = f"dataset:file:{w}/incoming", f"dataset:file:{w}/shouted"
    upstream = headwater_get(
        streaming_job, "/api/v1/lineage", nodeId=shouted, depth=2, direction="UPSTREAM"
    )
    assert {(incoming, job), (job, shouted)} <= edges(upstream)
    whispered = f"dataset:file:{w}/whispered"
    upstream = headwater_get(
        streaming_job, "/api/v1/lineage", nodeId=whispered, depth=2, direction="UPSTREAM"
    )
    assert incoming in {node["id"] for node in upstream["graph"]}
    runs = headwater_get(
        streaming_job,
        f"/api/v1/namespaces/{NAMESPACE}/jobs/{SHOUT.format(workdir=streaming_job.workdir.name)}/runs",
    )
    assert {r["id"] for r in runs["runs"]} == {
        streaming_job.printed("first_run"),
        streaming_job.printed("second_run"),
    }
    assert {r["state"] for r in runs["runs"]} == {"COMPLETED"}
    field = f"datasetField:file:{w}/shouted:shout"
    graph = headwater_get(streaming_job, "/api/v1/column-lineage", nodeId=field)
    fields = {node["id"]: node["data"] for node in graph["graph"]}
    [source_field] = fields[field]["inputFields"]
    assert (source_field["dataset"], source_field["field"]) == (f"{w}/incoming", "name")
