"""Column lineage: dataset fields and the fields they are computed from."""

from __future__ import annotations

import uuid

import strawberry

from headwater.lineage.columns import ColumnGraph, ColumnNode, InputField, Transformation


@strawberry.type(description="How an output field is computed from an input field.")
class ColumnTransformation:
    type: str | None = strawberry.field(description="DIRECT or INDIRECT.")
    subtype: str | None = strawberry.field(
        description="IDENTITY, TRANSFORMATION, AGGREGATION, FILTER, JOIN ..."
    )
    description: str | None
    masking: bool | None

    @classmethod
    def from_record(cls, t: Transformation) -> ColumnTransformation:
        return cls(type=t.type, subtype=t.subtype, description=t.description, masking=t.masking)


@strawberry.type(description="A field another field is computed from.")
class ColumnInputField:
    id: strawberry.ID
    namespace: str
    dataset: str
    field: str
    transformations: list[ColumnTransformation]

    @classmethod
    def from_record(cls, f: InputField) -> ColumnInputField:
        return cls(
            id=strawberry.ID(f.id),
            namespace=f.namespace,
            dataset=f.dataset,
            field=f.field,
            transformations=[ColumnTransformation.from_record(t) for t in f.transformations],
        )


@strawberry.type(description="A directed edge from an input field to a field computed from it.")
class ColumnLineageEdge:
    origin: strawberry.ID
    destination: strawberry.ID


@strawberry.type(description="A dataset field in a column lineage graph.")
class ColumnLineageNode:
    id: strawberry.ID = strawberry.field(description="datasetField:NAMESPACE:DATASET:FIELD")
    namespace: str
    dataset: str
    field: str
    type: str | None = strawberry.field(description="The field's type in the dataset's schema.")
    level: int = strawberry.field(description="Column hops from the nearest root (0 for a root).")
    dataset_version: uuid.UUID | None
    input_fields: list[ColumnInputField]

    @classmethod
    def from_record(cls, n: ColumnNode) -> ColumnLineageNode:
        return cls(
            id=strawberry.ID(n.id),
            namespace=n.namespace,
            dataset=n.dataset,
            field=n.field,
            type=n.field_type,
            level=n.level,
            dataset_version=n.dataset_version,
            input_fields=[ColumnInputField.from_record(f) for f in n.input_fields],
        )


@strawberry.type(description="Fields around the roots and the edges among them.")
class ColumnLineageGraph:
    nodes: list[ColumnLineageNode]
    edges: list[ColumnLineageEdge]
    truncated: bool = strawberry.field(description="The walk stopped at the server's node limit.")

    @classmethod
    def from_graph(cls, graph: ColumnGraph) -> ColumnLineageGraph:
        return cls(
            nodes=[ColumnLineageNode.from_record(n) for n in graph.nodes],
            edges=[
                ColumnLineageEdge(origin=strawberry.ID(o), destination=strawberry.ID(d))
                for o, d in graph.edges
            ],
            truncated=graph.truncated,
        )
