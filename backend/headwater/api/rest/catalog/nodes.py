"""Namespaces, datasets and jobs: lists, one by name, versions, tags and soft deletes.

Datasets and jobs answer the same requests under their own paths; each handler pair calls one
function with the kind's ``NodeShape`` and JSON shape.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from litestar import delete, get, post
from litestar.datastructures import State

from headwater.api.rest.catalog.routing import PROBLEMS, Limit, Offset, name
from headwater.api.rest.catalog.shapes import (
    dataset_versions_json,
    datasets_json,
    job_versions_json,
    jobs_json,
    namespace_json,
)
from headwater.errors import NotFoundError
from headwater.store import catalog
from headwater.store import tags as tag_store
from headwater.store.catalog import NamespaceNotFoundError, NodeFilter, NodeShape

DATASET = "/api/v1/namespaces/{namespace:str}/datasets/{dataset:str}"
JOB = "/api/v1/namespaces/{namespace:str}/jobs/{job:str}"

# What a kind's JSON is made of: its records (and one node with its versions) in Marquez's shape.
NodesJson = Callable[[asyncpg.Connection, list[Any]], Awaitable[list[dict[str, Any]]]]
VersionsJson = Callable[[asyncpg.Connection, Any, list[Any]], Awaitable[list[dict[str, Any]]]]


class VersionNotFoundError(NotFoundError):
    code = "version_not_found"

    def __init__(self, namespace: str, node: str, version: str) -> None:
        super().__init__(f"Version '{version}' of '{namespace}'.'{node}' not found.")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


async def _require_namespace(conn: asyncpg.Connection, namespace: str) -> None:
    if namespace not in await catalog.fetch_namespaces_by_names(conn, [namespace]):
        raise NamespaceNotFoundError(namespace)


async def page_json(
    state: State,
    shape: NodeShape[Any, Any],
    as_json: NodesJson,
    key: str,
    f: NodeFilter,
    limit: int,
    offset: int,
) -> dict[str, Any]:
    async with state.pool.acquire() as conn:
        if f.namespace is not None:
            await _require_namespace(conn, f.namespace)
        records = await catalog.page_nodes(shape, conn, f, after=None, limit=limit, offset=offset)
        return {
            "totalCount": await catalog.count_nodes(shape, conn, f),
            key: await as_json(conn, records),
        }


async def _one(
    state: State, shape: NodeShape[Any, Any], as_json: NodesJson, namespace: str, node: str
) -> dict[str, Any]:
    async with state.pool.acquire() as conn:
        record = await catalog.fetch_node(shape, conn, name(namespace), name(node))
        return (await as_json(conn, [record]))[0]


async def _versions(
    state: State,
    shape: NodeShape[Any, Any],
    as_json: VersionsJson,
    namespace: str,
    node: str,
    limit: int,
    offset: int,
) -> dict[str, Any]:
    async with state.pool.acquire() as conn:
        record = await catalog.fetch_node(shape, conn, name(namespace), name(node))
        versions, total = await catalog.page_node_versions(
            shape, conn, record.node_uuid, limit=limit, offset=offset
        )
        return {"totalCount": total, "versions": await as_json(conn, record, versions)}


async def _version(
    state: State,
    shape: NodeShape[Any, Any],
    as_json: VersionsJson,
    namespace: str,
    node: str,
    version: str,
) -> dict[str, Any]:
    async with state.pool.acquire() as conn:
        record = await catalog.fetch_node(shape, conn, name(namespace), name(node))
        found = await catalog.fetch_node_version(shape, conn, record.node_uuid, name(version))
        if found is None:
            raise VersionNotFoundError(record.namespace, record.name, name(version))
        return (await as_json(conn, record, [found]))[0]


async def _tag(
    state: State,
    shape: NodeShape[Any, Any],
    as_json: NodesJson,
    namespace: str,
    node: str,
    tag: str,
    *,
    tagged: bool,
    field: str | None = None,
) -> dict[str, Any]:
    async with state.pool.acquire() as conn:
        record = await tag_store.set_node_tag(
            shape,
            conn,
            name(namespace),
            name(node),
            name(tag),
            tagged=tagged,
            field=None if field is None else name(field),
            at=_now(),
        )
        return (await as_json(conn, [record]))[0]


async def _delete(
    state: State, shape: NodeShape[Any, Any], as_json: NodesJson, namespace: str, node: str
) -> dict[str, Any]:
    async with state.pool.acquire() as conn:
        record = await catalog.mark_node_deleted(
            shape, conn, name(namespace), name(node), deleted=True, at=_now()
        )
        return (await as_json(conn, [record]))[0]


# -- namespaces ----------------------------------------------------------------------------------


@get("/api/v1/namespaces", summary="List namespaces", tags=["catalog"], responses=PROBLEMS)
async def list_namespaces(state: State) -> dict[str, Any]:
    """Every namespace, by name."""
    async with state.pool.acquire() as conn:
        return {"namespaces": [namespace_json(r) for r in await catalog.list_namespaces(conn)]}


@get(
    "/api/v1/namespaces/{namespace:str}", summary="Get a namespace", tags=["catalog"], responses=PROBLEMS
)
async def get_namespace(state: State, namespace: str) -> dict[str, Any]:
    """One namespace; 404 namespace_not_found."""
    ns = name(namespace)
    async with state.pool.acquire() as conn:
        found = await catalog.fetch_namespaces_by_names(conn, [ns])
    if ns not in found:
        raise NamespaceNotFoundError(ns)
    return namespace_json(found[ns])


# -- datasets ------------------------------------------------------------------------------------


@get(
    "/api/v1/namespaces/{namespace:str}/datasets",
    summary="List datasets",
    tags=["catalog"],
    responses=PROBLEMS,
)
async def list_datasets(
    state: State, namespace: str, limit: Limit = 100, offset: Offset = 0
) -> dict[str, Any]:
    """The namespace's datasets by name (not deleted), with the total count."""
    f = NodeFilter(namespace=name(namespace))
    return await page_json(state, catalog.DATASETS, datasets_json, "datasets", f, limit, offset)


