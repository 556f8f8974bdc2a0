"""Marquez's web UI on Headwater: every call its pages make, with the parameters they send, on the
shared OpenLineage reference events; none may fail, and each answer has the shape of Marquez's
TypeScript types (web/src/types/api.ts and lineage.ts of MarquezProject/marquez)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import quote

import pytest

from tests.corpus import EVENTS

if not EVENTS.is_dir():  # the corpus lives beside the project checkout
    pytest.skip(f"OpenLineage event corpus not found at {EVENTS}", allow_module_level=True)

pytestmark = pytest.mark.db

SUFFIXES = (".invalid.json", ".lenient.json", ".template.json", ".example.json")
CORPUS = sorted(p for p in EVENTS.rglob("*.json") if not p.name.endswith(SUFFIXES))

# The fields of Marquez's types each answer must carry.
DATASET = {
    "id",
    "type",
    "name",
    "physicalName",
    "createdAt",
    "updatedAt",
    "namespace",
    "sourceName",
    "fields",
    "tags",
    "lastModifiedAt",
    "description",
    "facets",
    "deleted",
    "columnLineage",
}
DATASET_VERSION = {
    "id",
    "type",
    "createdByRun",
    "name",
    "physicalName",
    "createdAt",
    "version",
    "namespace",
    "sourceName",
    "fields",
    "tags",
    "lastModifiedAt",
    "description",
    "lifecycleState",
    "facets",
}
JOB = {
    "id",
    "type",
    "name",
    "createdAt",
    "updatedAt",
    "inputs",
    "outputs",
    "namespace",
    "location",
    "description",
    "latestRun",
    "latestRuns",
    "tags",
    "parentJobName",
    "parentJobUuid",
}
RUN = {
    "id",
    "createdAt",
    "updatedAt",
    "nominalStartTime",
    "nominalEndTime",
    "state",
    "jobVersion",
    "startedAt",
    "endedAt",
    "durationMs",
    "args",
    "facets",
}
LINEAGE_JOB = {
    "id",
    "type",
    "name",
    "createdAt",
    "updatedAt",
    "namespace",
    "description",
    "simpleName",
    "latestRun",
}
RUN_STATES = {"NEW", "RUNNING", "COMPLETED", "FAILED", "ABORTED"}


def enc(name: str) -> str:
    """encodeURIComponent, as the UI encodes names in paths."""
    return quote(name, safe="-_.!~*'()")


class UI:
    """Calls the API as the UI's requests do, recording each call; a 4xx or 5xx fails the test."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[str] = []

    async def call(self, method: str, url: str, **kwargs: Any) -> Any:
        response = await self.client.request(method, "/api/v1" + url, **kwargs)
        self.calls.append(f"{method} {url.split('?')[0]}")
        assert response.status_code < 400, f"{method} {url}: {response.status_code} {response.text}"
        return response.json()


def check_run(run: dict[str, Any]) -> None:
    assert set(run) >= RUN, RUN - set(run)
    assert run["state"] in RUN_STATES
    assert isinstance(run["durationMs"], int | None)


def check_dataset(d: dict[str, Any]) -> None:
    assert set(d) >= DATASET, DATASET - set(d)
    assert d["type"] in {"DB_TABLE", "STREAM"}
    assert all(isinstance(t, str) for t in d["tags"])
    for field in d["fields"]:
        assert {"name", "type", "tags", "description"} <= set(field)
    for column in d["columnLineage"]:
        assert {"name", "inputFields"} <= set(column)
        for i in column["inputFields"]:
            assert {
                "namespace",
                "dataset",
                "field",
                "transformationType",
                "transformationDescription",
            } <= set(i)


def check_job(j: dict[str, Any]) -> None:
    assert set(j) >= JOB, JOB - set(j)
    assert j["type"] in {"BATCH", "STREAM", "SERVICE"}
    for run in j["latestRuns"]:
        check_run(run)
    if j["latestRun"] is not None:
        assert j["latestRun"] == j["latestRuns"][0]
    assert all(set(i) == {"namespace", "name"} for i in j["inputs"] + j["outputs"])


