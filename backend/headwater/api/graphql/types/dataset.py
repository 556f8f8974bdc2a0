"""Datasets, their fields and versions."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from typing import cast

import strawberry

from headwater.api.graphql.context import Info
from headwater.api.graphql.types import node
from headwater.api.graphql.types.common import HEAT_DESCRIPTION, JSON, OWNERS_DESCRIPTION
from headwater.api.graphql.types.node import (
    MAX_LIST,
    CatalogNode,
    CatalogVersion,
    NodeConnection,
    RunType,
)
from headwater.api.graphql.types.paging import check_page_size
from headwater.api.graphql.types.tag import Tag
from headwater.store import catalog
from headwater.store.catalog import DatasetRecord, DatasetVersionRecord, FieldRecord


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
class DatasetVersion(CatalogVersion):
    id: strawberry.ID
    version: str
    storage_version: str | None
    created_at: dt.datetime
    record: strawberry.Private[DatasetVersionRecord]

    @classmethod
    def from_record(cls, r: DatasetVersionRecord) -> DatasetVersion:
        return cls(**cls.shared_values(r), storage_version=r.storage_version)

    @strawberry.field(
        description="The schema of this version (null when no run reported one).",
        graphql_type=list[SchemaField] | None,
    )
    def fields(self) -> Iterator[SchemaField] | None:
        # Built as the answer takes them, like a dataset's fields.
        if self.record.schema_fields is None:
            return None
        return (
            SchemaField(name=f.get("name", ""), type=f.get("type"), description=f.get("description"))
            for f in self.record.schema_fields
        )

    created_by_run = node.created_by_run_field("The run that first wrote this version.")

    @strawberry.field
    async def dataset(self, info: Info) -> Dataset:
        return cast(Dataset, await Dataset.by_uuid(info, self.record.node_uuid))


@strawberry.type(description="A dataset (table, file, topic ...) as OpenLineage names it.")
class Dataset(CatalogNode, shape=catalog.DATASETS, version_type=DatasetVersion):
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

    owners = strawberry.field(resolver=node.owners, description=OWNERS_DESCRIPTION)
    deleted = strawberry.field(resolver=node.deleted)

    @strawberry.field(description="The current schema, in order.", graphql_type=list[DatasetField])
    async def fields(self, info: Info) -> Iterator[DatasetField]:
        # Built as the answer takes them: a schema may hold 100,000 fields, and an operation that
        # is refused once it has taken those its budget allows builds no more (limits.py).
        return map(
            DatasetField.from_record, await info.context.loaders.fields.load(self.record.dataset_uuid)
        )

    tags = strawberry.field(resolver=node.tags)
    current_version = node.current_version_field(DatasetVersion, "The version of its latest write.")
    versions = node.versions_field(DatasetVersion)

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
            **cls.shared_values(r), source_name=r.source_name, last_modified_at=r.last_modified_at
        )


@strawberry.type(description="A page of datasets in the order asked (by namespace and name by default).")
class DatasetConnection(NodeConnection[Dataset]):
    node_type = Dataset
    total_count: int = strawberry.field(
        resolver=node.total_count, description="How many datasets match in all pages."
    )
