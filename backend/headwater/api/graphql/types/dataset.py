"""Datasets, their fields and versions."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from headwater.api.graphql.context import Info
from headwater.api.graphql.types.common import HEAT_DESCRIPTION, JSON, OWNERS_DESCRIPTION, owner_names
from headwater.api.graphql.types.paging import (
    CatalogOrder,
    PageInfo,
    check_page_size,
    page_of_nodes,
)
from headwater.api.graphql.types.tag import Tag
from headwater.lineage.node_ids import format_node_id
from headwater.store import catalog
from headwater.store.catalog import DatasetRecord, DatasetVersionRecord, FieldRecord, NodeFilter

if TYPE_CHECKING:
    from headwater.api.graphql.types.run import Run

RunType = Annotated["Run", strawberry.lazy("headwater.api.graphql.types.run")]

MAX_LIST = 100


@strawberry.type(description="A column of a dataset's current schema.")
class DatasetField:
    name: str
    type: str | None
    description: str | None
    dataset_uuid: strawberry.Private[uuid.UUID]

    @strawberry.field(description="Tags on this field.")
    async def tags(self, info: Info) -> list[Tag]:
        by_field = await info.context.loaders.field_tags.load(self.dataset_uuid)
        return [Tag.from_record(t) for t in by_field.get(self.name, [])]

    @classmethod
    def from_record(cls, r: FieldRecord) -> DatasetField:
        return cls(name=r.name, type=r.type, description=r.description, dataset_uuid=r.dataset_uuid)


@strawberry.type(description="A field as a dataset version recorded it.")
class SchemaField:
    name: str
    type: str | None
    description: str | None


@strawberry.type(description="A distinct (schema, storage version) a run wrote.")
class DatasetVersion:
    id: strawberry.ID
    version: str
    storage_version: str | None
    created_at: dt.datetime
    schema_fields: strawberry.Private[list[dict[str, Any]] | None]
    dataset_uuid: strawberry.Private[uuid.UUID]
    created_by_run_uuid: strawberry.Private[uuid.UUID | None]

    @strawberry.field(description="The schema of this version (null when no run reported one).")
    def fields(self) -> list[SchemaField] | None:
        if self.schema_fields is None:
            return None
        return [
            SchemaField(name=f.get("name", ""), type=f.get("type"), description=f.get("description"))
            for f in self.schema_fields
        ]

    @strawberry.field(description="The run that first wrote this version.")
    async def created_by_run(self, info: Info) -> RunType | None:
        from headwater.api.graphql.types.run import Run

        if self.created_by_run_uuid is None:
            return None
        record = await info.context.loaders.run.load(self.created_by_run_uuid)
        return Run.from_record(record) if record else None

    @strawberry.field
    async def dataset(self, info: Info) -> Dataset:
        record = await info.context.loaders.dataset_by_uuid.load(self.dataset_uuid)
        return Dataset.from_record(record)

    @classmethod
    def from_record(cls, r: DatasetVersionRecord) -> DatasetVersion:
        return cls(
            id=strawberry.ID(str(r.dataset_version_uuid)),
            version=r.version,
            storage_version=r.storage_version,
            created_at=r.created_at,
            schema_fields=r.schema_fields,
            dataset_uuid=r.dataset_uuid,
            created_by_run_uuid=r.created_by_run_uuid,
        )


@strawberry.type(description="A dataset (table, file, topic ...) as OpenLineage names it.")
class Dataset:
    id: strawberry.ID = strawberry.field(description="Its lineage node id: dataset:NAMESPACE:NAME.")
    namespace: str
    name: str
    source_name: str | None
    description: str | None
    facets: JSON = strawberry.field(description="The latest value of each dataset facet, by facet name.")
    created_at: dt.datetime
    updated_at: dt.datetime
    last_modified_at: dt.datetime | None = strawberry.field(description="When a run last wrote it.")
    deleted_at: dt.datetime | None = strawberry.field(description="Set while it is soft-deleted.")
    heat: float | None = strawberry.field(description=HEAT_DESCRIPTION)
    record: strawberry.Private[DatasetRecord]

    @strawberry.field(description=OWNERS_DESCRIPTION)
    def owners(self) -> list[str]:
        return owner_names(self.facets)

    @strawberry.field
    def deleted(self) -> bool:
        return self.deleted_at is not None

    @strawberry.field(description="The current schema, in order.")
    async def fields(self, info: Info) -> list[DatasetField]:
        return [
            DatasetField.from_record(f)
            for f in await info.context.loaders.fields.load(self.record.dataset_uuid)
        ]

    @strawberry.field
    async def tags(self, info: Info) -> list[Tag]:
        return [
            Tag.from_record(t)
            for t in await info.context.loaders.dataset_tags.load(self.record.dataset_uuid)
        ]

    @strawberry.field(description="The version of its latest write.")
    async def current_version(self, info: Info) -> DatasetVersion | None:
        if self.record.current_version_uuid is None:
            return None
        record = await info.context.loaders.dataset_version.load(self.record.current_version_uuid)
        return DatasetVersion.from_record(record) if record else None

    @strawberry.field(description="Its versions, newest first (limit: default 20, at most 100).")
    async def versions(self, info: Info, limit: int = 20) -> list[DatasetVersion]:
        check_page_size(limit, MAX_LIST, "limit")
        rows = await info.context.loaders.dataset_versions.load((self.record.dataset_uuid, limit))
        return [DatasetVersion.from_record(r) for r in rows]

    @strawberry.field(
        description="The runs that wrote it, newest first (limit: default 20, at most 100)."
    )
    async def runs(self, info: Info, limit: int = 20) -> list[RunType]:
        from headwater.api.graphql.types.run import Run

        check_page_size(limit, MAX_LIST, "limit")
        rows = await info.context.loaders.dataset_writers.load((self.record.dataset_uuid, limit))
        return [Run.from_record(r) for r in rows]

    @classmethod
    def from_record(cls, r: DatasetRecord) -> Dataset:
        return cls(
            id=strawberry.ID(format_node_id("DATASET", r.namespace, r.name)),
            namespace=r.namespace,
            name=r.name,
            source_name=r.source_name,
            description=r.description,
            facets=JSON(r.facets),
            created_at=r.created_at,
            updated_at=r.updated_at,
            last_modified_at=r.last_modified_at,
            deleted_at=r.deleted_at,
            heat=r.heat,
            record=r,
        )


@strawberry.type(description="A page of datasets in the order asked (by namespace and name by default).")
class DatasetConnection:
    nodes: list[Dataset]
    page_info: PageInfo
    filter: strawberry.Private[NodeFilter]

    @strawberry.field(description="How many datasets match in all pages.")
    async def total_count(self, info: Info) -> int:
        async with info.context.pool.acquire() as conn:
            return await catalog.count_nodes(catalog.DATASETS, conn, self.filter)


async def page_of_datasets(
    info: Info, f: NodeFilter, first: int, after: str | None, order: CatalogOrder = CatalogOrder.NAME
) -> DatasetConnection:
    """One page of datasets in ``order`` after the cursor ``after`` (made for the same order)."""
    page, page_info = await page_of_nodes(info, catalog.DATASETS, f, first, after, order)
    return DatasetConnection(nodes=[Dataset.from_record(r) for r in page], page_info=page_info, filter=f)