async def test_every_page_of_the_marquez_ui(client):
    for path in CORPUS:
        response = await client.post("/api/v1/lineage", json=json.loads(path.read_text()))
        assert response.status_code == 201, response.text
    ui = UI(client)

    # Every page: the namespaces and tags (the header's selects).
    namespaces = (await ui.call("GET", "/namespaces"))["namespaces"]
    tags = await ui.call("GET", "/tags")
    assert isinstance(tags["tags"], list)

    await dashboard(ui)
    await events_page(ui)
    await datasets_pages(ui, namespaces)
    await jobs_pages(ui, namespaces)
    await search_and_tags(ui, namespaces)
    assert len(set(ui.calls)) >= 25


async def dashboard(ui: UI) -> None:
    """Counts per hour and per day, in the browser's time zone, and the jobs by state."""
    for period in ("DAY", "WEEK"):
        events = await ui.call("GET", f"/stats/lineage-events?period={period}&timezone=Europe/Paris")
        assert len(events) == (24 if period == "DAY" else 7)
        assert set(events[0]) == {"startInterval", "endInterval", "fail", "start", "complete", "abort"}
        for asset in ("jobs", "datasets", "sources"):
            counts = await ui.call("GET", f"/stats/{asset}?period={period}&timezone=Europe/Paris")
            assert [set(c) for c in counts] == [{"startInterval", "endInterval", "count"}] * len(events)
            assert [c["count"] for c in counts] == sorted(c["count"] for c in counts)
    for state in ("FAILED", "RUNNING", "COMPLETED"):
        jobs = await ui.call("GET", f"/jobs?limit=10&offset=0&lastRunStates={state}")
        assert all(j["latestRun"]["state"] == state for j in jobs["jobs"])
    every_job = await ui.call("GET", "/jobs?limit=25&offset=0")
    assert every_job["totalCount"] >= len(every_job["jobs"]) > 0


async def events_page(ui: UI) -> None:
    """Today's events, and every event since 1970 (the bounds the page's date pickers send)."""
    day_start = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    events = await ui.call(
        "GET",
        f"/events/lineage?limit=20&before=&after={day_start:%Y-%m-%dT%H:%M:%S.000Z}&offset=0&sortDirection=desc",
    )
    everything = await ui.call(
        "GET",
        "/events/lineage?limit=20&before=2030-01-01T00:00:00.000Z"
        "&after=1970-01-01T00:00:00.000Z&offset=0&sortDirection=desc",
    )
    assert everything["totalCount"] == len(CORPUS) >= events["totalCount"]
    times = [
        dt.datetime.fromisoformat(e["eventTime"].replace("Z", "+00:00")) for e in everything["events"]
    ]
    assert times == sorted(times, reverse=True)


async def opened_nodes(
    ui: UI,
    namespaces: list[dict[str, Any]],
    kind: str,
    check: Callable[[dict[str, Any]], None],
) -> AsyncIterator[tuple[str, dict[str, Any], str]]:
    """The datasets or jobs (``kind``) page of each namespace, then each one's drawer: every one
    checked as listed and as opened, given as (its namespace encoded, it as listed, its path)."""
    for ns in namespaces:
        namespace = enc(ns["name"])
        page = await ui.call("GET", f"/namespaces/{namespace}/{kind}?limit=20&offset=0")
        for listed in page[kind]:
            check(listed)
            base = f"/namespaces/{namespace}/{kind}/{enc(listed['name'])}"
            check(await ui.call("GET", base))
            yield namespace, listed, base


