"""Database rows to catalog records, and the parameters of a listing filter."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

from headwater.store.catalog.records import (
    DatasetRecord,
    DatasetVersionRecord,
    FieldRecord,
    JobRecord,
    JobVersionRecord,
    NodeFilter,
    NodeKey,
    NodeOrder,
    RunDatasetRecord,
    RunRecord,
    RunStateRecord,
)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def grouped(
    keys: Iterable[K], rows: Iterable[Any], column: str, record: Callable[[Any], V]
) -> dict[K, list[V]]:
    """The record of each row under the row's ``column``, in row order: what a read by many keys
    answers, every key asked for present (with [] when no row has it)."""
    out: dict[K, list[V]] = {k: [] for k in keys}
    for r in rows:
        out[r[column]].append(record(r))
    return out


def like_fragment(text: str) -> str:
    """``text`` with LIKE's wildcards escaped, to match it literally inside '%...%'."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def filter_args(f: NodeFilter) -> tuple[str | None, str | None, bool]:
    """The filter's parameters of the page_nodes* and count_nodes queries ($2 to $4)."""
    fragment = like_fragment(f.name_contains) if f.name_contains else None
    return f.namespace, fragment, f.include_deleted


def page_args(
    f: NodeFilter, order: NodeOrder, after: NodeKey | None, limit: int, offset: int
) -> list[Any]:
    """The parameters of a page_nodes* query after the kind: the filter, the keyset's namespace and
    name, the limit and offset, and for the HEAT and UPDATED_AT orders the keyset's sort value last."""
    args: list[Any] = [
        *filter_args(f),
        after.namespace if after else None,
        after.name if after else None,
        limit,
        offset,
    ]
    if order != "NAME":
        args.append(after.value if after else None)
    return args


def _node_fields(r: Any) -> dict[str, Any]:
    """A NodeRecord's fields from a catalog_nodes row."""
    return {
        "node_uuid": r["node_uuid"],
        "node_id": r["node_id"],
        "namespace": r["namespace"],
        "name": r["name"],
        "description": r["description"],
        "facets": r["facets"] or {},
        "created_at": r["created_at"],
        "updated_at": r["updated_at"],
        "current_version_uuid": r["current_version_uuid"],
        "deleted_at": r["deleted_at"],
        "heat": r["heat"],
    }


def dataset_from_row(r: Any) -> DatasetRecord:
    """A dataset from a catalog_nodes row: last modified when its current version was written."""
    return DatasetRecord(
        **_node_fields(r), source_name=r["source_name"], last_modified_at=r["current_version_at"]
    )


def job_from_row(r: Any) -> JobRecord:
    """A job from a catalog_nodes row."""
    return JobRecord(
        **_node_fields(r),
        parent_job_uuid=r["parent_job_uuid"],
        job_type=r["job_type"],
        latest_run_uuid=r["latest_run_uuid"],
        manual=r["manual"],
    )


def field_from_row(r: Any) -> FieldRecord:
    return FieldRecord(r["dataset_uuid"], r["name"], r["type"], r["description"], r["position"])


def run_from_row(r: Any) -> RunRecord:
    return RunRecord(
        r["run_uuid"],
        r["job_uuid"],
        r["job_version_uuid"],
        r["parent_run_uuid"],
        r["root_run_uuid"],
        r["current_state"],
        r["current_state_at"],
        r["started_at"],
        r["ended_at"],
        r["nominal_start_time"],
        r["nominal_end_time"],
        r["error_message"],
        r["facets"] or {},
        r["created_at"],
        r["updated_at"],
        r["reported_run_id"],
    )


def run_state_from_row(r: Any) -> RunStateRecord:
    return RunStateRecord(r["run_uuid"], r["state"], r["event_time"])


def run_dataset_from_row(r: Any) -> RunDatasetRecord:
    return RunDatasetRecord(r["run_uuid"], r["dataset_uuid"], r["direction"], r["dataset_version_uuid"])


def _version_fields(r: Any) -> dict[str, Any]:
    """A VersionRecord's fields from a catalog_versions row."""
    return {
        "version_uuid": r["version_uuid"],
        "node_uuid": r["node_uuid"],
        "version": r["version"],
        "created_by_run_uuid": r["created_by_run_uuid"],
        "created_at": r["created_at"],
    }


def dataset_version_from_row(r: Any) -> DatasetVersionRecord:
    """A dataset version from a catalog_versions row."""
    return DatasetVersionRecord(
        **_version_fields(r), schema_fields=r["schema_fields"], storage_version=r["storage_version"]
    )


def job_version_from_row(r: Any) -> JobVersionRecord:
    """A job version from a catalog_versions row."""
    return JobVersionRecord(
        **_version_fields(r),
        input_uuids=list(r["input_uuids"]),
        output_uuids=list(r["output_uuids"]),
        code_hash=r["code_hash"],
    )
