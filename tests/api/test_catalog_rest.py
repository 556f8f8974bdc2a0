"""Marquez-compatible REST reads: namespaces, datasets, jobs, runs, search."""

from __future__ import annotations

import uuid
from urllib.parse import quote

import pytest

from tests.client import post_all
from tests.factories import dataset, job_run, run_event

pytestmark = pytest.mark.db

PG = "postgres://db.example:5432"


def path(*segments: str) -> str:
    """An /api/v1 path with each segment percent-encoded as Marquez clients do (slashes too)."""
    return "/api/v1/" + "/".join(quote(s, safe="") for s in segments)


async def get_json(client, url, **params):
    response = await client.get(url, params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def seed(client):
    run_id = uuid.uuid4()
    await post_all(
        client,
        job_run(
            "etl.load_orders",
            run_id=run_id,
            inputs=[
                dataset("shop.public.orders", namespace=PG, fields=[("id", "int"), ("total", "numeric")])
            ],
            outputs=[dataset("analytics.daily_orders", namespace=PG, fields=[("day", "date")])],
        ),
    )
    return run_id


async def test_namespaces(client):
    await seed(client)
    body = await get_json(client, "/api/v1/namespaces")
    assert [n["name"] for n in body["namespaces"]] == ["pipelines", PG]
    one = await get_json(client, path("namespaces", PG))
    assert one["name"] == PG
    assert set(one) >= {"createdAt", "updatedAt", "ownerName", "description"}
    missing = await client.get(path("namespaces", "nope"))
    assert missing.status_code == 404
    assert missing.json()["code"] == "namespace_not_found"


async def test_datasets_in_a_namespace_with_an_encoded_uri(client):
    await seed(client)
    await client.post(
        "/graphql",
        json={
            "query": f'mutation {{ tagDataset(namespace: "{PG}", '
            'name: "shop.public.orders", tag: "pii", field: "id") '
            "{ __typename } }"
        },
    )
    body = await get_json(client, path("namespaces", PG, "datasets"))
    assert body["totalCount"] == 2
    assert [d["name"] for d in body["datasets"]] == ["analytics.daily_orders", "shop.public.orders"]
    orders = body["datasets"][1]
    assert orders["id"] == {"namespace": PG, "name": "shop.public.orders"}
    assert orders["fields"] == [
        {"name": "id", "type": "int", "tags": ["pii"], "description": None},
        {"name": "total", "type": "numeric", "tags": [], "description": None},
    ]
    assert orders["deleted"] is False
    assert "schema" in orders["facets"]
    one = await get_json(client, path("namespaces", PG, "datasets", "analytics.daily_orders"))
    assert one["currentVersion"] is not None
    assert one["lastModifiedAt"] is not None
    page = await get_json(client, path("namespaces", PG, "datasets"), limit=1, offset=1)
    assert page["totalCount"] == 2
    assert [d["name"] for d in page["datasets"]] == ["shop.public.orders"]
    missing = await client.get(path("namespaces", PG, "datasets", "nope"))
    assert missing.status_code == 404
    assert missing.json()["code"] == "dataset_not_found"


async def test_names_with_slashes_and_percent_signs(client):
    await post_all(
        client, [run_event("w", outputs=[dataset("bucket/a%20b/file.csv", namespace="s3://bucket")])]
    )
    one = await get_json(client, path("namespaces", "s3://bucket", "datasets", "bucket/a%20b/file.csv"))
    assert one["id"] == {"namespace": "s3://bucket", "name": "bucket/a%20b/file.csv"}


async def test_jobs_and_runs(client):
    run_id = await seed(client)
    body = await get_json(client, path("namespaces", "pipelines", "jobs"))
    assert body["totalCount"] == 1
    job = body["jobs"][0]
    assert job["id"] == {"namespace": "pipelines", "name": "etl.load_orders"}
    assert job["simpleName"] == "load_orders"
    assert job["inputs"] == [{"namespace": PG, "name": "shop.public.orders"}]
    assert job["outputs"] == [{"namespace": PG, "name": "analytics.daily_orders"}]
    assert job["latestRun"]["id"] == str(run_id)
    assert job["latestRun"]["state"] == "COMPLETED"
    assert job == await get_json(client, path("namespaces", "pipelines", "jobs", "etl.load_orders"))
    runs = await get_json(client, path("namespaces", "pipelines", "jobs", "etl.load_orders", "runs"))
    assert runs["totalCount"] == 1
    run = runs["runs"][0]
    assert run["id"] == str(run_id)
    assert run["jobVersion"]["name"] == "etl.load_orders"
    assert [v["datasetVersionId"]["name"] for v in run["inputDatasetVersions"]] == ["shop.public.orders"]
    assert [v["datasetVersionId"]["name"] for v in run["outputDatasetVersions"]] == [
        "analytics.daily_orders"
    ]
    assert run["outputDatasetVersions"][0]["datasetVersionId"]["version"] is not None
    assert run["durationMs"] == 60_000
    assert await get_json(client, f"/api/v1/jobs/runs/{run_id}") == run
    assert await get_json(client, f"/api/v1/runs/{run_id}") == run
    missing = await client.get(f"/api/v1/runs/{uuid.uuid4()}")
    assert missing.status_code == 404
    assert missing.json()["code"] == "run_not_found"
    invalid = await client.get("/api/v1/runs/nope")
    assert invalid.status_code == 400
    assert invalid.json()["code"] == "invalid_request"


async def test_search(client):
    await seed(client)
    body = await get_json(client, "/api/v1/search", q="ORDERS")
    assert body["totalCount"] == 3
    assert [r["name"] for r in body["results"]] == [
        "etl.load_orders",
        "shop.public.orders",
        "analytics.daily_orders",
    ]  # shorter names first
    assert body["results"][0] == {
        **body["results"][0],
        "type": "JOB",
        "nodeId": "job:pipelines:etl.load_orders",
    }
    jobs = await get_json(client, "/api/v1/search", q="orders", filter="JOB")
    assert [r["type"] for r in jobs["results"]] == ["JOB"]
    assert jobs["totalCount"] == 1
    by_name = await get_json(client, "/api/v1/search", q="orders", sort="NAME", limit=1)
    assert [r["name"] for r in by_name["results"]] == ["analytics.daily_orders"]
    bad = await client.get("/api/v1/search", params={"q": "x", "filter": "TABLE"})
    assert bad.status_code == 400
