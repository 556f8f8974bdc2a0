"""Headwater's catalog records in Marquez's JSON shapes (its web UI's ``types/api.ts``).

Each function turns a list of records into JSON objects, loading what they show for all of them in
a few queries. Datasets, jobs and search results carry ``heat`` besides, Headwater's importance
score (see ``headwater spark heat``): N·h, 1.0 on average, null until computed.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, cast

import asyncpg

from headwater.store import catalog
from headwater.store import tags as tag_store
from headwater.store.catalog import (
    DatasetRecord,
    DatasetVersionRecord,
    JobRecord,
    JobVersionRecord,
    NamespaceRecord,
    RunRecord,
)

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
# The jobType facet's processingType as Marquez's job type (BATCH when not reported).
_PROCESSING_TYPES = {"BATCH": "BATCH", "STREAMING": "STREAM", "STREAM": "STREAM", "SERVICE": "SERVICE"}
# How many of a job's latest runs its JSON carries, as Marquez does.
LATEST_RUNS = 10


def iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _names(records: list[tag_store.TagRecord]) -> list[str]:
    return [t.name for t in records]


def _facet(facets: dict[str, Any], facet: str, key: str) -> Any:
    value = facets.get(facet)
    return value.get(key) if isinstance(value, dict) else None


def node_id_json(namespace: str, name: str) -> dict[str, str]:
    return {"namespace": namespace, "name": name}


def namespace_json(r: NamespaceRecord) -> dict[str, Any]:
    return {
        "name": r.name,
        "createdAt": iso(r.created_at),
        "updatedAt": iso(r.updated_at),
        "ownerName": None,
        "description": None,
        "isHidden": False,
    }


async def _column_lineage(
    conn: asyncpg.Connection, uuids: list[uuid.UUID]
) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """Marquez's ``columnLineage`` of datasets: each field with the input fields it comes from."""
    out: dict[uuid.UUID, dict[str, dict[str, Any]]] = {u: {} for u in uuids}
    for r in await catalog.fetch_column_inputs_by_datasets(conn, uuids):
        field = out[r.dataset_uuid].setdefault(
            r.field,
            {
                "name": r.field,
                "inputFields": [],
                "transformationDescription": None,
                "transformationType": None,
            },
        )
        field["inputFields"].append(
            {
                "namespace": r.input_namespace,
                "dataset": r.input_dataset,
                "field": r.input_field,
                "transformationType": r.transformation_type,
                "transformationDescription": r.description,
            }
        )
    return {u: list(fields.values()) for u, fields in out.items()}


async def datasets_json(conn: asyncpg.Connection, records: list[DatasetRecord]) -> list[dict[str, Any]]:
    """Marquez dataset objects, with fields, tags and column lineage loaded for all of them."""
    uuids = [r.dataset_uuid for r in records]
    fields = await catalog.fetch_fields_by_datasets(conn, uuids)
    tags = await tag_store.fetch_node_tags(catalog.DATASETS, conn, uuids)
    field_tags = await tag_store.fetch_dataset_field_tags(conn, uuids)
    column_lineage = await _column_lineage(conn, uuids)
    return [
        {
            "id": node_id_json(r.namespace, r.name),
            "type": "DB_TABLE",
            "name": r.name,
            "physicalName": r.name,
            "createdAt": iso(r.created_at),
            "updatedAt": iso(r.updated_at),
            "namespace": r.namespace,
            "sourceName": r.source_name,
            "fields": [
                {
                    "name": f.name,
                    "type": f.type,
                    "tags": _names(field_tags[r.dataset_uuid].get(f.name, [])),
                    "description": f.description,
                }
                for f in fields[r.dataset_uuid]
            ],
            "tags": _names(tags[r.dataset_uuid]),
            "lastModifiedAt": iso(r.last_modified_at),
            "lastLifecycleState": _facet(r.facets, "lifecycleStateChange", "lifecycleStateChange"),
            "description": r.description,
            "currentVersion": str(r.current_version_uuid) if r.current_version_uuid else None,
            "columnLineage": column_lineage[r.dataset_uuid],
            "facets": r.facets,
            "deleted": r.deleted_at is not None,
            "heat": r.heat,
        }
        for r in records
    ]


