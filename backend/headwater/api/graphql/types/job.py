"""Jobs and job versions."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING, Annotated

import strawberry

from headwater.api.graphql.context import Info
from headwater.api.graphql.types.common import HEAT_DESCRIPTION, JSON, OWNERS_DESCRIPTION, owner_names
from headwater.api.graphql.types.dataset import Dataset
from headwater.api.graphql.types.paging import (
    CatalogOrder,
    PageInfo,
    check_page_size,
    decode_cursor,
    encode_cursor,
    page_of_nodes,
)
from headwater.api.graphql.types.tag import Tag
from headwater.lineage.node_ids import format_node_id
from headwater.store import catalog
from headwater.store.catalog import JobRecord, JobVersionRecord, NodeFilter

if TYPE_CHECKING:
    from headwater.api.graphql.types.run import Run

RunType = Annotated["Run", strawberry.lazy("headwater.api.graphql.types.run")]

MAX_LIST = 100


@strawberry.type(description="A job's SQL or source code.")
class JobCode:
    text: str
    language: str = strawberry.field(
        description="The SQL dialect when reported (else SQL), or the source's language."
    )


@strawberry.type(description="A distinct (inputs, outputs, code) of a job.")
class JobVersion:
    id: strawberry.ID
    version: str
    code_hash: str | None = strawberry.field(
        description="SHA-256 of the job's SQL or source, when reported."
    )
    created_at: dt.datetime
    record: strawberry.Private[JobVersionRecord]

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

    @strawberry.field(description="The run that first produced this version.")
    async def created_by_run(self, info: Info) -> RunType | None:
        from headwater.api.graphql.types.run import Run

        if self.record.created_by_run_uuid is None:
            return None
        record = await info.context.loaders.run.load(self.record.created_by_run_uuid)
        return Run.from_record(record) if record else None

    @strawberry.field
    async def job(self, info: Info) -> Job:
        return Job.from_record(await info.context.loaders.job_by_uuid.load(self.record.job_uuid))

    @classmethod
    def from_record(cls, r: JobVersionRecord) -> JobVersion:
        return cls(
            id=strawberry.ID(str(r.job_version_uuid)),
            version=r.version,
            code_hash=r.code_hash,
            created_at=r.created_at,
            record=r,
        )


@strawberry.type(description="A page of runs, newest first.")
class RunConnection:
    nodes: list[RunType]
    page_info: PageInfo


@strawberry.type(description="A job: a task, query or pipeline step that reads and writes datasets.")
class Job:
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

    @strawberry.field(description=OWNERS_DESCRIPTION)
    def owners(self) -> list[str]:
        return owner_names(self.facets)

    @strawberry.field
    def deleted(self) -> bool:
        return self.deleted_at is not None

    @strawberry.field(description="The job this one runs inside (an Airflow DAG for a task ...).")
    async def parent(self, info: Info) -> Job | None:
        if self.record.parent_job_uuid is None:
            return None
        record = await info.context.loaders.job_by_uuid.load(self.record.parent_job_uuid)
        return Job.from_record(record) if record else None

    @strawberry.field(description="The jobs that run inside this one.")
    async def children(self, info: Info) -> list[Job]:
        return [
            Job.from_record(j) for j in await info.context.loaders.child_jobs.load(self.record.job_uuid)
        ]

    @strawberry.field
    async def tags(self, info: Info) -> list[Tag]:
        return [
            Tag.from_record(t) for t in await info.context.loaders.job_tags.load(self.record.job_uuid)
        ]

    @strawberry.field(description="The version its latest completed run defined.")
    async def current_version(self, info: Info) -> JobVersion | None:
        if self.record.current_version_uuid is None:
            return None
        record = await info.context.loaders.job_version.load(self.record.current_version_uuid)
        return JobVersion.from_record(record) if record else None

    @strawberry.field(description="Its versions, newest first (limit: default 20, at most 100).")
    async def versions(self, info: Info, limit: int = 20) -> list[JobVersion]:
        check_page_size(limit, MAX_LIST, "limit")
        rows = await info.context.loaders.job_versions.load((self.record.job_uuid, limit))
        return [JobVersion.from_record(r) for r in rows]

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
            before = (dt.datetime.fromisoformat(created_at), uuid.UUID(run_id))
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
        return cls(
            id=strawberry.ID(format_node_id("JOB", r.namespace, r.name)),
            namespace=r.namespace,
            name=r.name,
            type=r.job_type,
            description=r.description,
            facets=JSON(r.facets),
            created_at=r.created_at,
            updated_at=r.updated_at,
            deleted_at=r.deleted_at,
            heat=r.heat,
            manual=r.manual,
            record=r,
        )


@strawberry.type(description="A page of jobs in the order asked (by namespace and name by default).")
class JobConnection:
    nodes: list[Job]
    page_info: PageInfo
    filter: strawberry.Private[NodeFilter]

    @strawberry.field(description="How many jobs match in all pages.")
    async def total_count(self, info: Info) -> int:
        async with info.context.pool.acquire() as conn:
            return await catalog.count_nodes(catalog.JOBS, conn, self.filter)


async def page_of_jobs(
    info: Info, f: NodeFilter, first: int, after: str | None, order: CatalogOrder = CatalogOrder.NAME
) -> JobConnection:
    """One page of jobs in ``order`` after the cursor ``after`` (made for the same order)."""
    page, page_info = await page_of_nodes(info, catalog.JOBS, f, first, after, order)
    return JobConnection(nodes=[Job.from_record(r) for r in page], page_info=page_info, filter=f)
