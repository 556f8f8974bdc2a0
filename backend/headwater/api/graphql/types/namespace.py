"""Namespaces: where datasets and jobs are named."""

from __future__ import annotations

import datetime as dt
from typing import Any

import strawberry

from headwater.api.graphql.context import Info
from headwater.api.graphql.types.dataset import DatasetConnection
from headwater.api.graphql.types.job import JobConnection
from headwater.api.graphql.types.paging import CatalogOrder, OrderBy
from headwater.store.catalog import NamespaceRecord, NodeFilter


def _page_field(connection: type[DatasetConnection] | type[JobConnection], description: str) -> Any:
    """A field of a namespace's datasets or jobs, a page at a time: both take the same arguments."""

    async def page(
        self: Namespace,
        info: Info,
        first: int = 50,
        after: str | None = None,
        name_contains: str | None = None,
        include_deleted: bool = False,
        order_by: OrderBy = CatalogOrder.NAME,
    ) -> Any:
        f = NodeFilter(self.name, name_contains, include_deleted)
        return await connection.page(info, f, first, after, order_by)

    return strawberry.field(resolver=page, graphql_type=connection, description=description)


@strawberry.type(
    description="A namespace of datasets (postgres://host:5432, s3://bucket ...) or of jobs."
)
class Namespace:
    name: str
    created_at: dt.datetime
    updated_at: dt.datetime = strawberry.field(description="When a dataset or job in it last changed.")

    datasets = _page_field(
        DatasetConnection,
        "Its datasets, by name unless `orderBy` says otherwise (first: default 50, at most 500).",
    )
    jobs = _page_field(
        JobConnection,
        "Its jobs, by name unless `orderBy` says otherwise (first: default 50, at most 500).",
    )

    @strawberry.field(
        description="How many datasets it holds, deleted ones aside. Counted for every namespace "
        "of the answer in one pass, where `datasets { totalCount }` counts namespace by namespace "
        "(and costs a count each): the field to list namespaces with their sizes."
    )
    async def dataset_count(self, info: Info) -> int:
        return int(await info.context.loaders.datasets.counts_by_namespace.load(self.name))

    @strawberry.field(
        description="How many jobs it holds, deleted ones aside; counted as `datasetCount` is."
    )
    async def job_count(self, info: Info) -> int:
        return int(await info.context.loaders.jobs.counts_by_namespace.load(self.name))

    @classmethod
    def from_record(cls, r: NamespaceRecord) -> Namespace:
        return cls(name=r.name, created_at=r.created_at, updated_at=r.updated_at)