async def dataset_versions_json(
    conn: asyncpg.Connection, dataset: DatasetRecord, versions: list[DatasetVersionRecord]
) -> list[dict[str, Any]]:
    """Marquez dataset versions: the schema each recorded and the run that first wrote it.

    Headwater keeps facets per dataset, not per version: the current version shows the dataset's
    facets and lifecycle state, older versions none.
    """
    runs = await catalog.fetch_runs_by_uuids(
        conn, [v.created_by_run_uuid for v in versions if v.created_by_run_uuid]
    )
    runs_by_uuid = dict(zip(runs, await runs_json(conn, list(runs.values())), strict=True))
    tags = _names(
        (await tag_store.fetch_node_tags(catalog.DATASETS, conn, [dataset.dataset_uuid]))[
            dataset.dataset_uuid
        ]
    )
    out = []
    for v in versions:
        current = v.version_uuid == dataset.current_version_uuid
        facets = dataset.facets if current else {}
        out.append(
            {
                "id": {"namespace": dataset.namespace, "name": dataset.name, "version": v.version},
                "type": "DB_TABLE",
                "name": dataset.name,
                "physicalName": dataset.name,
                "createdAt": iso(v.created_at),
                "version": v.version,
                "namespace": dataset.namespace,
                "sourceName": dataset.source_name,
                "fields": [
                    {
                        "name": f.get("name"),
                        "type": f.get("type"),
                        "tags": [],
                        "description": f.get("description"),
                    }
                    for f in v.schema_fields or []
                ],
                "tags": tags,
                "lastModifiedAt": iso(v.created_at),
                "description": dataset.description,
                "lifecycleState": _facet(facets, "lifecycleStateChange", "lifecycleStateChange"),
                "createdByRun": runs_by_uuid.get(v.created_by_run_uuid)
                if v.created_by_run_uuid
                else None,
                "facets": facets,
            }
        )
    return out


