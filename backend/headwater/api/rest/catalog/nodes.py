"""Namespaces, datasets and jobs: lists, one by name, versions, tags and soft deletes.

Datasets and jobs answer the same requests under their own paths: ``node_operations`` makes a
kind's handlers, named for the kind (Litestar makes OpenAPI operation ids of the names), from one
definition; tagging a field is a dataset's own.
"""

import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

import asyncpg
from litestar import delete, get, post
from litestar.datastructures import State
from litestar.handlers import HTTPRouteHandler
from litestar.params import PathParameter

from headwater.api.rest.catalog.routing import PROBLEMS, Limit, Offset, name
from headwater.api.rest.catalog.shapes import (
    dataset_versions_json,
    datasets_json,
    job_versions_json,
    jobs_json,
    namespace_json,
)
from headwater.errors import NotFoundError
from headwater.store import catalog
from headwater.store import tags as tag_store
from headwater.store.catalog import NamespaceNotFoundError, NodeFilter, NodeShape

# What a kind's JSON is made of: its records (and one node with its versions) in Marquez's shape.
NodesJson = Callable[[asyncpg.Connection, list[Any]], Awaitable[list[dict[str, Any]]]]
VersionsJson = Callable[[asyncpg.Connection, Any, list[Any]], Awaitable[list[dict[str, Any]]]]


@dataclass(frozen=True)
class NodeKind:
    """What the operations of datasets and of jobs differ by."""

    one: str  # "dataset": the path parameter naming one, and the word of the operations' names
    many: str  # "datasets"
    shape: NodeShape[Any, Any]
    nodes_json: NodesJson
    versions_json: VersionsJson

    @property
    def list_path(self) -> str:
        return f"/api/v1/namespaces/{{namespace:str}}/{self.many}"

    @property
    def path(self) -> str:
        return f"{self.list_path}/{{{self.one}:str}}"


DATASETS = NodeKind("dataset", "datasets", catalog.DATASETS, datasets_json, dataset_versions_json)
JOBS = NodeKind("job", "jobs", catalog.JOBS, jobs_json, job_versions_json)
DATASET = DATASETS.path
JOB = JOBS.path


class VersionNotFoundError(NotFoundError):
    code = "version_not_found"

    def __init__(self, namespace: str, node: str, version: str) -> None:
        super().__init__(f"Version '{version}' of '{namespace}'.'{node}' not found.")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


async def _require_namespace(conn: asyncpg.Connection, namespace: str) -> None:
    if namespace not in await catalog.fetch_namespaces_by_names(conn, [namespace]):
        raise NamespaceNotFoundError(namespace)


async def page_json(
    state: State, kind: NodeKind, f: NodeFilter, limit: int, offset: int
) -> dict[str, Any]:
    """A page of datasets or jobs as Marquez lists them: ``{totalCount, datasets|jobs}``."""
    async with state.pool.acquire() as conn:
        if f.namespace is not None:
            await _require_namespace(conn, f.namespace)
        records = await catalog.page_nodes(kind.shape, conn, f, after=None, limit=limit, offset=offset)
        return {
            "totalCount": await catalog.count_nodes(kind.shape, conn, f),
            kind.many: await kind.nodes_json(conn, records),
        }


async def _tag(
    state: State,
    kind: NodeKind,
    namespace: str,
    node: str,
    tag: str,
    *,
    tagged: bool,
    field: str | None = None,
) -> dict[str, Any]:
    async with state.pool.acquire() as conn:
        record = await tag_store.set_node_tag(
            kind.shape,
            conn,
            name(namespace),
            node,
            name(tag),
            tagged=tagged,
            field=None if field is None else name(field),
            at=_now(),
        )
        return (await kind.nodes_json(conn, [record]))[0]


def _operation(
    route: type[get] | type[post] | type[delete],
    path: str,
    operation: str,
    summary: str,
    handler: Callable[..., Any],
) -> HTTPRouteHandler:
    """``handler`` as the route of ``operation``, its name."""
    handler.__name__ = handler.__qualname__ = operation
    return route(path, summary=summary, tags=["catalog"], responses=PROBLEMS, status_code=200)(handler)


