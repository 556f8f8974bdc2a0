"""End to end: a real PySpark job (local[2]) with lineage switched on by HEADWATER_SPARK_LINEAGE=1.

The job (lineage_job.py) reads a CSV file and a Parquet folder, joins, filters and aggregates them
into a table with saveAsTable, runs an INSERT INTO … SELECT and a CTAS through spark.sql, fails one
write on purpose, reads a table back, renames it, adds a column to it and truncates it, creates an
external table and drops it, exports a table into a directory, and stops. The assertions check the exact events the listener
posted, and (when PostgreSQL is available) the lineage graph a real Headwater server built from them.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.integrations.spark.conftest import NAMESPACE, SparkJobRun

pytestmark = [pytest.mark.spark, pytest.mark.slow]

APP = "headwater_e2_e"  # "Headwater E2E", normalized like the official integration does
DEPT_WRITE = f"{APP}.execute_insert_into_hadoop_fs_relation_command.in_dept"
SAVE_AS_TABLE = f"{APP}.execute_create_data_source_table_as_select_command.default_dept_totals"
INSERT = f"{APP}.execute_insert_into_hadoop_fs_relation_command.default_dept_totals"
CTAS = f"{APP}.execute_create_data_source_table_as_select_command.default_top_depts"
FAILED = f"{APP}.execute_insert_into_hadoop_fs_relation_command.out_never"
UNRESOLVED = f"{APP}.execute_insert_into_statement.default_dept_totals"
RENAME = f"{APP}.execute_alter_table_rename_command.default_top_departments"
ALTER = f"{APP}.execute_alter_table_add_columns_command.default_top_departments"
TRUNCATE = f"{APP}.execute_truncate_table_command.default_top_departments"
COPY = f"{APP}.execute_create_data_source_table_as_select_command.default_dept_copy"
DROP = f"{APP}.drop_table.default_dept_copy"
EXPORT = f"{APP}.execute_insert_into_data_source_dir_command.out_export"
INSERT_SQL = "INSERT INTO dept_totals SELECT dept_name, total * 2, n FROM dept_totals WHERE n > 1"


class Paths:
    def __init__(self, run: SparkJobRun) -> None:
        w = str(run.workdir)
        self.emp = f"{w}/in/emp.csv"
        self.dept = f"{w}/in/dept"
        self.warehouse = f"file:{w}/warehouse"
        self.totals = f"{w}/warehouse/dept_totals"
        self.top = f"{w}/warehouse/top_depts"
        self.renamed = f"{w}/warehouse/top_departments"
        self.never = f"{w}/out/never"
        self.copy = f"{w}/out/dept_copy"
        self.export = f"{w}/out/export"


def time_of(event: dict[str, Any]) -> dt.datetime:
    return dt.datetime.fromisoformat(event["eventTime"])


def runs(run: SparkJobRun) -> dict[str, list[dict[str, Any]]]:
    """Child-run events by job name (the application's own events left out)."""
    by_job: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in run.events:
        if event["job"]["name"] != APP:
            by_job[event["job"]["name"]].append(event)
    return dict(by_job)


def final(run: SparkJobRun, job: str) -> dict[str, Any]:
    events = runs(run)[job]
    assert events[0]["eventType"] == "START"
    return events[-1]


def datasets(event: dict[str, Any], key: str) -> list[tuple[str, str]]:
    return [(d["namespace"], d["name"]) for d in event[key]]


def lineage(event: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """{column: {"<dataset name>.<field>": ["DIRECT:IDENTITY", ...]}} of the event's only output."""
    (out,) = event["outputs"]
    fields = out["facets"]["columnLineage"]["fields"]
    return {
        column: {
            f"{f['name']}.{f['field']}": [f"{t['type']}:{t['subtype']}" for t in f["transformations"]]
            for f in spec["inputFields"]
        }
        for column, spec in fields.items()
    }


def schema(dataset: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["name"], f["type"]) for f in dataset["facets"]["schema"]["fields"]]


# --------------------------------------------------------------------------- the events


def test_switched_on_from_the_environment_and_sent_with_key_and_gzip(spark_job: SparkJobRun) -> None:
    assert spark_job.printed("autoload") is True
    assert spark_job.printed("failed_on_purpose") == "SparkRuntimeException"
    assert spark_job.printed("analysis_failure") == "AnalysisException"
    assert sorted(spark_job.printed("top_depts")) == ["eng", "eng", "ops"]
    assert spark_job.requests, spark_job.log[-4000:]
    for request in spark_job.requests:
        assert request.path == "/api/v1/lineage"
        assert request.headers["Content-Encoding"] == "gzip"
        assert request.headers["Authorization"] == f"Bearer {spark_job.api_key}"
        assert 200 <= request.status < 300
    assert "Lineage: could not" not in spark_job.log


def test_application_run_is_the_parent_of_every_action(spark_job: SparkJobRun) -> None:
    import pyspark

    events = spark_job.events
    start, end = events[0], events[-1]
    assert (start["eventType"], end["eventType"]) == ("START", "COMPLETE")
    assert start["job"]["name"] == end["job"]["name"] == APP
    assert start["job"]["namespace"] == NAMESPACE
    assert start["run"]["runId"] == end["run"]["runId"]
    job_type = start["job"]["facets"]["jobType"]
    assert (job_type["integration"], job_type["jobType"], job_type["processingType"]) == (
        "SPARK",
        "APPLICATION",
        "NONE",
    )
    engine = start["run"]["facets"]["processing_engine"]
    assert (engine["name"], engine["version"]) == ("spark", pyspark.__version__)
    details = start["run"]["facets"]["spark_applicationDetails"]
    assert (details["appName"], details["master"]) == ("Headwater E2E", "local[2]")
    assert details["applicationId"].startswith("local-")

    app_run = start["run"]["runId"]
    for job, job_events in runs(spark_job).items():
        assert len(job_events) == 2, job
        first, last = job_events
        assert first["eventType"] == "START", job
        assert last["eventType"] == ("FAIL" if job in (FAILED, UNRESOLVED) else "COMPLETE"), job
        assert first["run"]["runId"] == last["run"]["runId"] != app_run
        assert time_of(start) <= time_of(first) <= time_of(last) <= time_of(end)
        for event in job_events:
            assert event["job"]["namespace"] == NAMESPACE
            parent = event["run"]["facets"]["parent"]
            assert parent["run"]["runId"] == app_run
            assert parent["job"] == {"namespace": NAMESPACE, "name": APP}
            assert event["run"]["facets"]["processing_engine"]["version"] == pyspark.__version__
            job_type = event["job"]["facets"]["jobType"]
            assert (job_type["jobType"], job_type["processingType"]) == ("SQL_JOB", "BATCH")


def test_one_child_job_per_action(spark_job: SparkJobRun) -> None:
    paths = Paths(spark_job)
    names = set(runs(spark_job))
    writes = {
        *(DEPT_WRITE, SAVE_AS_TABLE, INSERT, CTAS, FAILED, UNRESOLVED),
        *(RENAME, ALTER, TRUNCATE, COPY, DROP, EXPORT),
    }
    assert writes <= names
    # Besides the writes, one read: collect() of top_depts. The CSV reader's own header and schema
    # inference passes are not reported.
    (read,) = names - writes
    assert read.startswith(f"{APP}.")
    read_end = final(spark_job, read)
    assert datasets(read_end, "inputs") == [("file", paths.top)]
    assert read_end["outputs"] == []
    assert len(spark_job.events) == 2 + 2 * 13


def test_a_rename_says_what_the_table_was_called(spark_job: SparkJobRun) -> None:
    p = Paths(spark_job)
    rename = final(spark_job, RENAME)
    assert rename["inputs"] == []
    assert datasets(rename, "outputs") == [("file", p.renamed)]
    [renamed] = rename["outputs"]
    lifecycle = renamed["facets"]["lifecycleStateChange"]
    assert lifecycle["lifecycleStateChange"] == "RENAME"
    # The old name's TABLE symlink: the old path is gone from the catalog, and the table's storage
    # moved with its name.
    assert lifecycle["previousIdentifier"] == {"namespace": p.warehouse, "name": "default.top_depts"}
    assert [f["name"] for f in renamed["facets"]["schema"]["fields"]] == [
        "dept_name",
        "dept_id",
        "code",
        "total",
    ]


def test_an_export_into_a_directory(spark_job: SparkJobRun) -> None:
    p = Paths(spark_job)
    export = final(spark_job, EXPORT)
    assert datasets(export, "inputs") == [("file", p.totals)]
    assert datasets(export, "outputs") == [("file", p.export)]
    facets = export["outputs"][0]["facets"]
    assert facets["lifecycleStateChange"]["lifecycleStateChange"] == "OVERWRITE"
    assert lineage(export) == {
        "dept_name": {f"{p.totals}.dept_name": ["DIRECT:IDENTITY"]},
        "total": {f"{p.totals}.total": ["DIRECT:IDENTITY"]},
    }


def test_tables_changed_in_place(spark_job: SparkJobRun) -> None:
    """ALTER TABLE … ADD COLUMNS and TRUNCATE TABLE write the table, with its columns as the
    command left them."""
    p = Paths(spark_job)
    columns = ["dept_name", "dept_id", "code", "total", "note"]
    for job, lifecycle in ((ALTER, "ALTER"), (TRUNCATE, "TRUNCATE")):
        event = final(spark_job, job)
        assert event["eventType"] == "COMPLETE"
        assert event["inputs"] == []
        assert datasets(event, "outputs") == [("file", p.renamed)]
        [table] = event["outputs"]
        assert table["facets"]["lifecycleStateChange"] == {
            "_producer": table["facets"]["lifecycleStateChange"]["_producer"],
            "_schemaURL": table["facets"]["lifecycleStateChange"]["_schemaURL"],
            "lifecycleStateChange": lifecycle,
        }
        assert [f["name"] for f in table["facets"]["schema"]["fields"]] == columns


def test_a_drop_names_the_table_where_it_was(spark_job: SparkJobRun) -> None:
    """Spark reports the DROP once the catalog has forgotten the table; the listener names it by the
    LOCATION it found when the table was created, not by the warehouse path a table of that name
    would have."""
    p = Paths(spark_job)
    drop = final(spark_job, DROP)
    assert drop["eventType"] == "COMPLETE"
    assert drop["inputs"] == []
    assert datasets(drop, "outputs") == [("file", p.copy)]
    [dropped] = drop["outputs"]
    assert dropped["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "DROP"
    # The symlink's namespace is the table location's parent, as for every table without a Hive
    # metastore.
    symlinks = [
        {"namespace": f"file:{p.copy.rsplit('/', 1)[0]}", "name": "default.dept_copy", "type": "TABLE"}
    ]
    assert dropped["facets"]["symlinks"]["identifiers"] == symlinks
    assert "schema" not in dropped["facets"]  # the columns went with the table
    copy = final(spark_job, COPY)
    assert datasets(copy, "outputs") == [("file", p.copy)]
    assert copy["outputs"][0]["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "CREATE"
    assert copy["outputs"][0]["facets"]["symlinks"]["identifiers"] == symlinks


def test_inputs_and_outputs_of_each_action(spark_job: SparkJobRun) -> None:
    p = Paths(spark_job)

    dept_write = final(spark_job, DEPT_WRITE)
    assert dept_write["inputs"] == []  # an in-memory DataFrame
    assert datasets(dept_write, "outputs") == [("file", p.dept)]
    assert "columnLineage" not in dept_write["outputs"][0]["facets"]

    save = final(spark_job, SAVE_AS_TABLE)
    assert datasets(save, "inputs") == [("file", p.emp), ("file", p.dept)]
    assert schema(save["inputs"][0]) == [
        ("id", "integer"),
        ("name", "string"),
        ("dept_id", "integer"),
        ("salary", "integer"),
    ]
    assert schema(save["inputs"][1]) == [("dept_id", "integer"), ("dept_name", "string")]
    (out,) = save["outputs"]
    assert (out["namespace"], out["name"]) == ("file", p.totals)
    assert out["facets"]["dataSource"]["name"] == "file"
    assert out["facets"]["symlinks"]["identifiers"] == [
        {"namespace": p.warehouse, "name": "default.dept_totals", "type": "TABLE"}
    ]
    assert out["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "OVERWRITE"
    assert schema(out) == [("dept_name", "string"), ("total", "long"), ("n", "long")]

    insert = final(spark_job, INSERT)
    assert datasets(insert, "inputs") == [("file", p.totals)]
    assert insert["inputs"][0]["facets"]["symlinks"] == out["facets"]["symlinks"]
    assert datasets(insert, "outputs") == [("file", p.totals)]
    assert "lifecycleStateChange" not in insert["outputs"][0]["facets"]  # an append

    ctas = final(spark_job, CTAS)
    assert datasets(ctas, "inputs") == [("file", p.totals), ("file", p.dept)]
    (top,) = ctas["outputs"]
    assert (top["namespace"], top["name"]) == ("file", p.top)
    assert top["facets"]["symlinks"]["identifiers"] == [
        {"namespace": p.warehouse, "name": "default.top_depts", "type": "TABLE"}
    ]
    assert top["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "CREATE"
    assert schema(top) == [
        ("dept_name", "string"),
        ("dept_id", "integer"),
        ("code", "string"),
        ("total", "long"),
    ]

    failed = final(spark_job, FAILED)
    assert datasets(failed, "inputs") == [("file", p.emp)]
    assert datasets(failed, "outputs") == [("file", p.never)]


def test_column_lineage_of_each_write(spark_job: SparkJobRun) -> None:
    p = Paths(spark_job)
    join_filter = {
        f"{p.dept}.dept_id": ["INDIRECT:JOIN"],
        f"{p.emp}.dept_id": ["INDIRECT:JOIN"],
        f"{p.emp}.salary": ["INDIRECT:FILTER"],
    }
    assert lineage(final(spark_job, SAVE_AS_TABLE)) == {
        "dept_name": {**join_filter, f"{p.dept}.dept_name": ["DIRECT:IDENTITY", "INDIRECT:GROUP_BY"]},
        "total": {
            **join_filter,
            f"{p.dept}.dept_name": ["INDIRECT:GROUP_BY"],
            f"{p.emp}.salary": ["DIRECT:AGGREGATION", "INDIRECT:FILTER"],
        },
        "n": {**join_filter, f"{p.dept}.dept_name": ["INDIRECT:GROUP_BY"]},
    }
    assert lineage(final(spark_job, INSERT)) == {
        "dept_name": {
            f"{p.totals}.dept_name": ["DIRECT:IDENTITY"],
            f"{p.totals}.n": ["INDIRECT:FILTER"],
        },
        "total": {f"{p.totals}.n": ["INDIRECT:FILTER"], f"{p.totals}.total": ["DIRECT:TRANSFORMATION"]},
        "n": {f"{p.totals}.n": ["DIRECT:IDENTITY", "INDIRECT:FILTER"]},
    }
    join_where = {
        f"{p.dept}.dept_name": ["INDIRECT:JOIN"],
        f"{p.totals}.dept_name": ["INDIRECT:JOIN"],
        f"{p.totals}.total": ["INDIRECT:FILTER"],
    }
    assert lineage(final(spark_job, CTAS)) == {
        "dept_name": {**join_where, f"{p.totals}.dept_name": ["DIRECT:IDENTITY", "INDIRECT:JOIN"]},
        "dept_id": {**join_where, f"{p.dept}.dept_id": ["DIRECT:IDENTITY"]},
        "code": {**join_where, f"{p.totals}.dept_name": ["DIRECT:TRANSFORMATION", "INDIRECT:JOIN"]},
        "total": {**join_where, f"{p.totals}.total": ["DIRECT:IDENTITY", "INDIRECT:FILTER"]},
    }
    assert lineage(final(spark_job, FAILED)) == {
        "id": {f"{p.emp}.id": ["DIRECT:IDENTITY"]},
        "checked": {f"{p.emp}.salary": ["INDIRECT:CONDITIONAL"]},
    }


def test_sql_facet_only_for_sql_statements(spark_job: SparkJobRun) -> None:
    p = Paths(spark_job)
    insert_sql = final(spark_job, INSERT)["job"]["facets"]["sql"]
    assert (insert_sql["query"], insert_sql["dialect"]) == (INSERT_SQL, "spark")
    ctas_sql = final(spark_job, CTAS)["job"]["facets"]["sql"]["query"]
    assert ctas_sql.startswith("CREATE TABLE top_depts USING parquet AS SELECT")
    assert f"parquet.`{p.dept}`" in ctas_sql
    for job in (DEPT_WRITE, SAVE_AS_TABLE, FAILED):
        assert "sql" not in final(spark_job, job)["job"]["facets"], job


def test_statement_that_fails_analysis_names_its_target_table(spark_job: SparkJobRun) -> None:
    p = Paths(spark_job)
    start, end = runs(spark_job)[UNRESOLVED]
    assert (start["eventType"], end["eventType"]) == ("START", "FAIL")
    assert end["inputs"] == []
    (out,) = end["outputs"]
    assert (out["namespace"], out["name"]) == ("file", p.totals)
    assert out["facets"]["symlinks"]["identifiers"][0]["name"] == "default.dept_totals"
    assert "columnLineage" not in out["facets"]
    assert end["job"]["facets"]["sql"]["query"] == "INSERT INTO dept_totals SELECT nope FROM dept_totals"
    assert "UNRESOLVED_COLUMN" in end["run"]["facets"]["errorMessage"]["message"]


def test_failed_write_reports_the_error(spark_job: SparkJobRun) -> None:
    start, end = runs(spark_job)[FAILED]
    assert "errorMessage" not in start["run"]["facets"]
    error = end["run"]["facets"]["errorMessage"]
    assert "USER_RAISED_EXCEPTION" in error["message"]
    assert error["programmingLanguage"] == "JAVA"
    assert "SparkRuntimeException" in error["stackTrace"]


# --------------------------------------------------------------------------- Headwater


def headwater_get(run: SparkJobRun, path: str, **params: Any) -> dict[str, Any]:
    if run.headwater is None:
        pytest.skip("no PostgreSQL here: the events were checked against the local receiver only")
    headers = {"Authorization": f"Bearer {run.headwater.api_key}"}
    response = httpx.get(f"{run.headwater.url}{path}", params=params, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def edges(graph: dict[str, Any]) -> set[tuple[str, str]]:
    return {(e["origin"], e["destination"]) for node in graph["graph"] for e in node["outEdges"]}


@pytest.mark.db
def test_headwater_lineage_graph(spark_job: SparkJobRun) -> None:
    """The listener posted to a real `headwater serve`; its graph joins paths and table names."""
    p = Paths(spark_job)
    # A table's canonical node is its TABLE symlink; plain paths keep (file, path).
    top = f"dataset:{p.warehouse}:default.top_depts"
    totals = f"dataset:{p.warehouse}:default.dept_totals"
    emp, dept = f"dataset:file:{p.emp}", f"dataset:file:{p.dept}"

    def job(name: str) -> str:
        return f"job:{NAMESPACE}:{name}"

    upstream = headwater_get(spark_job, "/api/v1/lineage", nodeId=top, depth=10, direction="UPSTREAM")
    expected_edges = {
        (job(DEPT_WRITE), dept),
        (emp, job(SAVE_AS_TABLE)),
        (dept, job(SAVE_AS_TABLE)),
        (job(SAVE_AS_TABLE), totals),
        (totals, job(INSERT)),
        (job(INSERT), totals),
        (totals, job(CTAS)),
        (dept, job(CTAS)),
        (job(CTAS), top),
    }
    assert expected_edges <= edges(upstream)
    nodes = {node["id"]: node for node in upstream["graph"]}
    assert {top, totals, emp, dept} | {job(j) for j in (DEPT_WRITE, SAVE_AS_TABLE, INSERT, CTAS)} <= set(
        nodes
    )
    # Headwater also derives tables from the sql facet; those carry no path and are not checked here.
    assert job(FAILED) not in nodes
    assert [f["name"] for f in nodes[top]["data"]["fields"]] == ["dept_name", "dept_id", "code", "total"]

    downstream = headwater_get(spark_job, "/api/v1/lineage", nodeId=top, depth=1, direction="DOWNSTREAM")
    (reader,) = [n["id"] for n in downstream["graph"] if n["type"] == "JOB" and n["id"] != job(RENAME)]
    assert reader.startswith(f"job:{NAMESPACE}:{APP}.")

    # Renamed, the table keeps its upstream: the rename read it under its old name.
    renamed = f"dataset:{p.warehouse}:default.top_departments"
    upstream = headwater_get(
        spark_job, "/api/v1/lineage", nodeId=renamed, depth=10, direction="UPSTREAM"
    )
    assert {(top, job(RENAME)), (job(RENAME), renamed)} | expected_edges <= edges(upstream)

    # The column added by ALTER TABLE is in the table's current schema; TRUNCATE came last.
    namespace = quote(p.warehouse, safe="")
    table = headwater_get(spark_job, f"/api/v1/namespaces/{namespace}/datasets/default.top_departments")
    assert [f["name"] for f in table["fields"]] == ["dept_name", "dept_id", "code", "total", "note"]
    assert table["lastLifecycleState"] == "TRUNCATE"

    # Dropped, a table stays in lineage, its catalog entry saying so.
    out = f"file:{p.copy.rsplit('/', 1)[0]}"
    copy = f"dataset:{out}:default.dept_copy"
    upstream = headwater_get(spark_job, "/api/v1/lineage", nodeId=copy, depth=1, direction="UPSTREAM")
    assert {(totals, job(COPY)), (job(COPY), copy), (job(DROP), copy)} <= edges(upstream)
    namespace = quote(out, safe="")
    table = headwater_get(spark_job, f"/api/v1/namespaces/{namespace}/datasets/default.dept_copy")
    assert table["lastLifecycleState"] == "DROP"
    assert [f["name"] for f in table["fields"]] == ["dept_name", "total"]

    failed = headwater_get(spark_job, "/api/v1/lineage", nodeId=job(FAILED), depth=0)
    assert (emp, job(FAILED)) in edges(failed)


@pytest.mark.db
def test_headwater_column_lineage(spark_job: SparkJobRun) -> None:
    p = Paths(spark_job)
    top = f"dataset:{p.warehouse}:default.top_depts"
    graph = headwater_get(spark_job, "/api/v1/column-lineage", nodeId=top, depth=10)
    fields = {node["id"]: node["data"] for node in graph["graph"]}

    def inputs(field_id: str) -> dict[tuple[str, str, str], list[str]]:
        return {
            (f["namespace"], f["dataset"], f["field"]): [
                f"{t['type']}:{t['subtype']}" for t in f["transformations"]
            ]
            for f in fields[field_id]["inputFields"]
        }

    code = inputs(f"datasetField:{p.warehouse}:default.top_depts:code")
    assert code == {
        ("file", p.dept, "dept_name"): ["INDIRECT:JOIN"],
        (p.warehouse, "default.dept_totals", "dept_name"): ["DIRECT:TRANSFORMATION", "INDIRECT:JOIN"],
        (p.warehouse, "default.dept_totals", "total"): ["INDIRECT:FILTER"],
    }
    # Two hops up, through the table both saveAsTable and the INSERT wrote: the CSV's salary.
    total = inputs(f"datasetField:{p.warehouse}:default.dept_totals:total")
    assert total[("file", p.emp, "salary")] == ["DIRECT:AGGREGATION", "INDIRECT:FILTER"]
    assert total[(p.warehouse, "default.dept_totals", "total")] == ["DIRECT:TRANSFORMATION"]
    assert f"datasetField:file:{p.emp}:salary" in fields

    # The renamed table's columns are its columns under the old name, and go on up from there.
    renamed = f"dataset:{p.warehouse}:default.top_departments"
    graph = headwater_get(spark_job, "/api/v1/column-lineage", nodeId=renamed, depth=10)
    fields = {node["id"]: node["data"] for node in graph["graph"]}
    assert inputs(f"datasetField:{p.warehouse}:default.top_departments:total") == {
        (p.warehouse, "default.top_depts", "total"): ["DIRECT:IDENTITY"]
    }
    assert f"datasetField:file:{p.emp}:salary" in fields


def test_events_arrive_soon_after_their_action(spark_job: SparkJobRun) -> None:
    """COMPLETE/FAIL reach the server within seconds of the action's end (writes wait up to 2 s
    for an outer command, then queue behind each other)."""
    delays = [
        r.received_at - time_of(r.body).timestamp()
        for r in spark_job.requests
        if r.body["eventType"] in ("COMPLETE", "FAIL") and r.body["job"]["name"] != APP
    ]
    assert delays
    assert max(delays) < 15, delays