async def runs_json(conn: asyncpg.Connection, runs: list[RunRecord]) -> list[dict[str, Any]]:
    """Marquez run objects, with job versions and dataset versions loaded for all of them at once."""
    versions = await catalog.fetch_versions_by_uuids(
        catalog.JOBS, conn, [r.job_version_uuid for r in runs if r.job_version_uuid]
    )
    jobs = await catalog.fetch_nodes_by_uuids(catalog.JOBS, conn, list({r.job_uuid for r in runs}))
    touched = await catalog.fetch_run_datasets_by_runs(conn, [r.run_uuid for r in runs])
    every = [t for ts in touched.values() for t in ts]
    datasets = await catalog.fetch_nodes_by_uuids(
        catalog.DATASETS, conn, list({t.dataset_uuid for t in every})
    )
    dataset_versions = await catalog.fetch_versions_by_uuids(
        catalog.DATASETS, conn, list({t.dataset_version_uuid for t in every if t.dataset_version_uuid})
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
                "createdAt": iso(r.created_at),
                "updatedAt": iso(r.updated_at),
                "nominalStartTime": iso(r.nominal_start_time),
                "nominalEndTime": iso(r.nominal_end_time),
                "state": _RUN_STATES.get(r.state, "NEW"),
                "startedAt": iso(r.started_at),
                "endedAt": iso(r.ended_at),
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


async def _dataset_ids(
    conn: asyncpg.Connection, versions: list[JobVersionRecord]
) -> dict[uuid.UUID, dict[str, str]]:
    """The ``{namespace, name}`` of every input and output of job versions."""
    io = {u for v in versions for u in v.input_uuids + v.output_uuids}
    datasets = await catalog.fetch_nodes_by_uuids(catalog.DATASETS, conn, list(io))
    return {u: node_id_json(d.namespace, d.name) for u, d in datasets.items()}


def _location(facets: dict[str, Any]) -> str | None:
    """Where the job's code lives: the sourceCodeLocation facet's url."""
    return cast("str | None", _facet(facets, "sourceCodeLocation", "url"))


async def jobs_json(conn: asyncpg.Connection, records: list[JobRecord]) -> list[dict[str, Any]]:
    """Marquez job objects: current inputs and outputs, latest runs, tags and parent, in a few queries.

    ``type`` is Marquez's BATCH / STREAM / SERVICE, from the jobType facet's processingType;
    ``jobType`` is that facet's own job type (QUERY, DAG, TASK ...; MANUAL for jobs declared by hand).
    """
    uuids = [r.job_uuid for r in records]
    versions = await catalog.fetch_versions_by_uuids(
        catalog.JOBS, conn, [r.current_version_uuid for r in records if r.current_version_uuid]
    )
    ids = await _dataset_ids(conn, list(versions.values()))
    latest = await catalog.fetch_runs_by_jobs(conn, uuids, LATEST_RUNS)
    every_run = [r for rs in latest.values() for r in rs]
    run_json = dict(zip([r.run_uuid for r in every_run], await runs_json(conn, every_run), strict=True))
    tags = await tag_store.fetch_node_tags(catalog.JOBS, conn, uuids)
    parents = await catalog.fetch_nodes_by_uuids(
        catalog.JOBS, conn, [r.parent_job_uuid for r in records if r.parent_job_uuid]
    )

    out = []
    for r in records:
        version = versions.get(r.current_version_uuid) if r.current_version_uuid else None
        parent = parents.get(r.parent_job_uuid) if r.parent_job_uuid else None
        latest_runs = [run_json[run.run_uuid] for run in latest[r.job_uuid]]
        processing = _facet(r.facets, "jobType", "processingType")
        out.append(
            {
                "id": node_id_json(r.namespace, r.name),
                "type": _PROCESSING_TYPES.get(str(processing).upper(), "BATCH"),
                "jobType": r.job_type,
                "name": r.name,
                "simpleName": r.name.rsplit(".", 1)[-1],
                "parentJobName": parent.name if parent else None,
                "parentJobUuid": str(parent.job_uuid) if parent else None,
                "createdAt": iso(r.created_at),
                "updatedAt": iso(r.updated_at),
                "namespace": r.namespace,
                "inputs": [ids[u] for u in version.input_uuids if u in ids] if version else [],
                "outputs": [ids[u] for u in version.output_uuids if u in ids] if version else [],
                "location": _location(r.facets),
                "description": r.description,
                "latestRun": latest_runs[0] if latest_runs else None,
                "latestRuns": latest_runs,
                "facets": r.facets,
                "currentVersion": str(r.current_version_uuid) if r.current_version_uuid else None,
                "tags": _names(tags[r.job_uuid]),
                "deleted": r.deleted_at is not None,
                "heat": r.heat,
            }
        )
    return out


async def job_versions_json(
    conn: asyncpg.Connection, job: JobRecord, versions: list[JobVersionRecord]
) -> list[dict[str, Any]]:
    """Marquez job versions: the inputs, outputs and code of each, and the run that produced it."""
    ids = await _dataset_ids(conn, versions)
    runs = await catalog.fetch_runs_by_uuids(
        conn, [v.created_by_run_uuid for v in versions if v.created_by_run_uuid]
    )
    runs_by_uuid = dict(zip(runs, await runs_json(conn, list(runs.values())), strict=True))
    return [
        {
            "id": {"namespace": job.namespace, "name": job.name, "version": v.version},
            "name": job.name,
            "namespace": job.namespace,
            "version": v.version,
            "createdAt": iso(v.created_at),
            "updatedAt": iso(v.created_at),
            "location": _location(job.facets),
            "codeHash": v.code_hash,
            "inputs": [ids[u] for u in v.input_uuids if u in ids],
            "outputs": [ids[u] for u in v.output_uuids if u in ids],
            "latestRun": runs_by_uuid.get(v.created_by_run_uuid) if v.created_by_run_uuid else None,
            "facets": {},
        }
        for v in versions
    ]