def node_operations(kind: NodeKind) -> list[HTTPRouteHandler]:
    """The kind's operations: list, get, versions, one version, tag, untag and soft-delete.

    An unknown dataset or job answers 404 dataset_not_found or job_not_found; a dataset's alias
    finds it too.
    """

    # The dataset or job of a path: its {dataset} or {job} parameter.
    Node = Annotated[str, PathParameter(name=kind.one)]  # noqa: N806 (a type)

    async def list_nodes(
        state: State, namespace: str, limit: Limit = 100, offset: Offset = 0
    ) -> dict[str, Any]:
        """The namespace's datasets or jobs by name (not deleted), with the total count."""
        return await page_json(state, kind, NodeFilter(namespace=name(namespace)), limit, offset)

    async def get_node(state: State, namespace: str, node: Node) -> dict[str, Any]:
        """One dataset or job."""
        async with state.pool.acquire() as conn:
            record = await catalog.fetch_node(kind.shape, conn, name(namespace), name(node))
            return (await kind.nodes_json(conn, [record]))[0]

    async def list_versions(
        state: State,
        namespace: str,
        node: Node,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> dict[str, Any]:
        """Its versions, newest first: {totalCount, versions}."""
        async with state.pool.acquire() as conn:
            record = await catalog.fetch_node(kind.shape, conn, name(namespace), name(node))
            versions, total = await catalog.page_node_versions(
                kind.shape, conn, record.node_uuid, limit=limit, offset=offset
            )
            return {"totalCount": total, "versions": await kind.versions_json(conn, record, versions)}

    async def get_version(state: State, namespace: str, node: Node, version: str) -> dict[str, Any]:
        """One version, by its version string or its uuid; 404 version_not_found."""
        async with state.pool.acquire() as conn:
            record = await catalog.fetch_node(kind.shape, conn, name(namespace), name(node))
            found = await catalog.fetch_node_version(kind.shape, conn, record.node_uuid, name(version))
            if found is None:
                raise VersionNotFoundError(record.namespace, record.name, name(version))
            return (await kind.versions_json(conn, record, [found]))[0]

    async def tag_node(state: State, namespace: str, node: Node, tag: str) -> dict[str, Any]:
        """Adds the tag (created if new) and answers the dataset or job."""
        return await _tag(state, kind, namespace, name(node), tag, tagged=True)

    async def untag_node(state: State, namespace: str, node: Node, tag: str) -> dict[str, Any]:
        """Removes the tag and answers the dataset or job."""
        return await _tag(state, kind, namespace, name(node), tag, tagged=False)

    async def delete_node(state: State, namespace: str, node: Node) -> dict[str, Any]:
        """Hides it from lists, search and lineage until it is restored (GraphQL ``restoreDataset``
        or ``restoreJob``); answers it. Needs the write scope."""
        async with state.pool.acquire() as conn:
            record = await catalog.mark_node_deleted(
                kind.shape, conn, name(namespace), name(node), deleted=True, at=_now()
            )
            return (await kind.nodes_json(conn, [record]))[0]

    one, path, tag_path = kind.one, kind.path, f"{kind.path}/tags/{{tag:str}}"
    return [
        _operation(get, kind.list_path, f"list_{kind.many}", f"List {kind.many}", list_nodes),
        _operation(get, path, f"get_{one}", f"Get a {one}", get_node),
        _operation(
            get, f"{path}/versions", f"list_{one}_versions", f"List a {one}'s versions", list_versions
        ),
        _operation(
            get,
            f"{path}/versions/{{version:str}}",
            f"get_{one}_version",
            f"Get a {one} version",
            get_version,
        ),
        _operation(post, tag_path, f"tag_{one}", f"Tag a {one}", tag_node),
        _operation(delete, tag_path, f"untag_{one}", f"Untag a {one}", untag_node),
        _operation(delete, path, f"delete_{one}", f"Soft-delete a {one}", delete_node),
    ]


# -- namespaces ----------------------------------------------------------------------------------


@get("/api/v1/namespaces", summary="List namespaces", tags=["catalog"], responses=PROBLEMS)
async def list_namespaces(state: State) -> dict[str, Any]:
    """Every namespace, by name."""
    async with state.pool.acquire() as conn:
        return {"namespaces": [namespace_json(r) for r in await catalog.list_namespaces(conn)]}


@get(
    "/api/v1/namespaces/{namespace:str}", summary="Get a namespace", tags=["catalog"], responses=PROBLEMS
)
async def get_namespace(state: State, namespace: str) -> dict[str, Any]:
    """One namespace; 404 namespace_not_found."""
    ns = name(namespace)
    async with state.pool.acquire() as conn:
        found = await catalog.fetch_namespaces_by_names(conn, [ns])
    if ns not in found:
        raise NamespaceNotFoundError(ns)
    return namespace_json(found[ns])


# -- a dataset's fields ---------------------------------------------------------------------------


def field_tag_operations() -> list[HTTPRouteHandler]:
    """Tagging and untagging a field of a dataset's current schema (a dataset's own: jobs have no
    fields); 404 dataset_field_not_found for a field it does not have."""

    async def tag_field(
        state: State, namespace: str, dataset: str, field: str, tag: str
    ) -> dict[str, Any]:
        """Adds the tag to a field of the dataset's current schema; 404 dataset_field_not_found."""
        return await _tag(state, DATASETS, namespace, name(dataset), tag, tagged=True, field=field)

    async def untag_field(
        state: State, namespace: str, dataset: str, field: str, tag: str
    ) -> dict[str, Any]:
        """Removes the tag from the field and answers the dataset."""
        return await _tag(state, DATASETS, namespace, name(dataset), tag, tagged=False, field=field)

    path = f"{DATASET}/fields/{{field:str}}/tags/{{tag:str}}"
    return [
        _operation(post, path, "tag_dataset_field", "Tag a dataset field", tag_field),
        _operation(delete, path, "untag_dataset_field", "Untag a dataset field", untag_field),
    ]


node_handlers = [
    list_namespaces,
    get_namespace,
    *node_operations(DATASETS),
    *field_tag_operations(),
    *node_operations(JOBS),
]
