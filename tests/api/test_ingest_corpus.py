"""Every real event in the shared OpenLineage corpus is handled as documented in the README."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.corpus import EVENTS
from tests.snapshot import stored_payloads

if not EVENTS.is_dir():  # the corpus lives beside the project checkout
    pytest.skip(f"OpenLineage event corpus not found at {EVENTS}", allow_module_level=True)

SUFFIXES = (".invalid.json", ".lenient.json", ".template.json", ".example.json")
COMPLETE = sorted(p for p in EVENTS.rglob("*.json") if not p.name.endswith(SUFFIXES))
LENIENT = sorted(EVENTS.rglob("*.lenient.json"))
TRINO_OL = sorted((EVENTS / "trino").glob("openlineage-listener-*.example.json"))
AIRFLOW_LINES = [
    pytest.param(line, id=f"{p.name}:{i}")
    for p in sorted(EVENTS.rglob("*.jsonl"))
    for i, line in enumerate(p.read_text().splitlines())
    if line.strip()
]

pytestmark = pytest.mark.db


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(EVENTS)) for p in paths]


@pytest.mark.parametrize("path", COMPLETE + LENIENT + TRINO_OL, ids=_ids(COMPLETE + LENIENT + TRINO_OL))
async def test_complete_event_ingests(client, conn, path):
    body = json.loads(path.read_text())
    response = await client.post("/api/v1/lineage", json=body)
    assert response.status_code == 201, response.text
    assert response.json()["status"] == "created"
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 1
    again = await client.post("/api/v1/lineage", json=body)
    assert (again.status_code, again.json()["status"]) == (201, "duplicate")
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 1


@pytest.mark.parametrize("line", AIRFLOW_LINES)
async def test_airflow_scheduler_event_ingests(client, line):
    response = await client.post(
        "/api/v1/lineage", content=line, headers={"content-type": "application/json"}
    )
    assert response.status_code == 201, response.text


async def test_whole_corpus_in_file_order_builds_parent_jobs(client, conn):
    for path in COMPLETE:
        assert (
            await client.post("/api/v1/lineage", json=json.loads(path.read_text()))
        ).status_code == 201
    # Spark actions are children of their application job, Airflow tasks of their DAG.
    parents = await conn.fetch(
        "SELECT c.name AS child, p.name AS parent FROM jobs c JOIN jobs p ON p.job_uuid = c.parent_job_uuid"
    )
    assert len(parents) >= 10
    assert all(row["child"].startswith(row["parent"]) or "." in row["child"] for row in parents)
    # Every parent run that is in the corpus is linked; the others are parents the corpus lacks.
    events = [json.loads(p.read_text()) for p in COMPLETE]
    run_ids = {e["run"]["runId"] for e in events if "run" in e}
    missing = {
        e["run"]["facets"]["parent"]["run"]["runId"]
        for e in events
        if "run" in e and "parent" in e["run"].get("facets", {})
    } - run_ids
    orphans = await conn.fetch(
        "SELECT DISTINCT r.parent_run_uuid::text AS parent FROM runs r WHERE r.parent_run_uuid IS NOT NULL"
        " AND NOT EXISTS (SELECT 1 FROM runs p WHERE p.run_uuid = r.parent_run_uuid)"
    )
    assert {row["parent"] for row in orphans} == missing


@pytest.mark.parametrize(
    ("name", "path"),
    [("fluentd/event-no-run-id.invalid.json", "$.run")],
)
async def test_invalid_core_is_rejected_with_its_path(client, conn, name, path):
    response = await client.post("/api/v1/lineage", json=json.loads((EVENTS / name).read_text()))
    assert response.status_code == 400
    problem = response.json()
    assert problem["code"] == "invalid_event"
    assert [e["path"] for e in problem["errors"]] == [path]
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 0


@pytest.mark.parametrize(
    ("name", "warning_path"),
    [
        ("fluentd/event-invalid-run-facet.invalid.json", "$.run.facets.parent.run"),
        ("fluentd/event-invalid-job-facet.invalid.json", "$.job.facets.ownership.owners[0]"),
        ("fluentd/event-invalid-dataset-facet.invalid.json", "$.outputs[0].facets.ownership.owners[0]"),
        (
            "fluentd/event-invalid-input-dataset-facet.invalid.json",
            "$.inputs[0].inputFacets.dataQualityMetrics",
        ),
        (
            "fluentd/event-invalid-output-dataset-facet.invalid.json",
            "$.outputs[0].outputFacets.outputStatistics.rowCount",
        ),
        ("fluentd/event-full.invalid.json", "$.inputs[0].inputFacets.dataQualityMetrics"),
    ],
)
async def test_malformed_facet_keeps_event_and_warns(client, conn, name, warning_path):
    body = json.loads((EVENTS / name).read_text())
    response = await client.post("/api/v1/lineage", json=body)
    assert response.status_code == 201, response.text
    warnings = response.json()["warnings"]
    assert warning_path in [w["path"] for w in warnings]
    assert all(w["message"].startswith("facet ignored: ") for w in warnings)
    [stored] = await stored_payloads(conn)
    assert json.loads(stored) == body
    run_warnings = await conn.fetchval("SELECT warnings FROM runs")
    assert warning_path in [w["path"] for w in run_warnings]
