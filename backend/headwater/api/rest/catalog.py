"""Marquez-compatible catalog reads: namespaces, datasets, jobs, runs and search under /api/v1.

Shapes follow Marquez's API (``{"totalCount", "datasets": [...]}``, ``id: {namespace, name}``,
run states NEW / RUNNING / COMPLETED / FAILED / ABORTED), so Marquez clients and its web UI can
read Headwater. Lists page with ``limit`` and ``offset`` as Marquez does. Datasets, jobs and search
results carry ``heat`` besides, Headwater's importance score (see ``headwater spark heat``): N·h,
1.0 on average, null until computed.

Namespaces are usually URIs (``postgres://host:5432``) that clients percent-encode, slashes
included. Routing splits on decoded slashes, so ``keep_encoded_slashes`` re-encodes ``/`` and
``%`` inside path segments under /api/v1/namespaces before routing, and handlers decode their
parameters once.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast
from urllib.parse import unquote

import asyncpg
from litestar import get
from litestar.datastructures import State
from litestar.params import Parameter

from headwater.errors import (
    DatasetNotFoundError,
    InvalidRequestError,
    JobNotFoundError,
    RunNotFoundError,
)
from headwater.store import catalog
from headwater.store import tags as tag_store
from headwater.store.catalog import (
    DatasetRecord,
    JobRecord,
    NamespaceNotFoundError,
    NodeFilter,
    RunRecord,
)

if TYPE_CHECKING:
    from litestar import Litestar
    from litestar.types import ASGIApp, Receive, Scope, Send

NAMESPACES_PREFIX = "/api/v1/namespaces/"
MAX_LIMIT = 1000
# OpenLineage run states in Marquez's words.
_RUN_STATES = {
    "START": "RUNNING",
    "RUNNING": "RUNNING",
    "COMPLETE": "COMPLETED",
    "FAIL": "FAILED",
    "ABORT": "ABORTED",
    "OTHER": "NEW",
    None: "NEW",
}

# Search orders as Marquez spells them, plus HEAT; upper or lower case.
SortParam = Literal["NAME", "UPDATE_AT", "HEAT", "name", "update_at", "heat"]

Limit = Annotated[
    int, Parameter(ge=1, le=MAX_LIMIT, description=f"Page size (default 100, at most {MAX_LIMIT}).")
]
Offset = Annotated[int, Parameter(ge=0, description="Items to skip.")]


# -- routing of encoded names --------------------------------------------------------------------


def _reencode(segment: str) -> str:
    return unquote(segment).replace("%", "%25").replace("/", "%2F")


def keep_encoded_slashes(app: Litestar) -> Litestar:
    """Route /api/v1/namespaces/... on the raw path: an encoded ``/`` stays inside its segment."""
    inner: ASGIApp = app.asgi_handler

    async def handler(scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if raw and scope["path"].startswith(NAMESPACES_PREFIX):
            path = raw.decode("latin-1").split("?", 1)[0]
            scope["path"] = "/".join(_reencode(s) for s in path.split("/"))
        await inner(scope, receive, send)

    app.asgi_handler = handler
    return app


def _name(param: str) -> str:
    """A namespace, dataset or job name from its (re-encoded) path segment."""
    return unquote(param)


# -- Marquez shapes ------------------------------------------------------------------------------


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _tags(records: list[tag_store.TagRecord]) -> list[str]:
    return [t.name for t in records]


async def datasets_json(conn: asyncpg.Connection, records: list[DatasetRecord]) -> list[dict[str, Any]]:
    """Marquez dataset objects, with fields and tags loaded in three queries for all of them."""
    uuids = [r.dataset_uuid for r in records]
    fields = await catalog.fetch_fields_by_datasets(conn, uuids)
    tags = await tag_store.fetch_dataset_tags(conn, uuids)
    field_tags = await tag_store.fetch_dataset_field_tags(conn, uuids)
    return [
        {
            "id": {"namespace": r.namespace, "name": r.name},
            "type": "DB_TABLE",
            "name": r.name,
            "physicalName": r.name,
            "createdAt": _iso(r.created_at),
            "updatedAt": _iso(r.updated_at),
            "namespace": r.namespace,
            "sourceName": r.source_name,
            "fields": [
                {
                    "name": f.name,
                    "type": f.type,
                    "tags": _tags(field_tags[r.dataset_uuid].get(f.name, [])),
                    "description": f.description,
                }
                for f in fields[r.dataset_uuid]
            ],
            "tags": _tags(tags[r.dataset_uuid]),
            "lastModifiedAt": _iso(r.last_modified_at),
            "lastLifecycleState": (r.facets.get("lifecycleStateChange") or {}).get(
                "lifecycleStateChange"
            ),
            "description": r.description,
            "currentVersion": str(r.current_version_uuid) if r.current_version_uuid else None,
            "facets": r.facets,
            "deleted": r.deleted_at is not None,
            "heat": r.heat,
        }
        for r in records
    ]


async def runs_json(conn: asyncpg.Connection, runs: list[RunRecord]) -> list[dict[str, Any]]:
    """Marquez run objects, with job versions and dataset versions loaded for all of them at once."""
    versions = await catalog.fetch_job_versions_by_uuids(
        conn, [r.job_version_uuid for r in runs if r.job_version_uuid]
    )
    jobs = await catalog.fetch_jobs_by_uuids(conn, list({r.job_uuid for r in runs}))
    touched = await catalog.fetch_run_datasets_by_runs(conn, [r.run_uuid for r in runs])
    every = [t for ts in touched.values() for t in ts]
    datasets = await catalog.fetch_datasets_by_uuids(conn, list({t.dataset_uuid for t in every}))
    dataset_versions = await catalog.fetch_dataset_versions_by_uuids(
        conn, list({t.dataset_version_uuid for t in every if t.dataset_version_uuid})
    )

    def version_id(t: catalog.RunDatasetRecord) -> dict[str, Any]:
        d = datasets[t.dataset_uuid]
        v = dataset_versions.get(t.dataset_version_uuid) if t.dataset_version_uuid else None
        return {
            "datasetVersionId": {
                "namespace": d.namespace,
                "name": d.name,
                "version": v.version if v else None,
            },
            "facets": {},
        }

    out = []
    for r in runs:
        job = jobs[r.job_uuid]
        version = versions.get(r.job_version_uuid) if r.job_version_uuid else None
        duration = None
        if r.started_at is not None and r.ended_at is not None:
            duration = int((r.ended_at - r.started_at).total_seconds() * 1000)
        out.append(
            {
                "id": str(r.run_uuid),
                "reportedRunId": r.reported_run_id,
                "createdAt": _iso(r.created_at),
                "updatedAt": _iso(r.updated_at),
                "nominalStartTime": _iso(r.nominal_start_time),
                "nominalEndTime": _iso(r.nominal_end_time),
                "state": _RUN_STATES.get(r.state, "NEW"),
                "startedAt": _iso(r.started_at),
                "endedAt": _iso(r.ended_at),
                "durationMs": duration,
                "args": {},
                "jobVersion": {"namespace": job.namespace, "name": job.name, "version": version.version}
                if version
                else None,
                "inputDatasetVersions": [
                    version_id(t) for t in touched[r.run_uuid] if t.direction == "INPUT"
                ],
                "outputDatasetVersions": [
                    version_id(t) for t in touched[r.run_uuid] if t.direction == "OUTPUT"
                ],
                "context": {},
                "facets": r.facets,
            }
        )
    return out


async def jobs_json(conn: asyncpg.Connection, records: list[JobRecord]) -> list[dict[str, Any]]:
    """Marquez job objects: current inputs and outputs, latest run, tags and parent, in a few queries."""
    uuids = [r.job_uuid for r in records]
    versions = await catalog.fetch_job_versions_by_uuids(
        conn, [r.current_version_uuid for r in records if r.current_version_uuid]
    )
    io = {u for v in versions.values() for u in v.input_uuids + v.output_uuids}
    datasets = await catalog.fetch_datasets_by_uuids(conn, list(io))
    latest = await catalog.fetch_runs_by_jobs(conn, uuids, 1)
    latest_json = dict(
        zip(
            [r.run_uuid for rs in latest.values() for r in rs],
            await runs_json(conn, [r for rs in latest.values() for r in rs]),
            strict=True,
        )
    )
    tags = await tag_store.fetch_job_tags(conn, uuids)
    parents = await catalog.fetch_jobs_by_uuids(
        conn, [r.parent_job_uuid for r in records if r.parent_job_uuid]
    )

    def ids(dataset_uuids: list[uuid.UUID]) -> list[dict[str, str]]:
        return [
            {"namespace": datasets[u].namespace, "name": datasets[u].name}
            for u in dataset_uuids
            if u in datasets
        ]

    out = []
    for r in records:
        version = versions.get(r.current_version_uuid) if r.current_version_uuid else None
        parent = parents.get(r.parent_job_uuid) if r.parent_job_uuid else None
        out.append(
            {
                "id": {"namespace": r.namespace, "name": r.name},
                "type": r.job_type or "BATCH",
                "name": r.name,
                "simpleName": r.name.rsplit(".", 1)[-1],
                "parentJobName": parent.name if parent else None,
                "createdAt": _iso(r.created_at),
                "updatedAt": _iso(r.updated_at),
                "namespace": r.namespace,
                "inputs": ids(version.input_uuids) if version else [],
                "outputs": ids(version.output_uuids) if version else [],
                "location": None,
                "description": r.description,
                "latestRun": latest_json.get(latest[r.job_uuid][0].run_uuid)
                if latest[r.job_uuid]
                else None,
                "facets": r.facets,
                "currentVersion": str(r.current_version_uuid) if r.current_version_uuid else None,
                "tags": _tags(tags[r.job_uuid]),
                "deleted": r.deleted_at is not None,
                "heat": r.heat,
            }
        )
    return out


def _namespace_json(r: catalog.NamespaceRecord) -> dict[str, Any]:
    return {
        "name": r.name,
        "createdAt": _iso(r.created_at),
        "updatedAt": _iso(r.updated_at),
        "ownerName": None,
        "description": None,
        "isHidden": False,
    }


async def _require_namespace(conn: asyncpg.Connection, namespace: str) -> None:
    if namespace not in await catalog.fetch_namespaces_by_names(conn, [namespace]):
        raise NamespaceNotFoundError(namespace)


# -- handlers ------------------------------------------------------------------------------------


@get("/api/v1/namespaces", summary="List namespaces", tags=["catalog"])
async def list_namespaces(state: State) -> dict[str, Any]:
    """Every namespace, by name."""
    async with state.pool.acquire() as conn:
        return {"namespaces": [_namespace_json(r) for r in await catalog.list_namespaces(conn)]}


@get("/api/v1/namespaces/{namespace:str}", summary="Get a namespace", tags=["catalog"])
async def get_namespace(state: State, namespace: str) -> dict[str, Any]:
    """One namespace; 404 namespace_not_found."""
    name = _name(namespace)
    async with state.pool.acquire() as conn:
        found = await catalog.fetch_namespaces_by_names(conn, [name])
    if name not in found:
        raise NamespaceNotFoundError(name)
    return _namespace_json(found[name])


@get("/api/v1/namespaces/{namespace:str}/datasets", summary="List datasets", tags=["catalog"])
async def list_datasets(
    state: State, namespace: str, limit: Limit = 100, offset: Offset = 0
) -> dict[str, Any]:
    """The namespace's datasets by name (not deleted), with the total count."""
    f = NodeFilter(namespace=_name(namespace))
    async with state.pool.acquire() as conn:
        await _require_namespace(conn, f.namespace or "")
        records = await catalog.page_datasets(conn, f, after=None, limit=limit, offset=offset)
        return {
            "totalCount": await catalog.count_datasets(conn, f),
            "datasets": await datasets_json(conn, records),
        }


