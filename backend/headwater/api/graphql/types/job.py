"""Jobs and job versions."""

from __future__ import annotations

import datetime as dt
from typing import cast

import strawberry

from headwater.api.graphql.context import Info
from headwater.api.graphql.types import node
from headwater.api.graphql.types.common import HEAT_DESCRIPTION, JSON, OWNERS_DESCRIPTION
from headwater.api.graphql.types.dataset import Dataset
from headwater.api.graphql.types.node import (
    MAX_LIST,
    CatalogNode,
    CatalogVersion,
    NodeConnection,
    RunType,
)
from headwater.api.graphql.types.paging import (
    PageInfo,
    check_page_size,
    cursor_time,
    cursor_uuid,
    decode_cursor,
    encode_cursor,
)
from headwater.store import catalog
from headwater.store.catalog import JobRecord, JobVersionRecord


@strawberry.type(description="A job's SQL or source code.")
class JobCode:
    text: str
    language: str = strawberry.field(
        description="The SQL dialect when reported (else SQL), or the source's language."
    )


@strawberry.type(description="A distinct (inputs, outputs, code) of a job.")
class JobVersion(CatalogVersion):
    id: strawberry.ID
    version: str
    code_hash: str | None = strawberry.field(
        description="SHA-256 of the job's SQL or source, when reported."
    )
    created_at: dt.datetime
    record: strawberry.Private[JobVersionRecord]

    @classmethod
    def from_record(cls, r: JobVersionRecord) -> JobVersion:
        return cls(**cls.shared_values(r), code_hash=r.code_hash)

    @strawberry.field
    async def inputs(self, info: Info) -> list[Dataset]:
        return [
            Dataset.from_record(d)
            for d in await info.context.loaders.datasets_by_uuids(self.record.input_uuids)
        ]

    @strawberry.field
    async def outputs(self, info: Info) -> list[Dataset]:
        return [
            Dataset.from_record(d)
            for d in await info.context.loaders.datasets_by_uuids(self.record.output_uuids)
        ]

    @strawberry.field(
        description="The SQL or source code of this version, as the run that first produced it "
        "reported it; null when it reported none, or when its events are past the retention horizon."
    )
    async def code(self, info: Info) -> JobCode | None:
        if self.record.created_by_run_uuid is None:
            return None
        found = await info.context.loaders.run_code.load(self.record.created_by_run_uuid)
        return JobCode(text=found.text, language=found.language) if found else None

    created_by_run = node.created_by_run_field("The run that first produced this version.")

    @strawberry.field
    async def job(self, info: Info) -> Job:
        return cast(Job, await Job.by_uuid(info, self.record.node_uuid))


@strawberry.type(description="A page of runs, newest first.")
class RunConnection:
    nodes: list[RunType]
    page_info: PageInfo


@strawberry.type(description="A job: a task, query or pipeline step that reads and writes datasets.")
class Job(CatalogNode, shape=catalog.JOBS, version_type=JobVersion):
    id: strawberry.ID = strawberry.field(description="Its lineage node id: job:NAMESPACE:NAME.")
    namespace: str
    name: str
    type: str | None = strawberry.field(description="BATCH, STREAMING, MANUAL (declared by hand) ...")
    description: str | None
    facets: JSON = strawberry.field(description="The latest value of each job facet, by facet name.")
    created_at: dt.datetime
    updated_at: dt.datetime
    deleted_at: dt.datetime | None = strawberry.field(description="Set while it is soft-deleted.")
    heat: float | None = strawberry.field(description=HEAT_DESCRIPTION)
    manual: bool = strawberry.field(description="Declared by hand to carry manual lineage.")
    record: strawberry.Private[JobRecord]

    owners = strawberry.field(resolver=node.owners, description=OWNERS_DESCRIPTION)
    deleted = strawberry.field(resolver=node.deleted)

    @strawberry.field(description="The job this one runs inside (an Airflow DAG for a task ...).")
    async def parent(self, info: Info) -> Job | None:
        if self.record.parent_job_uuid is None:
            return None
        return await Job.by_uuid(info, self.record.parent_job_uuid)

    @strawberry.field(description="The jobs that run inside this one.")
    async def children(self, info: Info) -> list[Job]:
        return [
            Job.from_record(j) for j in await info.context.loaders.child_jobs.load(self.record.job_uuid)
        ]

    tags = strawberry.field(resolver=node.tags)
    current_version = node.current_version_field(
        JobVersion, "The version its latest completed run defined."
    )
    versions = node.versions_field(JobVersion)

    @strawberry.field(description="Its most recently created run.")
    async def latest_run(self, info: Info) -> RunType | None:
        from headwater.api.graphql.types.run import Run

        rows = await info.context.loaders.job_runs.load((self.record.job_uuid, 1))
        return Run.from_record(rows[0]) if rows else None

    @strawberry.field(description="Its runs, newest first (first: default 20, at most 100).")
    async def runs(self, info: Info, first: int = 20, after: str | None = None) -> RunConnection:
        from headwater.api.graphql.types.run import Run

        check_page_size(first, MAX_LIST)
        if after is None:
            rows = await info.context.loaders.job_runs.load((self.record.job_uuid, first + 1))
        else:
            created_at, run_id = decode_cursor(after, 2)
            before = (cursor_time(after, created_at), cursor_uuid(after, run_id))
            async with info.context.pool.acquire() as conn:
                rows = (
                    await catalog.fetch_runs_by_jobs(
                        conn, [self.record.job_uuid], first + 1, before=before
                    )
                )[self.record.job_uuid]
        page = rows[:first]
        end = encode_cursor(page[-1].created_at.isoformat(), str(page[-1].run_uuid)) if page else None
        return RunConnection(
            nodes=[Run.from_record(r) for r in page],
            page_info=PageInfo(has_next_page=len(rows) > first, end_cursor=end),
        )

    @classmethod
    def from_record(cls, r: JobRecord) -> Job:
        return cls(**cls.shared_values(r), type=r.job_type, manual=r.manual)


@strawberry.type(description="A page of jobs in the order asked (by namespace and name by default).")
class JobConnection(NodeConnection[Job]):
    node_type = Job
    total_count: int = strawberry.field(
        resolver=node.total_count, description="How many jobs match in all pages."
    )
