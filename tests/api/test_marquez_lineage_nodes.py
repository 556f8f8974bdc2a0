"""Job nodes of the lineage graph carry the job as the catalog answers it (Marquez's LineageJob in
web/src/types/lineage.ts): Marquez's BATCH / STREAM / SERVICE type with the OpenLineage job type
beside it, the parent by name and uuid, the current inputs and outputs, the code's location, and
the latest run in Marquez's run states (its graph colours a node by COMPLETED, FAILED ...), on the
OpenLineage reference events."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest

from tests.corpus import EVENTS

if not EVENTS.is_dir():  # the corpus lives beside the project checkout
    pytest.skip(f"OpenLineage event corpus not found at {EVENTS}", allow_module_level=True)

pytestmark = pytest.mark.db

SUFFIXES = (".invalid.json", ".lenient.json", ".template.json", ".example.json")
CORPUS = sorted(p for p in EVENTS.rglob("*.json") if not p.name.endswith(SUFFIXES))
# LineageJob's fields, each equal to the catalog job's.
LINEAGE_JOB = (
    "id",
    "type",
    "jobType",
    "name",
    "simpleName",
    "createdAt",
    "updatedAt",
    "namespace",
    "inputs",
    "outputs",
    "location",
    "description",
    "parentJobName",
    "parentJobUuid",
)
RUN = ("id", "state", "createdAt", "updatedAt", "startedAt", "endedAt", "durationMs")


def enc(name: str) -> str:
    return quote(name, safe="-_.!~*'()")


async def get(client: Any, url: str) -> Any:
    response = await client.get("/api/v1" + url)
    assert response.status_code == 200, f"{url}: {response.status_code} {response.text}"
    return response.json()


async def test_lineage_job_nodes_are_the_catalog_jobs(client) -> None:
    for path in CORPUS:
        response = await client.post("/api/v1/lineage", json=json.loads(path.read_text()))
        assert response.status_code == 201, response.text

    seen: dict[str, int] = {"jobs": 0, "parents": 0, "inputs": 0, "runs": 0}
    for ns in (await get(client, "/namespaces"))["namespaces"]:
        jobs = (await get(client, f"/namespaces/{enc(ns['name'])}/jobs?limit=1000"))["jobs"]
        for job in jobs:
            node_id = f"job:{ns['name']}:{job['name']}"
            graph = (await get(client, f"/lineage?nodeId={enc(node_id)}&depth=0"))["graph"]
            data = next(n for n in graph if n["id"] == node_id)["data"]
            assert {k: data[k] for k in LINEAGE_JOB} == {k: job[k] for k in LINEAGE_JOB}, node_id
            assert data["type"] in {"BATCH", "STREAM", "SERVICE"}
            if job["latestRun"] is None:
                assert data["latestRun"] is None
            else:
                assert data["latestRun"] == {k: job["latestRun"][k] for k in RUN}, node_id
                assert data["latestRun"]["state"] in {"NEW", "RUNNING", "COMPLETED", "FAILED", "ABORTED"}
                seen["runs"] += 1
            seen["jobs"] += 1
            seen["parents"] += job["parentJobName"] is not None
            seen["inputs"] += bool(job["inputs"])
    # The reference events hold parents (Airflow, Spark), inputs and finished runs.
    assert all(seen.values()), seen