@get(
    "/api/v1/namespaces/{namespace:str}/datasets/{dataset:str}",
    summary="Get a dataset",
    tags=["catalog"],
)
async def get_dataset(state: State, namespace: str, dataset: str) -> dict[str, Any]:
    """One dataset (an alias finds it too); 404 dataset_not_found."""
    key = (_name(namespace), _name(dataset))
    async with state.pool.acquire() as conn:
        record = (await catalog.fetch_datasets_by_keys(conn, [key])).get(key)
        if record is None:
            raise DatasetNotFoundError(*key)
        return (await datasets_json(conn, [record]))[0]


@get("/api/v1/namespaces/{namespace:str}/jobs", summary="List jobs", tags=["catalog"])
async def list_jobs(
    state: State, namespace: str, limit: Limit = 100, offset: Offset = 0
) -> dict[str, Any]:
    """The namespace's jobs by name (not deleted), with the total count."""
    f = NodeFilter(namespace=_name(namespace))
    async with state.pool.acquire() as conn:
        await _require_namespace(conn, f.namespace or "")
        records = await catalog.page_jobs(conn, f, after=None, limit=limit, offset=offset)
        return {"totalCount": await catalog.count_jobs(conn, f), "jobs": await jobs_json(conn, records)}


async def _job(conn: asyncpg.Connection, namespace: str, job: str) -> JobRecord:
    key = (_name(namespace), _name(job))
    record = (await catalog.fetch_jobs_by_keys(conn, [key])).get(key)
    if record is None:
        raise JobNotFoundError(*key)
    return record


