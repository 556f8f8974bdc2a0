"""Search hits: datasets and jobs found by name; `find` adds columns and a tag filter."""

from __future__ import annotations

import datetime as dt
from enum import Enum

import strawberry

from headwater.api.graphql.types.common import HEAT_DESCRIPTION, NodeType
from headwater.api.graphql.types.dataset import Dataset
from headwater.api.graphql.types.job import Job
from headwater.api.graphql.types.node import named_node_field
from headwater.lineage.node_ids import format_field_id, format_node_id
from headwater.store.catalog import SearchHit as HitRecord
from headwater.store.questions import FoundNode as FoundRecord


@strawberry.type(description="A dataset or job whose name matched.")
class SearchHit:
    node_id: strawberry.ID
    type: NodeType
    namespace: str
    name: str
    updated_at: dt.datetime
    heat: float | None = strawberry.field(description=HEAT_DESCRIPTION)

    dataset = named_node_field(Dataset, "The dataset, when the hit is one.")
    job = named_node_field(Job, "The job, when the hit is one.")

    @property
    def names_kind(self) -> str:
        return self.type.value

    @classmethod
    def from_record(cls, r: HitRecord) -> SearchHit:
        return cls(
            node_id=strawberry.ID(format_node_id(r.kind, r.namespace, r.name)),
            type=NodeType(r.kind),
            namespace=r.namespace,
            name=r.name,
            updated_at=r.updated_at,
            heat=r.heat,
        )


@strawberry.type(
    description="Hits in the order asked; by default the best matches first: exact names, then "
    "prefixes, then shorter names."
)
class SearchResult:
    total_count: int
    hits: list[SearchHit]


@strawberry.enum(description="What `find` looks for.")
class FindKind(Enum):
    DATASET = "DATASET"
    JOB = "JOB"
    COLUMN = "COLUMN"


@strawberry.type(
    description="A dataset, job or column (a field of a dataset's schema) whose name matched."
)
class FoundNode:
    node_id: strawberry.ID = strawberry.field(
        description="dataset:NAMESPACE:NAME, job:NAMESPACE:NAME or datasetField:NAMESPACE:DATASET:FIELD."
    )
    kind: FindKind
    namespace: str
    name: str = strawberry.field(description="The dataset's or job's name (a column's dataset).")
    field: str | None = strawberry.field(description="The column's name, when the hit is one.")
    field_type: str | None = strawberry.field(description="The column's type, when known.")
    updated_at: dt.datetime
    heat: float | None = strawberry.field(description="The dataset's or job's heat (see Dataset.heat).")

    dataset = named_node_field(Dataset, "The dataset, when the hit is one or a column of one.")
    job = named_node_field(Job, "The job, when the hit is one.")

    @property
    def names_kind(self) -> str:
        """A column hit names its dataset."""
        return "JOB" if self.kind is FindKind.JOB else "DATASET"

    @classmethod
    def from_record(cls, r: FoundRecord) -> FoundNode:
        if r.field is not None:
            node_id = format_field_id(r.namespace, r.name, r.field)
        else:
            node_id = format_node_id(r.kind, r.namespace, r.name)  # type: ignore[arg-type]
        return cls(
            node_id=strawberry.ID(node_id),
            kind=FindKind(r.kind),
            namespace=r.namespace,
            name=r.name,
            field=r.field,
            field_type=r.field_type,
            updated_at=r.updated_at,
            heat=r.heat,
        )


@strawberry.type(description="A page of datasets, jobs and columns found, hottest first.")
class FindResult:
    total_count: int = strawberry.field(description="How many match in all pages.")
    hits: list[FoundNode]
