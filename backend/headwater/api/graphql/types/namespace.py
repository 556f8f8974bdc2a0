"""Namespaces: where datasets and jobs are named."""

from __future__ import annotations

import datetime as dt

import strawberry

from headwater.api.graphql.context import Info
from headwater.api.graphql.types.dataset import DatasetConnection
from headwater.api.graphql.types.job import JobConnection
from headwater.api.graphql.types.paging import CatalogOrder, OrderBy
from headwater.store.catalog import NamespaceRecord, NodeFilter


@strawberry.type(
    description="A namespace of datasets (postgres://host:5432, s3://bucket ...) or of jobs."
)
class Namespace:
    name: str
    created_at: dt.datetime
    updated_at: dt.datetime = strawberry.field(description="When a dataset or job in it last changed.")

    @strawberry.field(
        description="Its datasets, by name unless `orderBy` says otherwise (first: default 50, at "
        "most 500)."
    )
    async def datasets(
        self,
        info: Info,
        first: int = 50,
        after: str | None = None,
        name_contains: str | None = None,
        include_deleted: bool = False,
        order_by: OrderBy = CatalogOrder.NAME,
    ) -> DatasetConnection:
        return await DatasetConnection.page(
            info, NodeFilter(self.name, name_contains, include_deleted), first, after, order_by
        )

    @strawberry.field(
        description="Its jobs, by name unless `orderBy` says otherwise (first: default 50, at most 500)."
    )
    async def jobs(
        self,
        info: Info,
        first: int = 50,
        after: str | None = None,
        name_contains: str | None = None,
        include_deleted: bool = False,
        order_by: OrderBy = CatalogOrder.NAME,
    ) -> JobConnection:
        return await JobConnection.page(
            info, NodeFilter(self.name, name_contains, include_deleted), first, after, order_by
        )

    @classmethod
    def from_record(cls, r: NamespaceRecord) -> Namespace:
        return cls(name=r.name, created_at=r.created_at, updated_at=r.updated_at)