@get("/api/v1/namespaces/{namespace:str}/jobs/{job:str}", summary="Get a job", tags=["catalog"])
async def get_job(state: State, namespace: str, job: str) -> dict[str, Any]:
    """One job; 404 job_not_found."""
    async with state.pool.acquire() as conn:
        return (await jobs_json(conn, [await _job(conn, namespace, job)]))[0]


@get(
    "/api/v1/namespaces/{namespace:str}/jobs/{job:str}/runs",
    summary="List a job's runs",
    tags=["catalog"],
)
async def list_job_runs(
    state: State, namespace: str, job: str, limit: Limit = 100, offset: Offset = 0
) -> dict[str, Any]:
    """The job's runs, newest first."""
    async with state.pool.acquire() as conn:
        record = await _job(conn, namespace, job)
        runs = await catalog.page_job_runs(conn, record.job_uuid, limit=limit, offset=offset)
        total = await catalog.count_job_runs(conn, record.job_uuid)
        return {"totalCount": total, "runs": await runs_json(conn, runs)}


@get(
    ["/api/v1/jobs/runs/{run_id:str}", "/api/v1/runs/{run_id:str}"],
    summary="Get a run",
    tags=["catalog"],
)
async def get_run(state: State, run_id: str) -> dict[str, Any]:
    """One run by its runId; 404 run_not_found."""
    try:
        key = uuid.UUID(run_id)
    except ValueError:
        raise InvalidRequestError(f"Invalid run id '{run_id}': expected a UUID.") from None
    async with state.pool.acquire() as conn:
        record = (await catalog.fetch_runs_by_uuids(conn, [key])).get(key)
        if record is None:
            raise RunNotFoundError(run_id)
        return (await runs_json(conn, [record]))[0]


