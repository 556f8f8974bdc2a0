"""Catalog reads: namespaces, datasets, jobs, runs and their versions; search; soft delete and restore.

Every read takes lists of keys and answers in one query, so the API's DataLoaders cost one
statement per batch however many objects a response holds. The modules hold one concept each;
this package re-exports them, so ``catalog.fetch_datasets_by_keys`` and the like work as one API.
"""

from headwater.store.catalog.datasets import (
    count_datasets,
    fetch_dataset_versions,
    fetch_dataset_versions_by_uuids,
    fetch_datasets_by_keys,
    fetch_datasets_by_uuids,
    fetch_fields_by_datasets,
    fetch_runs_writing_datasets,
    mark_dataset_deleted,
    page_datasets,
    set_dataset_deleted,
)
from headwater.store.catalog.jobs import (
    count_jobs,
    fetch_child_jobs,
    fetch_job_versions,
    fetch_job_versions_by_uuids,
    fetch_jobs_by_keys,
    fetch_jobs_by_uuids,
    mark_job_deleted,
    page_jobs,
    set_job_deleted,
)
from headwater.store.catalog.namespaces import fetch_namespaces_by_names, list_namespaces
from headwater.store.catalog.records import (
    DatasetRecord,
    DatasetVersionRecord,
    FieldRecord,
    JobRecord,
    JobVersionRecord,
    NamespaceNotFoundError,
    NamespaceRecord,
    NodeFilter,
    NodeKey,
    NodeKind,
    NodeOrder,
    RunDatasetRecord,
    RunRecord,
    RunStateRecord,
    SearchHit,
    page_key,
)
from headwater.store.catalog.rows import like_fragment
from headwater.store.catalog.runs import (
    count_job_runs,
    fetch_run_datasets_by_runs,
    fetch_run_states,
    fetch_runs_by_jobs,
    fetch_runs_by_uuids,
    page_job_runs,
)
from headwater.store.catalog.search import SearchSort, count_search_nodes, search_nodes

__all__ = [
    "DatasetRecord",
    "DatasetVersionRecord",
    "FieldRecord",
    "JobRecord",
    "JobVersionRecord",
    "NamespaceNotFoundError",
    "NamespaceRecord",
    "NodeFilter",
    "NodeKey",
    "NodeKind",
    "NodeOrder",
    "RunDatasetRecord",
    "RunRecord",
    "RunStateRecord",
    "SearchHit",
    "SearchSort",
    "count_datasets",
    "count_job_runs",
    "count_jobs",
    "count_search_nodes",
    "fetch_child_jobs",
    "fetch_dataset_versions",
    "fetch_dataset_versions_by_uuids",
    "fetch_datasets_by_keys",
    "fetch_datasets_by_uuids",
    "fetch_fields_by_datasets",
    "fetch_job_versions",
    "fetch_job_versions_by_uuids",
    "fetch_jobs_by_keys",
    "fetch_jobs_by_uuids",
    "fetch_namespaces_by_names",
    "fetch_run_datasets_by_runs",
    "fetch_run_states",
    "fetch_runs_by_jobs",
    "fetch_runs_by_uuids",
    "fetch_runs_writing_datasets",
    "like_fragment",
    "list_namespaces",
    "mark_dataset_deleted",
    "mark_job_deleted",
    "page_datasets",
    "page_job_runs",
    "page_jobs",
    "page_key",
    "search_nodes",
    "set_dataset_deleted",
    "set_job_deleted",
]
