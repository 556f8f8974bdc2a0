"""Catalog reads: namespaces, datasets, jobs, runs and their versions; search; soft delete and restore.

Every read takes lists of keys and answers in one query, so the API's DataLoaders cost one
statement per batch however many objects a response holds. The modules hold one concept each;
this package re-exports them (nodes.py: what datasets and jobs share, each function taking the
kind's shape, DATASETS or JOBS, first), so ``catalog.fetch_nodes_by_keys`` and the like work as one
API.
"""

from headwater.store.catalog.datasets import (
    ColumnInputRecord,
    fetch_column_inputs_by_datasets,
    fetch_fields_by_datasets,
    fetch_runs_writing_datasets,
)
from headwater.store.catalog.jobs import (
    fetch_child_jobs,
    page_jobs_by_last_run_state,
)
from headwater.store.catalog.namespaces import fetch_namespaces_by_names, list_namespaces
from headwater.store.catalog.nodes import (
    DATASETS,
    JOBS,
    NodeShape,
    count_nodes,
    count_nodes_by_namespaces,
    fetch_node,
    fetch_node_version,
    fetch_node_versions,
    fetch_nodes_by_keys,
    fetch_nodes_by_uuids,
    fetch_versions_by_uuids,
    mark_node_deleted,
    page_node_versions,
    page_nodes,
)
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
    NodeRecord,
    RunDatasetRecord,
    RunRecord,
    RunStateRecord,
    SearchHit,
    VersionRecord,
    page_key,
)
from headwater.store.catalog.rows import grouped, like_fragment
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
    "DATASETS",
    "JOBS",
    "ColumnInputRecord",
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
    "NodeRecord",
    "NodeShape",
    "RunDatasetRecord",
    "RunRecord",
    "RunStateRecord",
    "SearchHit",
    "SearchSort",
    "VersionRecord",
    "count_job_runs",
    "count_nodes",
    "count_nodes_by_namespaces",
    "count_search_nodes",
    "fetch_child_jobs",
    "fetch_column_inputs_by_datasets",
    "fetch_fields_by_datasets",
    "fetch_namespaces_by_names",
    "fetch_node",
    "fetch_node_version",
    "fetch_node_versions",
    "fetch_nodes_by_keys",
    "fetch_nodes_by_uuids",
    "fetch_run_datasets_by_runs",
    "fetch_run_states",
    "fetch_runs_by_jobs",
    "fetch_runs_by_uuids",
    "fetch_runs_writing_datasets",
    "fetch_versions_by_uuids",
    "grouped",
    "like_fragment",
    "list_namespaces",
    "mark_node_deleted",
    "page_job_runs",
    "page_jobs_by_last_run_state",
    "page_key",
    "page_node_versions",
    "page_nodes",
    "search_nodes",
]
