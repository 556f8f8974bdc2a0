"""Search hits: datasets and jobs found by name."""

from __future__ import annotations

import datetime as dt

import strawberry

from headwater.api.graphql.context import Info
from headwater.api.graphql.types.common import HEAT_DESCRIPTION, NodeType
from headwater.api.graphql.types.dataset import Dataset
from headwater.api.graphql.types.job import Job
from headwater.lineage.node_ids import format_node_id
from headwater.store.catalog import SearchHit as HitRecord


@strawberry.type(description="A dataset or job whose name matched.")
class SearchHit:
    node_id: strawberry.ID
    type: NodeType
    namespace: str
    name: str
    updated_at: dt.datetime
    heat: float | None = strawberry.field(description=HEAT_DESCRIPTION)

    @strawberry.field(description="The dataset, when the hit is one.")
    async def dataset(self, info: Info) -> Dataset | None:
        if self.type is not NodeType.DATASET:
            return None
        record = await info.context.loaders.dataset.load((self.namespace, self.name))
        return Dataset.from_record(record) if record else None

    @strawberry.field(description="The job, when the hit is one.")
    async def job(self, info: Info) -> Job | None:
        if self.type is not NodeType.JOB:
            return None
        record = await info.context.loaders.job.load((self.namespace, self.name))
        return Job.from_record(record) if record else None

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