def _search_sort(sort: SortParam | None) -> catalog.SearchSort:
    return cast("catalog.SearchSort", sort.upper()) if sort else "RELEVANCE"


@get("/api/v1/search", summary="Search datasets and jobs by name", tags=["catalog"])
async def search(
    state: State,
    q: Annotated[str, Parameter(min_length=1, description="A part of the name, any case.")],
    filter: Annotated[Literal["DATASET", "JOB"] | None, Parameter(description="Only this kind.")] = None,
    sort: Annotated[
        SortParam | None,
        Parameter(
            description="NAME, UPDATE_AT (newest first) or HEAT (hottest first, never computed "
            "last), in either case; by relevance when absent."
        ),
    ] = None,
    limit: Annotated[
        int, Parameter(ge=1, le=100, description="At most this many results (default 10).")
    ] = 10,
    namespace: str | None = None,
) -> dict[str, Any]:
    """Marquez's search: {totalCount, results: [{type, name, updatedAt, namespace, nodeId, heat}]}."""
    async with state.pool.acquire() as conn:
        hits = await catalog.search_nodes(
            conn, q, namespace=namespace, kind=filter, sort=_search_sort(sort), limit=limit
        )
        total = await catalog.count_search_nodes(conn, q, namespace=namespace, kind=filter)
    return {
        "totalCount": total,
        "results": [
            {
                "type": h.kind,
                "name": h.name,
                "updatedAt": _iso(h.updated_at),
                "namespace": h.namespace,
                "nodeId": f"{h.kind.lower()}:{h.namespace}:{h.name}",
                "heat": h.heat,
            }
            for h in hits
        ],
    }


catalog_handlers = [
    list_namespaces,
    get_namespace,
    list_datasets,
    get_dataset,
    list_jobs,
    get_job,
    list_job_runs,
    get_run,
    search,
]
