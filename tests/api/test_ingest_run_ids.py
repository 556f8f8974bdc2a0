"""runIds that are not UUIDs: read as Marquez reads them, the reported string kept and shown; and
every scenario of OpenLineage's consumer compatibility suite ingested with its lineage."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from headwater.ingest.validate import run_uuid
from tests.corpus import OPENLINEAGE
from tests.factories import run_event

pytestmark = pytest.mark.db

COMPAT = OPENLINEAGE / "compat-consumer"

# Computed with Java 21: UUID.fromString(s), or UUID.nameUUIDFromBytes(s.getBytes(UTF_8)) where it throws.
JAVA = {
    "run_id": "0acf093b-3c88-3560-8dc6-22a33921d360",
    "": "d41d8cd9-8f00-3204-a980-0998ecf8427e",
    "ü": "c03410a5-204b-31cd-8229-ff754688d743",
    "run-1": "5b746968-0d99-3015-9c65-3ddb9ff22ae7",
    "日本語のラン": "4729fd38-969b-38ff-af35-a82344804ce5",
    # Without dashes, or a group out of range, Java does not read it as a UUID.
    "0123456789abcdef0123456789abcdef": "8516ac99-dc60-3032-95de-7bdb6a153530",
    "ffffffffffffffff-1-1-1-1": "eee94c46-c1ef-3574-8669-548050b74239",
    "10000000000000000-1-1-1-1": "8455c513-3afa-3b66-911b-e3d7873cbad4",
    # Java's lenient reading: short groups, a plus sign, full-width digits.
    "1-2-3-4-5": "00000001-0002-0003-0004-000000000005",
    "+1-2-3-4-5": "00000001-0002-0003-0004-000000000005",
    "\uff11-2-3-4-5": "00000001-0002-0003-0004-000000000005",
    "8E5C1C8A-0D2E-4B0F-9A6E-6F8F4E2B2D11": "8e5c1c8a-0d2e-4b0f-9a6e-6f8f4e2b2d11",
}


@pytest.mark.parametrize(("reported", "expected"), JAVA.items())
def test_run_ids_are_the_uuids_java_computes(reported, expected):
    assert str(run_uuid(reported)) == expected


async def test_a_non_uuid_run_id_is_stored_under_its_uuid_and_shown_as_reported(client, conn):
    child: Any = run_event("child", inputs=["a"], outputs=["b"])
    child["run"]["runId"] = "child run"
    child["run"]["facets"] = {
        "parent": {
            "run": {"runId": "parent run"},
            "job": {"namespace": "pipelines", "name": "parent"},
            "root": {"run": {"runId": "root run"}, "job": {"namespace": "pipelines", "name": "root"}},
        }
    }
    response = await client.post("/api/v1/lineage/batch", json=[child])
    assert response.json()["status"] == "success"
    response = await client.post("/api/v1/lineage", json={**child, "eventType": "RUNNING"})
    assert response.json()["runId"] == str(run_uuid("child run"))
    row = await conn.fetchrow("SELECT * FROM runs WHERE run_uuid = $1", run_uuid("child run"))
    assert (row["reported_run_id"], row["parent_run_uuid"], row["root_run_uuid"]) == (
        "child run",
        run_uuid("parent run"),
        run_uuid("root run"),
    )
    run = (await client.get(f"/api/v1/runs/{run_uuid('child run')}")).json()
    assert (run["id"], run["reportedRunId"]) == (str(run_uuid("child run")), "child run")
    query = "query($id: ID!) { run(id: $id) { id reportedRunId } }"
    variables = {"id": str(run_uuid("child run"))}
    data = (await client.post("/graphql", json={"query": query, "variables": variables})).json()["data"]
    assert data["run"] == {"id": str(run_uuid("child run")), "reportedRunId": "child run"}

    plain = run_event("plain")
    await client.post("/api/v1/lineage", json=plain)
    run = (await client.get(f"/api/v1/runs/{plain['run']['runId']}")).json()
    assert run["reportedRunId"] is None


def scenario_events(folder: Path) -> list[dict[str, Any]]:
    """A scenario's events in event order: file names sort so, numerically."""

    def order(path: Path) -> list[Any]:
        return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path.stem)]

    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"), key=order)]


SCENARIOS = sorted(p.name for p in COMPAT.iterdir() if p.is_dir()) if COMPAT.is_dir() else []


@pytest.mark.skipif(not SCENARIOS, reason=f"compatibility scenarios not found at {COMPAT}")
@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_every_compatibility_scenario_is_ingested_with_its_lineage(client, conn, scenario):
    events = scenario_events(COMPAT / scenario)
    for i, event in enumerate(events):
        response = await client.post("/api/v1/lineage", json=event)
        assert response.status_code == 201, (i, response.text)
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == len(events)
    # Each dataset a run reports is in the graph: read by (or written by) the run's job.
    described = set()
    for event in events:
        if "run" not in event:
            continue
        job = (event["job"]["namespace"], event["job"]["name"])
        described |= {(*job, d["namespace"], d["name"], "READ") for d in event.get("inputs") or []}
        described |= {(*job, d["namespace"], d["name"], "WRITE") for d in event.get("outputs") or []}
    rows = await conn.fetch(
        "SELECT j.namespace, j.name, a.namespace AS ds_namespace, a.name AS ds_name, e.edge_type"
        " FROM lineage_edges e JOIN jobs j USING (job_uuid)"
        " JOIN dataset_aliases a ON a.dataset_uuid = e.dataset_uuid"
    )
    in_graph = {tuple(r) for r in rows}
    assert described <= in_graph
    if scenario == "simple_run_event":
        [(event,)] = [(e,) for e in events]
        assert event["run"]["runId"] == "run_id"
        reported = await conn.fetchval(
            "SELECT reported_run_id FROM runs WHERE run_uuid = $1", uuid.UUID(JAVA["run_id"])
        )
        assert reported == "run_id"
        assert len(described) == 2
