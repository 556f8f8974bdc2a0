"""The lineage graph: nodes (datasets and jobs) and the edges between them."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import cached_property
from typing import cast

import strawberry

from headwater.api.graphql.context import Info
from headwater.api.graphql.types.chunks import in_chunks
from headwater.api.graphql.types.common import NodeType
from headwater.api.graphql.types.dataset import Dataset
from headwater.api.graphql.types.job import Job
from headwater.api.graphql.types.node import named_node_field
from headwater.lineage.graph import LineageGraph as Graph
from headwater.lineage.graph import LineageNode as GraphNode


@dataclass(frozen=True)
class _Answer:
    graph: Graph
    as_of: dt.datetime | None

    @cached_property
    def jobs(self) -> dict[str, tuple[str, str]]:
        """(namespace, name) of the answer's jobs, by node id: built once, asked by every node."""
        return {n.id: (n.namespace, n.name) for n in self.graph.nodes if n.type == "JOB"}

    def job_keys(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        jobs = self.jobs
        return list(dict.fromkeys(jobs[end] for pair in pairs for end in pair if end in jobs))

    async def manual(self, info: Info, pairs: list[tuple[str, str]]) -> set[tuple[str, str]]:
        """The manual ones among the pairs, from one batched load of the jobs' manual edges."""
        keys = self.job_keys(pairs)
        found = await info.context.loaders.manual_edges.load_many([(k, self.as_of) for k in keys])
        return {record.pair for records in found for record in records}

    async def edges(self, info: Info, pairs: list[tuple[str, str]]) -> list[LineageEdge]:
        """Edges with their manual flag."""
        manual = await self.manual(info, pairs)
        return [_edge(pair, manual) for pair in pairs]


def _edge(pair: tuple[str, str], manual: set[tuple[str, str]]) -> LineageEdge:
    return LineageEdge(
        origin=strawberry.ID(pair[0]), destination=strawberry.ID(pair[1]), manual=pair in manual
    )


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

    @property
    def names_kind(self) -> str:
        return self.type.value

    dataset = named_node_field(Dataset, "The dataset, when the node is one.")
    job = named_node_field(Job, "The job, when the node is one.")

    @strawberry.field
    async def in_edges(self, info: Info) -> list[LineageEdge]:
        return await self.answer.edges(info, self.in_pairs)

    @strawberry.field
    async def out_edges(self, info: Info) -> list[LineageEdge]:
        return await self.answer.edges(info, self.out_pairs)


@strawberry.type(description="Datasets and jobs around the roots, with the edges among them.")
class LineageGraph:
    truncated: bool = strawberry.field(description="The walk stopped at the server's node limit.")
    answer: strawberry.Private[_Answer]

    @strawberry.field
    def nodes(self) -> list[LineageNode]:
        return cast("list[LineageNode]", in_chunks(self.answer.graph.nodes, self._node))

    @strawberry.field
    async def edges(self, info: Info) -> list[LineageEdge]:
        pairs = self.answer.graph.edges
        manual = await self.answer.manual(info, pairs)
        return cast("list[LineageEdge]", in_chunks(pairs, lambda pair: _edge(pair, manual)))

    def _node(self, n: GraphNode) -> LineageNode:
        return LineageNode(
            id=strawberry.ID(n.id),
            type=NodeType(n.type),
            namespace=n.namespace,
            name=n.name,
            hops=n.hops,
            answer=self.answer,
            in_pairs=n.in_edges,
            out_pairs=n.out_edges,
        )

    @classmethod
    def from_graph(cls, graph: Graph, as_of: dt.datetime | None) -> LineageGraph:
        return cls(truncated=graph.truncated, answer=_Answer(graph, as_of))


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
        return await Job.by_key(info, *self.via_job)
