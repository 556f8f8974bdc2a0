"""Runs: one execution of a job, its states and the datasets it read and wrote."""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import cast

import strawberry

from headwater.api.graphql.context import Info
from headwater.api.graphql.types.common import JSON
from headwater.api.graphql.types.dataset import Dataset, DatasetVersion
from headwater.api.graphql.types.job import Job, JobVersion
from headwater.store.catalog import RunDatasetRecord, RunRecord


@strawberry.enum(description="OpenLineage run states.")
class RunState(Enum):
    START = "START"
    RUNNING = "RUNNING"
    COMPLETE = "COMPLETE"
    ABORT = "ABORT"
    FAIL = "FAIL"
    OTHER = "OTHER"


def _state(value: str | None) -> RunState | None:
    return RunState(value) if value in RunState.__members__ else None


@strawberry.type(description="A state a run reported, at its event time.")
class RunStateTransition:
    state: RunState | None
    at: dt.datetime


@strawberry.type(description="A dataset a run read or wrote, with the version read or written.")
class RunDataset:
    record: strawberry.Private[RunDatasetRecord]

    @strawberry.field
    async def dataset(self, info: Info) -> Dataset:
        return cast(Dataset, await Dataset.by_uuid(info, self.record.dataset_uuid))

    @strawberry.field
    async def version(self, info: Info) -> DatasetVersion | None:
        return cast(
            DatasetVersion | None,
            await Dataset.version_by_uuid(info, self.record.dataset_version_uuid),
        )


@strawberry.type(description="One execution of a job.")
class Run:
    id: strawberry.ID = strawberry.field(description="The OpenLineage runId.")
    reported_run_id: str | None = strawberry.field(
        description="The runId as the producer reported it when it is not a UUID; `id` is then its "
        "name-based UUID (MD5 of its UTF-8 bytes), as Marquez derives it."
    )
    state: RunState | None = strawberry.field(description="The latest state by event time.")
    started_at: dt.datetime | None
    ended_at: dt.datetime | None
    nominal_start_time: dt.datetime | None
    nominal_end_time: dt.datetime | None
    error_message: str | None
    facets: JSON = strawberry.field(description="The latest value of each run facet, by facet name.")
    created_at: dt.datetime
    updated_at: dt.datetime
    record: strawberry.Private[RunRecord]

    @strawberry.field(description="Milliseconds from start to end, once both are known.")
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return int((self.ended_at - self.started_at).total_seconds() * 1000)

    @strawberry.field
    async def job(self, info: Info) -> Job:
        return cast(Job, await Job.by_uuid(info, self.record.job_uuid))

    @strawberry.field(description="The job version computed from what the run read and wrote.")
    async def job_version(self, info: Info) -> JobVersion | None:
        return cast(JobVersion | None, await Job.version_by_uuid(info, self.record.job_version_uuid))

    @strawberry.field(description="The run this one ran inside (from the parent run facet).")
    async def parent_run(self, info: Info) -> Run | None:
        if self.record.parent_run_uuid is None:
            return None
        record = await info.context.loaders.run.load(self.record.parent_run_uuid)
        return Run.from_record(record) if record else None

    @strawberry.field(description="Every state it reported, oldest first.")
    async def states(self, info: Info) -> list[RunStateTransition]:
        rows = await info.context.loaders.run_states.load(self.record.run_uuid)
        return [RunStateTransition(state=_state(r.state), at=r.event_time) for r in rows]

    @strawberry.field
    async def inputs(self, info: Info) -> list[RunDataset]:
        rows = await info.context.loaders.run_datasets.load(self.record.run_uuid)
        return [RunDataset(record=r) for r in rows if r.direction == "INPUT"]

    @strawberry.field
    async def outputs(self, info: Info) -> list[RunDataset]:
        rows = await info.context.loaders.run_datasets.load(self.record.run_uuid)
        return [RunDataset(record=r) for r in rows if r.direction == "OUTPUT"]

    @classmethod
    def from_record(cls, r: RunRecord) -> Run:
        return cls(
            id=strawberry.ID(str(r.run_uuid)),
            reported_run_id=r.reported_run_id,
            state=_state(r.state),
            started_at=r.started_at,
            ended_at=r.ended_at,
            nominal_start_time=r.nominal_start_time,
            nominal_end_time=r.nominal_end_time,
            error_message=r.error_message,
            facets=JSON(r.facets),
            created_at=r.created_at,
            updated_at=r.updated_at,
            record=r,
        )
