"""Per-operation DataLoaders: every child object of a response is loaded in one query per kind.

A loader collects the keys asked for in one tick of the event loop and answers them with one
store call, so a lineage graph of N nodes with their fields and tags costs the same handful of
statements as a graph of one.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Hashable
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from strawberry.dataloader import DataLoader

from headwater.store import catalog, job_code, manual_lineage, tags

if TYPE_CHECKING:
    import asyncpg

K = TypeVar("K", bound=Hashable)
A = TypeVar("A", bound=Hashable)
V = TypeVar("V")


def _loader(
    pool: asyncpg.Pool,
    fetch: Callable[[asyncpg.Connection, list[K]], Awaitable[dict[K, V]]],
    missing: Callable[[], Any] = lambda: None,
) -> DataLoader[K, Any]:
    """One query per batch of keys; a key the store does not know gets ``missing()``."""

    async def load(keys: list[K]) -> list[Any]:
        async with pool.acquire() as conn:
            found = await fetch(conn, list(dict.fromkeys(keys)))
        return [found.get(k, missing()) for k in keys]

    return DataLoader(load)


def _loader_with_arg(
    pool: asyncpg.Pool,
    fetch: Callable[[asyncpg.Connection, list[K], A], Awaitable[dict[K, V]]],
    missing: Callable[[], Any] = list,
) -> DataLoader[tuple[K, A], Any]:
    """Keys are (key, argument), e.g. (dataset, limit): one query per distinct argument in a batch."""

    async def load(keys: list[tuple[K, A]]) -> list[Any]:
        by_arg: dict[A, list[K]] = defaultdict(list)
        for key, arg in dict.fromkeys(keys):
            by_arg[arg].append(key)
        found: dict[tuple[K, A], Any] = {}
        async with pool.acquire() as conn:
            for arg, group in by_arg.items():
                for key, value in (await fetch(conn, group, arg)).items():
                    found[(key, arg)] = value
        return [found.get(k, missing()) for k in keys]

    return DataLoader(load)


async def _manual_edges(
    conn: asyncpg.Connection, jobs: list[tuple[str, str]], as_of: dt.datetime | None
) -> dict[tuple[str, str], list[manual_lineage.ManualEdgeRecord]]:
    return await manual_lineage.fetch_manual_edges_of_jobs(conn, jobs, as_of)


class NodeLoaders:
    """The loaders of one kind of catalog node, datasets or jobs: what the two share."""

    def __init__(self, pool: asyncpg.Pool, shape: catalog.NodeShape[Any, Any]) -> None:
        self.by_key = _loader(pool, partial(catalog.fetch_nodes_by_keys, shape))
        self.by_uuid = _loader(pool, partial(catalog.fetch_nodes_by_uuids, shape))
        self.versions = _loader_with_arg(pool, partial(catalog.fetch_node_versions, shape))
        self.version = _loader(pool, partial(catalog.fetch_versions_by_uuids, shape))
        self.tags = _loader(pool, partial(tags.fetch_node_tags, shape), list)
        # namespace -> how many it holds, counted for every namespace of the operation at once
        self.counts_by_namespace = _loader(pool, partial(catalog.count_nodes_by_namespaces, shape), int)


class Loaders:
    """The DataLoaders of one GraphQL operation (their caches live as long as it does)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.namespace = _loader(pool, catalog.fetch_namespaces_by_names)
        self.datasets = NodeLoaders(pool, catalog.DATASETS)
        self.fields = _loader(pool, catalog.fetch_fields_by_datasets, list)
        self.dataset_writers = _loader_with_arg(pool, catalog.fetch_runs_writing_datasets)
        self.field_tags = _loader(pool, tags.fetch_dataset_field_tags, dict)
        self.jobs = NodeLoaders(pool, catalog.JOBS)
        self.child_jobs = _loader(pool, catalog.fetch_child_jobs, list)
        self.job_runs = _loader_with_arg(pool, catalog.fetch_runs_by_jobs)
        self.run_code = _loader(pool, job_code.fetch_code_of_runs)
        self.run = _loader(pool, catalog.fetch_runs_by_uuids)
        self.run_states = _loader(pool, catalog.fetch_run_states, list)
        self.run_datasets = _loader(pool, catalog.fetch_run_datasets_by_runs, list)
        self.manual_edges = _loader_with_arg(pool, _manual_edges)

    def of_kind(self, kind: catalog.NodeKind) -> NodeLoaders:
        return self.datasets if kind == "DATASET" else self.jobs

    async def datasets_by_uuids(self, uuids: list[uuid.UUID]) -> list[catalog.DatasetRecord]:
        """Datasets in the order of ``uuids``, skipping any that no longer exist."""
        found = await self.datasets.by_uuid.load_many(uuids)
        return [d for d in found if d is not None]
