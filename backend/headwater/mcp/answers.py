"""What the MCP tools answer: typed models, so that every tool publishes its output schema.

Answers are sized for a model's context: graphs list node ids with their distance from the root and
edges as [origin, destination] pairs (not Marquez's node documents), lists come a page at a time
with the total and the next offset, and large facets are summarised.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class Page(BaseModel):
    total: int = Field(description="How many items match in all")
    offset: int
    next_offset: int | None = Field(description="The offset of the next page; null on the last page")


class SearchResult(BaseModel):
    kind: Literal["DATASET", "JOB", "COLUMN"]
    node_id: str = Field(description="dataset:NS:NAME, job:NS:NAME or datasetField:NS:DATASET:FIELD")
    namespace: str
    name: str = Field(description="The dataset's or job's name")
    field: str | None = Field(description="The column's name (kind COLUMN)")
    field_type: str | None
    heat: float | None = Field(description="Importance: 1.0 on average, null until computed")
    updated_at: str


class SearchAnswer(Page):
    results: list[SearchResult]


class RunSummary(BaseModel):
    run_id: str
    job: str = Field(description="The run's job, job:NS:NAME")
    state: str = Field(description="NEW, RUNNING, COMPLETED, FAILED or ABORTED")
    started_at: str | None
    ended_at: str | None
    duration_ms: int | None


class RunPage(Page):
    runs: list[RunSummary]


class DatasetAnswer(BaseModel):
    node_id: str
    dataset: dict[str, Any] = Field(
        description="The dataset as GET /api/v1/namespaces/{ns}/datasets/{name} shows it, with "
        "large facets summarised"
    )
    recent_runs: list[RunSummary] = Field(description="The latest runs that wrote it, newest first")


class JobAnswer(BaseModel):
    node_id: str
    job: dict[str, Any] = Field(
        description="The job as GET /api/v1/namespaces/{ns}/jobs/{name} shows it, with large "
        "facets summarised"
    )
    runs: RunPage = Field(description="Its runs, newest first")


class RunState(BaseModel):
    state: str
    at: str


class RunAnswer(BaseModel):
    run: dict[str, Any] = Field(
        description="The run as GET /api/v1/jobs/runs/{id} shows it, with large facets summarised"
    )
    job: str
    states: list[RunState] = Field(description="Every state it went through, oldest first")


class GraphNode(BaseModel):
    id: str
    type: Literal["DATASET", "JOB", "DATASET_FIELD"]
    distance: int = Field(description="Edges from the nearest root")


class LineageAnswer(BaseModel):
    root: str
    level: Literal["table", "column"]
    direction: Literal["UPSTREAM", "DOWNSTREAM", "BOTH"]
    depth: int
    as_of: str | None
    nodes: list[GraphNode] = Field(description="Nearest first")
    edges: list[tuple[str, str]] = Field(description="[origin, destination]: data flows that way")
    truncated: bool = Field(description="True when max_nodes cut the walk: nearer nodes are all in")
    note: str | None


class ImpactGroup(BaseModel):
    distance: int
    namespace: str
    datasets: int
    jobs: int
    columns: int


class ImpactedNode(BaseModel):
    id: str
    type: Literal["DATASET", "JOB", "DATASET_FIELD"]
    namespace: str
    distance: int
    path: list[str] = Field(description="One shortest chain of node ids from the root to this node")


class ImpactAnswer(Page):
    root: str
    level: Literal["table", "column"]
    depth: int
    groups: list[ImpactGroup] = Field(
        description="Every impacted node counted by distance and namespace"
    )
    impacted: list[ImpactedNode] = Field(description="This page of impacted nodes, nearest first")
    truncated: bool = Field(description="True when max_nodes cut the walk: there may be more")
    note: str | None


class Finding(BaseModel):
    kind: Literal["RUN_FAILED", "JOB_VERSION_CHANGED", "SCHEMA_CHANGED"]
    node_id: str
    distance: int = Field(description="Edges upstream of the dataset")
    at: str
    details: dict[str, Any] = Field(
        description="RUN_FAILED: runId and state; JOB_VERSION_CHANGED: versions and the edges added "
        "and removed; SCHEMA_CHANGED: fields added, removed and retyped"
    )


class RootCauseAnswer(Page):
    root: str
    since: str
    depth: int
    upstream_nodes: int = Field(description="Datasets and jobs examined, the root included")
    findings: list[Finding] = Field(description="Newest first")
    truncated: bool = Field(description="True when max_nodes cut the upstream walk")
    note: str | None


class ColumnEdge(BaseModel):
    output: str
    inputs: list[str]


class SqlLineageAnswer(BaseModel):
    dialect: str | None
    inputs: list[str]
    outputs: list[str]
    columns: list[ColumnEdge]
    errors: list[str] = Field(description="Statements that are not valid SQL, with line and column")
    warnings: list[str] = Field(
        description="What was read but not followed (a procedure call, dynamic SQL, a statement "
        "whose lineage cannot be derived), with line and column"
    )
