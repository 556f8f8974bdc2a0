"""The catalog's records: what its reads answer, and the filter of dataset and job listings."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from headwater.errors import NotFoundError

NodeKind = Literal["DATASET", "JOB"]
# How a page of datasets or jobs is ordered: by (namespace, name); by heat, hottest first and never
# computed last; or by updated_at, newest first. Ties go by (namespace, name).
NodeOrder = Literal["NAME", "HEAT", "UPDATED_AT"]


class NamespaceNotFoundError(NotFoundError):
    code = "namespace_not_found"

    def __init__(self, name: str) -> None:
        super().__init__(f"Namespace '{name}' not found.")


@dataclass(frozen=True)
class NamespaceRecord:
    name: str
    created_at: dt.datetime
    updated_at: dt.datetime


@dataclass(frozen=True)
class NodeRecord:
    """What datasets and jobs both have: identity, facets, current version, soft delete and heat."""

    node_uuid: uuid.UUID
    node_id: int
    namespace: str
    name: str
    description: str | None
    facets: dict[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime
    current_version_uuid: uuid.UUID | None
    deleted_at: dt.datetime | None
    heat: float | None


@dataclass(frozen=True)
class DatasetRecord(NodeRecord):
    source_name: str | None
    last_modified_at: dt.datetime | None

    @property
    def dataset_uuid(self) -> uuid.UUID:
        return self.node_uuid


@dataclass(frozen=True)
class FieldRecord:
    dataset_uuid: uuid.UUID
    name: str
    type: str | None
    description: str | None
    position: int


@dataclass(frozen=True)
class VersionRecord:
    """What versions of datasets and of jobs both have."""

    version_uuid: uuid.UUID
    node_uuid: uuid.UUID
    version: str
    created_by_run_uuid: uuid.UUID | None
    created_at: dt.datetime


@dataclass(frozen=True)
class DatasetVersionRecord(VersionRecord):
    schema_fields: list[dict[str, Any]] | None
    storage_version: str | None


@dataclass(frozen=True)
class JobRecord(NodeRecord):
    parent_job_uuid: uuid.UUID | None
    job_type: str | None
    latest_run_uuid: uuid.UUID | None
    manual: bool

    @property
    def job_uuid(self) -> uuid.UUID:
        return self.node_uuid


@dataclass(frozen=True)
class JobVersionRecord(VersionRecord):
    input_uuids: list[uuid.UUID]
    output_uuids: list[uuid.UUID]
    code_hash: str | None


@dataclass(frozen=True)
class RunRecord:
    run_uuid: uuid.UUID
    job_uuid: uuid.UUID
    job_version_uuid: uuid.UUID | None
    parent_run_uuid: uuid.UUID | None
    root_run_uuid: uuid.UUID | None
    state: str | None
    state_at: dt.datetime | None
    started_at: dt.datetime | None
    ended_at: dt.datetime | None
    nominal_start_time: dt.datetime | None
    nominal_end_time: dt.datetime | None
    error_message: str | None
    facets: dict[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime
    # The runId as the producer reported it, when it is not a UUID (run_uuid is derived from it).
    reported_run_id: str | None


@dataclass(frozen=True)
class RunStateRecord:
    run_uuid: uuid.UUID
    state: str
    event_time: dt.datetime


@dataclass(frozen=True)
class RunDatasetRecord:
    run_uuid: uuid.UUID
    dataset_uuid: uuid.UUID
    direction: Literal["INPUT", "OUTPUT"]
    dataset_version_uuid: uuid.UUID | None


@dataclass(frozen=True)
class SearchHit:
    kind: NodeKind
    namespace: str
    name: str
    updated_at: dt.datetime
    heat: float | None


@dataclass(frozen=True)
class NodeFilter:
    """Which datasets or jobs a listing shows: namespace, a name fragment (any case), deleted ones."""

    namespace: str | None = None
    name_contains: str | None = None
    include_deleted: bool = False


@dataclass(frozen=True)
class NodeKey:
    """Where a page of datasets or jobs ended: its last row's namespace and name and, for the HEAT
    and UPDATED_AT orders, that row's heat (None when never computed) or update time."""

    namespace: str
    name: str
    value: float | dt.datetime | None = None


def page_key(r: NodeRecord, order: NodeOrder) -> NodeKey:
    """The key of ``r`` in a listing in ``order``: the next page starts after it."""
    value = r.heat if order == "HEAT" else r.updated_at if order == "UPDATED_AT" else None
    return NodeKey(r.namespace, r.name, value)
