"""Statements that may change nothing (DROP … IF EXISTS, CREATE TABLE IF NOT EXISTS, writes in mode
"ignore", INSERT OVERWRITE … IF NOT EXISTS), run by a real PySpark job (if_exists_job.py) with
lineage switched on from the environment: only those that did change a table or a path are reported,
and the lineage a real Headwater built from the events holds no dataset that never existed."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.integrations.spark.conftest import SparkJobRun, run_spark_script
from tests.integrations.spark.test_spark_e2e import datasets, headwater_get, schema
from tests.server import HeadwaterServer

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOB = Path(__file__).with_name("if_exists_job.py")
APP = "headwater_if_exists"
CREATE_PEOPLE = f"{APP}.execute_create_data_source_table_command.default_people"
INSERT_PEOPLE = f"{APP}.execute_insert_into_hadoop_fs_relation_command.default_people"
CREATE_NAMES = f"{APP}.execute_create_data_source_table_as_select_command.default_names"
KEPT = f"{APP}.execute_insert_into_hadoop_fs_relation_command.out_kept"
CREATE_PARTS = f"{APP}.execute_create_data_source_table_command.default_parts"
INSERT_PARTS = f"{APP}.execute_insert_into_hadoop_fs_relation_command.default_parts"
DROP_NAMES = f"{APP}.drop_table.default_names"
DROP_ELSEWHERE = f"{APP}.drop_table.default_elsewhere"
REPORTED = {
    CREATE_PEOPLE,
    INSERT_PEOPLE,
    CREATE_NAMES,
    KEPT,
    CREATE_PARTS,
    INSERT_PARTS,
    DROP_NAMES,
    DROP_ELSEWHERE,
}


@pytest.fixture(scope="module")
def if_exists_job(
    headwater: HeadwaterServer | None, tmp_path_factory: pytest.TempPathFactory
) -> SparkJobRun:
    return run_spark_script(JOB, headwater, tmp_path_factory.mktemp("spark-if-exists"))


def runs(run: SparkJobRun) -> dict[str, list[dict[str, Any]]]:
    """Child-run events by job name (the application's own events left out)."""
    by_job: dict[str, list[dict[str, Any]]] = {}
    for event in run.events:
        if event["job"]["name"] != APP:
            by_job.setdefault(event["job"]["name"], []).append(event)
    return by_job


def final(run: SparkJobRun, job: str) -> dict[str, Any]:
    start, end = runs(run)[job]
    assert (start["eventType"], end["eventType"]) == ("START", "COMPLETE")
    return end


def lifecycle(dataset: dict[str, Any]) -> str | None:
    change = dataset["facets"].get("lifecycleStateChange")
    return change["lifecycleStateChange"] if change else None


def test_only_statements_that_changed_something_are_reported(if_exists_job: SparkJobRun) -> None:
    """One run for each statement that changed a table or a path, and none for the others: DROP
    TABLE / DROP VIEW IF EXISTS of nothing, the DROP TABLE and CREATE TABLE that failed, CREATE
    TABLE IF NOT EXISTS (also AS SELECT) and saveAsTable in mode "ignore" of a table that existed,
    DROP TABLE IF EXISTS of a view, the second write in mode "ignore" and the second INSERT
    OVERWRITE … IF NOT EXISTS."""
    assert [line["failed"] for line in if_exists_job.output if "failed" in line] == [
        "DROP TABLE never_existed",
        "CREATE TABLE people (other double) USING parquet",
    ]
    by_job = runs(if_exists_job)
    assert set(by_job) == REPORTED
    for job, events in by_job.items():
        assert [e["eventType"] for e in events] == ["START", "COMPLETE"], job
    assert len(if_exists_job.events) == 2 + 2 * len(REPORTED)


def test_no_dataset_that_never_existed(if_exists_job: SparkJobRun) -> None:
    named = {
        name
        for event in if_exists_job.events
        for dataset in [*event.get("inputs", []), *event.get("outputs", [])]
        for name in [
            dataset["name"],
            *(s["name"] for s in dataset["facets"].get("symlinks", {}).get("identifiers", [])),
        ]
    }
    for never in ("never_existed", "never_a_view", "people_view"):
        assert not [n for n in named if never in n], never


def test_a_table_is_created_once_with_its_own_columns(if_exists_job: SparkJobRun) -> None:
    w = str(if_exists_job.workdir)
    created = [
        (event["job"]["name"], out)
        for event in if_exists_job.events
        for out in event.get("outputs", [])
        if lifecycle(out) == "CREATE"
    ]
    # START and COMPLETE of each table created: people and parts by CREATE TABLE, names by CTAS.
    assert sorted({(job, out["name"]) for job, out in created}) == [
        (CREATE_NAMES, f"{w}/warehouse/names"),
        (CREATE_PARTS, f"{w}/warehouse/parts"),
        (CREATE_PEOPLE, f"{w}/warehouse/people"),
    ]
    people = final(if_exists_job, CREATE_PEOPLE)["outputs"][0]
    assert schema(people) == [("id", "integer"), ("name", "string")]
    # The columns the statements that left the table alone gave it never show up.
    insert = final(if_exists_job, INSERT_PEOPLE)
    assert schema(insert["outputs"][0]) == [("id", "integer"), ("name", "string")]
    names = final(if_exists_job, CREATE_NAMES)
    assert datasets(names, "inputs") == [("file", f"{w}/warehouse/people")]


def test_writes_that_wrote_nothing_are_not_reported(if_exists_job: SparkJobRun) -> None:
    w = str(if_exists_job.workdir)
    kept = final(if_exists_job, KEPT)
    assert datasets(kept, "outputs") == [("file", f"{w}/out/kept")]
    assert schema(kept["outputs"][0]) == [("id", "integer"), ("name", "string")]
    parts = final(if_exists_job, INSERT_PARTS)
    assert datasets(parts, "inputs") == [("file", f"{w}/warehouse/people")]
    assert datasets(parts, "outputs") == [("file", f"{w}/warehouse/parts")]
    assert parts["job"]["facets"]["sql"]["query"].endswith("SELECT id * 1 FROM people")


def test_tables_that_existed_are_dropped_where_they_were(if_exists_job: SparkJobRun) -> None:
    """DROP TABLE IF EXISTS of a table that exists is reported as before. The external table this
    session never looked up is named by its location, which the catalog gave as it dropped it."""
    w = str(if_exists_job.workdir)
    for job, location in (
        (DROP_NAMES, f"{w}/warehouse/names"),
        (DROP_ELSEWHERE, f"{w}/out/elsewhere"),
    ):
        drop = final(if_exists_job, job)
        assert drop["inputs"] == []
        assert datasets(drop, "outputs") == [("file", location)]
        [dropped] = drop["outputs"]
        assert lifecycle(dropped) == "DROP"
        assert "schema" not in dropped["facets"]
        table = job.rsplit(".", 1)[1].replace("_", ".", 1)
        assert dropped["facets"]["symlinks"]["identifiers"] == [
            {"namespace": f"file:{location.rsplit('/', 1)[0]}", "name": table, "type": "TABLE"}
        ]


@pytest.mark.db
def test_headwater_has_no_dataset_that_never_existed(if_exists_job: SparkJobRun) -> None:
    w = str(if_exists_job.workdir)
    warehouse = quote(f"file:{w}/warehouse", safe="")
    listed = headwater_get(if_exists_job, f"/api/v1/namespaces/{warehouse}/datasets", limit=100)
    tables = {d["name"]: d for d in listed["datasets"]}
    assert set(tables) == {"default.people", "default.names", "default.parts"}
    assert [f["name"] for f in tables["default.people"]["fields"]] == ["id", "name"]
    assert tables["default.people"]["lastLifecycleState"] != "DROP"
    assert tables["default.names"]["lastLifecycleState"] == "DROP"
    out = quote(f"file:{w}/out", safe="")
    elsewhere = headwater_get(if_exists_job, f"/api/v1/namespaces/{out}/datasets/default.elsewhere")
    assert elsewhere["lastLifecycleState"] == "DROP"