async def datasets_pages(ui: UI, namespaces: list[dict[str, Any]]) -> None:
    """The datasets page of each namespace, then each dataset's drawer: versions, lineage, columns."""
    seen_columns = False
    async for namespace, d, base in opened_nodes(ui, namespaces, "datasets", check_dataset):
        first = await ui.call("GET", f"{base}/versions?limit=1&offset=0")
        versions = await ui.call("GET", f"{base}/versions?limit=10&offset=0")
        assert versions["totalCount"] == first["totalCount"] >= len(versions["versions"])
        for v in versions["versions"]:
            assert set(v) >= DATASET_VERSION, DATASET_VERSION - set(v)
            if v["createdByRun"] is not None:
                check_run(v["createdByRun"])
        node = f"dataset:{namespace}:{enc(d['name'])}"
        lineage = await ui.call("GET", f"/lineage?nodeId={node}&depth=5")
        for n in lineage["graph"]:
            if n["type"] == "JOB":
                assert set(n["data"]) >= LINEAGE_JOB, LINEAGE_JOB - set(n["data"])
        await ui.call("GET", f"/column-lineage?nodeId={node}&depth=5&withDownstream=true")
        seen_columns |= any(c["inputFields"] for c in d["columnLineage"])
    assert seen_columns


async def jobs_pages(ui: UI, namespaces: list[dict[str, Any]]) -> None:
    """The jobs page of each namespace, then each job's drawer: runs and their facets."""
    async for namespace, j, base in opened_nodes(ui, namespaces, "jobs", check_job):
        runs = await ui.call("GET", f"{base}/runs?limit=14&offset=0")
        for run in runs["runs"]:
            check_run(run)
            for kind in ("run", "job"):
                facets = await ui.call("GET", f"/jobs/runs/{run['id']}/facets?type={kind}")
                assert facets["runId"] == run["id"]
                assert isinstance(facets["facets"], dict)
        await ui.call("GET", f"/lineage?nodeId=job:{namespace}:{enc(j['name'])}&depth=5")


async def search_and_tags(ui: UI, namespaces: list[dict[str, Any]]) -> None:
    """The search bar; tags on and off a dataset, a field and a job; the drawers' delete buttons."""
    found = await ui.call("GET", "/search?q=a&sort=NAME&limit=100")
    assert found["results"]
    assert {"name", "namespace", "nodeId", "type", "updatedAt"} <= set(found["results"][0])

    # Tags: a new one with a description, then on and off a dataset, one of its fields, a job.
    await ui.call("PUT", "/tags/pii", json={"description": "Personal data"})
    assert {"name": "pii", "description": "Personal data"} in (await ui.call("GET", "/tags"))["tags"]
    with_fields = []
    for ns in namespaces:
        page = await ui.call("GET", f"/namespaces/{enc(ns['name'])}/datasets?limit=20&offset=0")
        with_fields += [d for d in page["datasets"] if d["fields"]]
    ds = with_fields[0]
    base = f"/namespaces/{enc(ds['namespace'])}/datasets/{enc(ds['name'])}"
    field = enc(ds["fields"][0]["name"])
    assert (await ui.call("POST", f"{base}/tags/pii"))["tags"] == ["pii"]
    tagged = await ui.call("POST", f"{base}/fields/{field}/tags/pii")
    assert tagged["fields"][0]["tags"] == ["pii"]
    await ui.call("DELETE", f"{base}/fields/{field}/tags/pii")
    assert (await ui.call("DELETE", f"{base}/tags/pii"))["tags"] == []
    job = (await ui.call("GET", "/jobs?limit=25&offset=0"))["jobs"][0]
    job_base = f"/namespaces/{enc(job['namespace'])}/jobs/{enc(job['name'])}"
    assert (await ui.call("POST", f"{job_base}/tags/pii"))["tags"] == ["pii"]
    await ui.call("DELETE", f"{job_base}/tags/pii")

    # The drawers' delete buttons: soft deletes, after which the lists leave them out.
    assert (await ui.call("DELETE", base))["deleted"] is True
    assert (await ui.call("DELETE", job_base))["deleted"] is True
    left = await ui.call("GET", f"/namespaces/{enc(ds['namespace'])}/datasets?limit=1000&offset=0")
    assert ds["name"] not in {d["name"] for d in left["datasets"]}
