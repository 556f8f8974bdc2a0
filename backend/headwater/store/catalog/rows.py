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


def dataset_from_row(r: Any) -> DatasetRecord:
    """A dataset from a catalog_nodes row."""
    return DatasetRecord(
        r["node_uuid"],
        r["node_id"],
        r["namespace"],
        r["name"],
        r["source_name"],
        r["description"],
        r["facets"] or {},
        r["created_at"],
        r["updated_at"],
        r["current_version_uuid"],
        r["current_version_at"],
        r["deleted_at"],
        r["heat"],
    )


def job_from_row(r: Any) -> JobRecord:
    """A job from a catalog_nodes row."""
    return JobRecord(
        r["node_uuid"],
        r["node_id"],
        r["namespace"],
        r["name"],
        r["parent_job_uuid"],
        r["job_type"],
        r["description"],
        r["facets"] or {},
        r["created_at"],
        r["updated_at"],
        r["current_version_uuid"],
        r["latest_run_uuid"],
        r["deleted_at"],
        r["manual"],
        r["heat"],
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


def dataset_version_from_row(r: Any) -> DatasetVersionRecord:
    """A dataset version from a catalog_versions row."""
    return DatasetVersionRecord(
        r["version_uuid"],
        r["node_uuid"],
        r["version"],
        r["schema_fields"],
        r["storage_version"],
        r["created_by_run_uuid"],
        r["created_at"],
    )


def job_version_from_row(r: Any) -> JobVersionRecord:
    """A job version from a catalog_versions row."""
    return JobVersionRecord(
        r["version_uuid"],
        r["node_uuid"],
        r["version"],
        list(r["input_uuids"]),
        list(r["output_uuids"]),
        r["code_hash"],
        r["created_by_run_uuid"],
        r["created_at"],
    )