@get(DATASET, summary="Get a dataset", tags=["catalog"], responses=PROBLEMS)
async def get_dataset(state: State, namespace: str, dataset: str) -> dict[str, Any]:
    """One dataset (an alias finds it too); 404 dataset_not_found."""
    return await _one(state, catalog.DATASETS, datasets_json, namespace, dataset)


@get(f"{DATASET}/versions", summary="List a dataset's versions", tags=["catalog"], responses=PROBLEMS)
async def list_dataset_versions(
    state: State, namespace: str, dataset: str, limit: Limit = 100, offset: Offset = 0
) -> dict[str, Any]:
    """The dataset's versions, newest first: {totalCount, versions}."""
    return await _versions(
        state, catalog.DATASETS, dataset_versions_json, namespace, dataset, limit, offset
    )


@get(
    f"{DATASET}/versions/{{version:str}}",
    summary="Get a dataset version",
    tags=["catalog"],
    responses=PROBLEMS,
)
async def get_dataset_version(
    state: State, namespace: str, dataset: str, version: str
) -> dict[str, Any]:
    """One version, by its version string or its uuid; 404 version_not_found."""
    return await _version(state, catalog.DATASETS, dataset_versions_json, namespace, dataset, version)


@post(
    f"{DATASET}/tags/{{tag:str}}",
    summary="Tag a dataset",
    tags=["catalog"],
    responses=PROBLEMS,
    status_code=200,
)
async def tag_dataset(state: State, namespace: str, dataset: str, tag: str) -> dict[str, Any]:
    """Adds the tag (created if new) and answers the dataset."""
    return await _tag(state, catalog.DATASETS, datasets_json, namespace, dataset, tag, tagged=True)


@delete(
    f"{DATASET}/tags/{{tag:str}}",
    summary="Untag a dataset",
    tags=["catalog"],
    responses=PROBLEMS,
    status_code=200,
)
async def untag_dataset(state: State, namespace: str, dataset: str, tag: str) -> dict[str, Any]:
    """Removes the tag and answers the dataset."""
    return await _tag(state, catalog.DATASETS, datasets_json, namespace, dataset, tag, tagged=False)


@post(
    f"{DATASET}/fields/{{field:str}}/tags/{{tag:str}}",
    summary="Tag a dataset field",
    tags=["catalog"],
    responses=PROBLEMS,
    status_code=200,
)
async def tag_dataset_field(
    state: State, namespace: str, dataset: str, field: str, tag: str
) -> dict[str, Any]:
    """Adds the tag to a field of the dataset's current schema; 404 dataset_field_not_found."""
    return await _tag(
        state, catalog.DATASETS, datasets_json, namespace, dataset, tag, tagged=True, field=field
    )


