"""Runs: a job's runs, one run, a run's facets, and jobs of every namespace by their last run."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from litestar import get
from litestar.datastructures import State
from litestar.params import QueryParameter

from headwater.api.rest.catalog.nodes import JOB, JOBS, page_json
from headwater.api.rest.catalog.routing import PROBLEMS, Limit, Offset, name
from headwater.api.rest.catalog.shapes import jobs_json, runs_json
from headwater.errors import InvalidRequestError, RunNotFoundError
from headwater.store import catalog
from headwater.store.catalog import NodeFilter, RunRecord

# Marquez's run states as the OpenLineage states stored (OTHER: no run, or no state yet).
_STORED_STATES = {
    "NEW": ["OTHER"],
    "RUNNING": ["START", "RUNNING"],
    "COMPLETED": ["COMPLETE"],
    "FAILED": ["FAIL"],
    "ABORTED": ["ABORT"],
}
RunState = Literal["NEW", "RUNNING", "COMPLETED", "FAILED", "ABORTED"]


async def _run(state: State, run_id: str) -> RunRecord:
    try:
        key = uuid.UUID(run_id)
    except ValueError:
        raise InvalidRequestError(f"Invalid run id '{run_id}': expected a UUID.") from None
    async with state.pool.acquire() as conn:
        record = (await catalog.fetch_runs_by_uuids(conn, [key])).get(key)
    if record is None:
        raise RunNotFoundError(run_id)
    return record


@get(f"{JOB}/runs", summary="List a job's runs", tags=["catalog"], responses=PROBLEMS)
async def list_job_runs(
    state: State, namespace: str, job: str, limit: Limit = 100, offset: Offset = 0
) -> dict[str, Any]:
    """The job's runs, newest first."""
    async with state.pool.acquire() as conn:
        record = await catalog.fetch_node(catalog.JOBS, conn, name(namespace), name(job))
        runs = await catalog.page_job_runs(conn, record.job_uuid, limit=limit, offset=offset)
        total = await catalog.count_job_runs(conn, record.job_uuid)
        return {"totalCount": total, "runs": await runs_json(conn, runs)}


@get(
    ["/api/v1/jobs/runs/{run_id:str}", "/api/v1/runs/{run_id:str}"],
    summary="Get a run",
    tags=["catalog"],
    responses=PROBLEMS,
)
async def get_run(state: State, run_id: str) -> dict[str, Any]:
    """One run by its runId; 404 run_not_found."""
    record = await _run(state, run_id)
    async with state.pool.acquire() as conn:
        return (await runs_json(conn, [record]))[0]


@get(
    "/api/v1/jobs/runs/{run_id:str}/facets",
    summary="Get a run's facets",
    tags=["catalog"],
    responses=PROBLEMS,
)
async def get_run_facets(
    state: State,
    run_id: str,
    of: Annotated[
        Literal["run", "job", "RUN", "JOB"],
        QueryParameter(name="type", description="run: the run's facets; job: the facets of its job."),
    ] = "run",
) -> dict[str, Any]:
    """Marquez's {runId, facets}: the latest value of each run facet, or of each facet of its job."""
    record = await _run(state, run_id)
    if of.lower() == "run":
        return {"runId": str(record.run_uuid), "facets": record.facets}
    async with state.pool.acquire() as conn:
        jobs = await catalog.fetch_nodes_by_uuids(catalog.JOBS, conn, [record.job_uuid])
    return {"runId": str(record.run_uuid), "facets": jobs[record.job_uuid].facets}


@get("/api/v1/jobs", summary="List jobs of every namespace", tags=["catalog"], responses=PROBLEMS)
async def list_all_jobs(
    state: State,
    limit: Limit = 100,
    offset: Offset = 0,
    last_run_states: Annotated[
        list[RunState] | None,
        QueryParameter(
            name="lastRunStates", description="Only jobs whose latest run is in one of these states."
        ),
    ] = None,
) -> dict[str, Any]:
    """Jobs (not deleted) of every namespace by (namespace, name): {totalCount, jobs}."""
    if not last_run_states:
        return await page_json(state, JOBS, NodeFilter(), limit, offset)
    stored = [s for state_ in last_run_states for s in _STORED_STATES[state_]]
    async with state.pool.acquire() as conn:
        records, total = await catalog.page_jobs_by_last_run_state(
            conn, stored, limit=limit, offset=offset
        )
        return {"totalCount": total, "jobs": await jobs_json(conn, records)}


run_handlers = [list_job_runs, get_run, get_run_facets, list_all_jobs]
