"""The lineage graph: nodes (datasets and jobs) and the edges between them."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import strawberry

from headwater.api.graphql.context import Info
from headwater.api.graphql.types.common import NodeType
from headwater.api.graphql.types.dataset import Dataset
from headwater.api.graphql.types.job import Job
from headwater.lineage.graph import LineageGraph as Graph


@dataclass(frozen=True)
class _Answer:
    graph: Graph
    as_of: dt.datetime | None

    def job_keys(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        jobs = {n.id: (n.namespace, n.name) for n in self.graph.nodes if n.type == "JOB"}
        return list(dict.fromkeys(jobs[end] for pair in pairs for end in pair if end in jobs))

    async def edges(self, info: Info, pairs: list[tuple[str, str]]) -> list[LineageEdge]:
        """Edges with their manual flag, from one batched load of the jobs' manual edges."""
        keys = self.job_keys(pairs)
        found = await info.context.loaders.manual_edges.load_many([(k, self.as_of) for k in keys])
        manual = {record.pair for records in found for record in records}
        return [
            LineageEdge(origin=strawberry.ID(o), destination=strawberry.ID(d), manual=(o, d) in manual)
            for o, d in pairs
        ]


@strawberry.type(description="A directed edge: a dataset read by a job, or a job writing a dataset.")
class LineageEdge:
    origin: strawberry.ID
    destination: strawberry.ID
    manual: bool = strawberry.field(description="Declared by hand rather than reported by a run.")


@strawberry.type(description="A dataset or job in a lineage graph.")
class LineageNode:
    id: strawberry.ID
    type: NodeType
    namespace: str
    name: str
    hops: int = strawberry.field(description="Edges between it and the nearest root (0 for a root).")
    answer: strawberry.Private[_Answer]
    in_pairs: strawberry.Private[list[tuple[str, str]]]
    out_pairs: strawberry.Private[list[tuple[str, str]]]

    @strawberry.field(description="The dataset, when the node is one.")
    async def dataset(self, info: Info) -> Dataset | None:
        if self.type is not NodeType.DATASET:
            return None
        record = await info.context.loaders.dataset.load((self.namespace, self.name))
        return Dataset.from_record(record) if record else None

    @strawberry.field(description="The job, when the node is one.")
    async def job(self, info: Info) -> Job | None:
        if self.type is not NodeType.JOB:
            return None
        record = await info.context.loaders.job.load((self.namespace, self.name))
        return Job.from_record(record) if record else None

    @strawberry.field
    async def in_edges(self, info: Info) -> list[LineageEdge]:
        return await self.answer.edges(info, self.in_pairs)

    @strawberry.field
    async def out_edges(self, info: Info) -> list[LineageEdge]:
        return await self.answer.edges(info, self.out_pairs)


@strawberry.type(description="Datasets and jobs around the roots, with the edges among them.")
class LineageGraph:
    nodes: list[LineageNode]
    truncated: bool = strawberry.field(description="The walk stopped at the server's node limit.")
    answer: strawberry.Private[_Answer]

    @strawberry.field
    async def edges(self, info: Info) -> list[LineageEdge]:
        return await self.answer.edges(info, self.answer.graph.edges)

    @classmethod
    def from_graph(cls, graph: Graph, as_of: dt.datetime | None) -> LineageGraph:
        answer = _Answer(graph, as_of)
        nodes = [
            LineageNode(
                id=strawberry.ID(n.id),
                type=NodeType(n.type),
                namespace=n.namespace,
                name=n.name,
                hops=n.hops,
                answer=answer,
                in_pairs=list(n.in_edges),
                out_pairs=list(n.out_edges),
            )
            for n in graph.nodes
        ]
        return cls(nodes=nodes, truncated=graph.truncated, answer=answer)


@strawberry.type(description="A declared edge and the graph edges that carry it.")
class ManualEdge:
    origin: strawberry.ID
    destination: strawberry.ID
    edges: list[LineageEdge] = strawberry.field(
        description="Dataset -> dataset goes through the destination's manual job: two edges."
    )
    changed: bool = strawberry.field(description="False when the request changed nothing.")
    via_job: strawberry.Private[tuple[str, str] | None]

    @strawberry.field(description="The manual job a dataset -> dataset edge goes through.")
    async def via(self, info: Info) -> Job | None:
        if self.via_job is None:
            return None
        record = await info.context.loaders.job.load(self.via_job)
        return Job.from_record(record) if record else None