@delete(
    f"{DATASET}/fields/{{field:str}}/tags/{{tag:str}}",
    summary="Untag a dataset field",
    tags=["catalog"],
    responses=PROBLEMS,
    status_code=200,
)
async def untag_dataset_field(
    state: State, namespace: str, dataset: str, field: str, tag: str
) -> dict[str, Any]:
    """Removes the tag from the field and answers the dataset."""
    return await _tag(
        state, catalog.DATASETS, datasets_json, namespace, dataset, tag, tagged=False, field=field
    )


@delete(DATASET, summary="Soft-delete a dataset", tags=["catalog"], responses=PROBLEMS, status_code=200)
async def delete_dataset(state: State, namespace: str, dataset: str) -> dict[str, Any]:
    """Hides the dataset from lists, search and lineage until it is restored (GraphQL
    ``restoreDataset``); answers it. Needs the write scope."""
    return await _delete(state, catalog.DATASETS, datasets_json, namespace, dataset)


# -- jobs ----------------------------------------------------------------------------------------


@get(
    "/api/v1/namespaces/{namespace:str}/jobs", summary="List jobs", tags=["catalog"], responses=PROBLEMS
)
async def list_jobs(
    state: State, namespace: str, limit: Limit = 100, offset: Offset = 0
) -> dict[str, Any]:
    """The namespace's jobs by name (not deleted), with the total count."""
    f = NodeFilter(namespace=name(namespace))
    return await page_json(state, catalog.JOBS, jobs_json, "jobs", f, limit, offset)


@get(JOB, summary="Get a job", tags=["catalog"], responses=PROBLEMS)
async def get_job(state: State, namespace: str, job: str) -> dict[str, Any]:
    """One job; 404 job_not_found."""
    return await _one(state, catalog.JOBS, jobs_json, namespace, job)


@get(f"{JOB}/versions", summary="List a job's versions", tags=["catalog"], responses=PROBLEMS)
async def list_job_versions(
    state: State, namespace: str, job: str, limit: Limit = 100, offset: Offset = 0
) -> dict[str, Any]:
    """The job's versions, newest first: {totalCount, versions}."""
    return await _versions(state, catalog.JOBS, job_versions_json, namespace, job, limit, offset)


@get(
    f"{JOB}/versions/{{version:str}}", summary="Get a job version", tags=["catalog"], responses=PROBLEMS
)
async def get_job_version(state: State, namespace: str, job: str, version: str) -> dict[str, Any]:
    """One version, by its version string or its uuid; 404 version_not_found."""
    return await _version(state, catalog.JOBS, job_versions_json, namespace, job, version)


@post(
    f"{JOB}/tags/{{tag:str}}", summary="Tag a job", tags=["catalog"], responses=PROBLEMS, status_code=200
)
async def tag_job(state: State, namespace: str, job: str, tag: str) -> dict[str, Any]:
    """Adds the tag (created if new) and answers the job."""
    return await _tag(state, catalog.JOBS, jobs_json, namespace, job, tag, tagged=True)


@delete(
    f"{JOB}/tags/{{tag:str}}",
    summary="Untag a job",
    tags=["catalog"],
    responses=PROBLEMS,
    status_code=200,
)
async def untag_job(state: State, namespace: str, job: str, tag: str) -> dict[str, Any]:
    """Removes the tag and answers the job."""
    return await _tag(state, catalog.JOBS, jobs_json, namespace, job, tag, tagged=False)


@delete(JOB, summary="Soft-delete a job", tags=["catalog"], responses=PROBLEMS, status_code=200)
async def delete_job(state: State, namespace: str, job: str) -> dict[str, Any]:
    """Hides the job from lists, search and lineage until it is restored (GraphQL ``restoreJob``);
    answers it. Needs the write scope."""
    return await _delete(state, catalog.JOBS, jobs_json, namespace, job)


node_handlers = [
    list_namespaces,
    get_namespace,
    list_datasets,
    get_dataset,
    list_dataset_versions,
    get_dataset_version,
    tag_dataset,
    untag_dataset,
    tag_dataset_field,
    untag_dataset_field,
    delete_dataset,
    list_jobs,
    get_job,
    list_job_versions,
    get_job_version,
    tag_job,
    untag_job,
    delete_job,
]
