"""Lineage changes as the subscription delivers them, and the filter that selects them."""

from __future__ import annotations

import datetime as dt

import strawberry

from headwater.api.graphql.types.common import JSON, NodeType
from headwater.feed.log import ChangeRecord


@strawberry.type(description="One entry of the change log.")
class LineageChange:
    cursor: str = strawberry.field(
        description="Pass as `after` to resume right after this change, on any server of the cluster."
    )
    kind: str = strawberry.field(
        description="DATASET_CREATED, JOB_CREATED, SCHEMA_CHANGED, EDGES_ADDED, COLUMN_EDGES_ADDED, "
        "JOB_VERSION_CHANGED, "
        "RUN_STATE_CHANGED, TAG_CHANGED, MANUAL_EDGE_ADDED, MANUAL_EDGE_REMOVED, DATASET_DELETED, "
        "DATASET_RESTORED, JOB_DELETED, JOB_RESTORED, CLASSIFICATION_DECLARED, CLASSIFICATION_CHANGED, "
        "POLICY_VIOLATION, POLICY_VIOLATION_CLEARED ..."
    )
    node_id: strawberry.ID = strawberry.field(description="The dataset or job the change is about.")
    node_type: NodeType
    namespace: str | None
    at: dt.datetime = strawberry.field(
        description="When it happened (the event time for ingested events)."
    )
    recorded_at: dt.datetime | None = strawberry.field(description="When the server recorded it.")
    details: JSON = strawberry.field(description="What changed; the shape depends on the kind.")
    # The change as the feed read it: subscribers asking the same of it share one rendering.
    record: strawberry.Private[ChangeRecord | None] = None

    @classmethod
    def from_record(cls, r: ChangeRecord) -> LineageChange:
        node_type = NodeType.JOB if r.node_id.startswith("job:") else NodeType.DATASET
        return cls(
            cursor=str(r.change_id),
            kind=r.kind,
            node_id=strawberry.ID(r.node_id),
            node_type=node_type,
            namespace=r.namespace,
            at=r.at,
            recorded_at=r.recorded_at,
            details=JSON(r.details),
            record=r,
        )


@strawberry.input(description="The lineage around a node: every node within `depth` jobs of it.")
class LineageScopeInput:
    node_id: strawberry.ID
    depth: int = strawberry.field(
        default=5,
        description="Jobs away from the node (default 5, at most the server's lineage depth limit).",
    )


@strawberry.input(
    description="Every criterion given must match; within a list, any entry matches. A change "
    "touches a node when it is about it or adds or removes an edge at it."
)
class LineageChangeFilter:
    kinds: list[str] | None = None
    namespaces: list[str] | None = None
    node_ids: list[strawberry.ID] | None = strawberry.field(
        default=None, description="Changes touching any of these nodes."
    )
    upstream_of: LineageScopeInput | None = strawberry.field(
        default=None, description="Changes touching the node's upstream lineage, followed as it changes."
    )
    downstream_of: LineageScopeInput | None = strawberry.field(
        default=None,
        description="Changes touching the node's downstream lineage, followed as it changes.",
    )


@strawberry.type(
    description="Changes that may explain a wrong dataset, newest first: runs that ended FAIL or "
    "ABORT, job versions that replaced an earlier one, and schema changes."
)
class SuspectChanges:
    total_count: int = strawberry.field(description="How many such changes there are in all.")
    changes: list[LineageChange]
