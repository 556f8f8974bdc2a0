"""What datasets and jobs share in GraphQL: loading one, its owners, tags, current version and
versions, the run that created a version, and pages of them with their count.

Dataset and Job stay two types in the schema, each with its fields in its own order (a dataset's
source name and schema, a job's type, parent and children stand between the shared ones), and a
GraphQL type lists the fields of a base class before its own. So each declares every field where
its order puts it, and a shared field is ``strawberry.field(resolver=...)`` of a resolver here,
which finds the node's kind (its loaders, its version type) on its class, a ``CatalogNode``.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic, Self, TypeVar

import strawberry

from headwater.api.graphql.context import Info
from headwater.api.graphql.types.common import JSON, owner_names
from headwater.api.graphql.types.paging import (
    CatalogOrder,
    OrderBy,
    PageInfo,
    check_page_size,
    page_of_nodes,
)
from headwater.api.graphql.types.tag import Tag
from headwater.lineage.node_ids import format_node_id
from headwater.store import catalog
from headwater.store.catalog import NodeFilter, NodeRecord, NodeShape, VersionRecord

if TYPE_CHECKING:
    from headwater.api.graphql.loaders import NodeLoaders
    from headwater.api.graphql.types.run import Run

RunType = Annotated["Run", strawberry.lazy("headwater.api.graphql.types.run")]

# The most versions or runs one list field answers.
MAX_LIST = 100

NameContains = Annotated[str | None, strawberry.argument(description="A part of the name, any case.")]


class CatalogNode:
    """A Dataset or a Job, as the shared resolvers see it (not a GraphQL type itself).

    Each of the two names its kind where it is declared: ``class Dataset(CatalogNode,
    shape=catalog.DATASETS, version_type=DatasetVersion)``.
    """

    shape: ClassVar[NodeShape[Any, Any]]
    version_type: ClassVar[Any]  # DatasetVersion or JobVersion, made from the kind's version records
    record: NodeRecord

    def __init_subclass__(cls, *, shape: NodeShape[Any, Any], version_type: Any, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.shape = shape
        cls.version_type = version_type

    @classmethod
    def from_record(cls, r: Any) -> Self:
        """The node of its kind's record (each of the two has its own)."""
        raise NotImplementedError

    @classmethod
    def shared_values(cls, r: NodeRecord) -> dict[str, Any]:
        """The values of the fields every node has, for its type's constructor."""
        return {
            "id": strawberry.ID(format_node_id(cls.shape.kind, r.namespace, r.name)),
            "namespace": r.namespace,
            "name": r.name,
            "description": r.description,
            "facets": JSON(r.facets),
            "created_at": r.created_at,
            "updated_at": r.updated_at,
            "deleted_at": r.deleted_at,
            "heat": r.heat,
            "record": r,
        }

    @classmethod
    def loaders(cls, info: Info) -> NodeLoaders:
        loaders: NodeLoaders = info.context.loaders.of_kind(cls.shape.kind)
        return loaders

    @classmethod
    async def by_key(cls, info: Info, namespace: str, name: str) -> Self | None:
        """The node named (namespace, name), or by an alias of it; None if there is none."""
        record = await cls.loaders(info).by_key.load((namespace, name))
        return cls.from_record(record) if record else None

    @classmethod
    async def by_uuid(cls, info: Info, node: uuid.UUID) -> Self | None:
        record = await cls.loaders(info).by_uuid.load(node)
        return cls.from_record(record) if record else None

    @classmethod
    async def version_by_uuid(cls, info: Info, version: uuid.UUID | None) -> Any:
        """Its kind's version type of the version ``version``; None for none."""
        if version is None:
            return None
        record = await cls.loaders(info).version.load(version)
        return cls.version_type.from_record(record) if record else None


def named_node_field(node_type: type[CatalogNode], description: str) -> Any:
    """The field of the dataset, or the job, that a lineage node or a search hit names: null when
    what it names (its ``names_kind``) is of the other kind."""

    async def resolve(self: Any, info: Info) -> Any:
        if self.names_kind != node_type.shape.kind:
            return None
        return await node_type.by_key(info, self.namespace, self.name)

    return strawberry.field(resolver=resolve, graphql_type=node_type | None, description=description)


def owners(self: CatalogNode) -> list[str]:
    return owner_names(self.record.facets)


def deleted(self: CatalogNode) -> bool:
    return self.record.deleted_at is not None


async def tags(self: CatalogNode, info: Info) -> list[Tag]:
    return [Tag.from_record(t) for t in await self.loaders(info).tags.load(self.record.node_uuid)]


async def _current_version(self: CatalogNode, info: Info) -> Any:
    return await self.version_by_uuid(info, self.record.current_version_uuid)


async def _versions(self: CatalogNode, info: Info, limit: int = 20) -> Any:
    check_page_size(limit, MAX_LIST, "limit")
    rows = await self.loaders(info).versions.load((self.record.node_uuid, limit))
    return [self.version_type.from_record(r) for r in rows]


def current_version_field(version_type: type[CatalogVersion], description: str) -> Any:
    """The field of a node's current version, of its kind's version type."""
    return strawberry.field(
        resolver=_current_version, graphql_type=version_type | None, description=description
    )


def versions_field(version_type: type[CatalogVersion]) -> Any:
    """The field of a node's latest versions, of its kind's version type."""
    return strawberry.field(
        resolver=_versions,
        graphql_type=list[version_type],  # type: ignore[valid-type]
        description="Its versions, newest first (limit: default 20, at most 100).",
    )


class CatalogVersion:
    """A DatasetVersion or a JobVersion, as the shared resolvers see it."""

    record: VersionRecord

    @staticmethod
    def shared_values(r: VersionRecord) -> dict[str, Any]:
        """The values of the fields every version has, for its type's constructor."""
        return {
            "id": strawberry.ID(str(r.version_uuid)),
            "version": r.version,
            "created_at": r.created_at,
            "record": r,
        }


async def _created_by_run(self: CatalogVersion, info: Info) -> RunType | None:
    from headwater.api.graphql.types.run import Run

    if self.record.created_by_run_uuid is None:
        return None
    record = await info.context.loaders.run.load(self.record.created_by_run_uuid)
    return Run.from_record(record) if record else None


def created_by_run_field(description: str) -> Any:
    """The field of the run that first made a version."""
    return strawberry.field(resolver=_created_by_run, description=description)


N = TypeVar("N", bound=CatalogNode)


@strawberry.type
class NodeConnection(Generic[N]):
    """A page of datasets or jobs; each kind's connection adds its count, described for its kind."""

    nodes: list[N]
    page_info: PageInfo
    filter: strawberry.Private[NodeFilter]
    node_type: ClassVar[Any]

    @classmethod
    async def page(
        cls,
        info: Info,
        f: NodeFilter,
        first: int,
        after: str | None,
        order: CatalogOrder = CatalogOrder.NAME,
    ) -> Self:
        """One page in ``order`` after the cursor ``after`` (made for the same order)."""
        page, page_info = await page_of_nodes(info, cls.node_type.shape, f, first, after, order)
        return cls(nodes=[cls.node_type.from_record(r) for r in page], page_info=page_info, filter=f)


async def total_count(self: NodeConnection[Any], info: Info) -> int:
    async with info.context.pool.acquire() as conn:
        return await catalog.count_nodes(self.node_type.shape, conn, self.filter)


def nodes_field(connection: type[NodeConnection[Any]], kinds: str) -> Any:
    """The Query field of a page of datasets or of jobs (``kinds``: "Datasets" or "Jobs"), of the
    kind's connection type: its arguments and what they do are this one definition."""

    async def resolve(
        info: Info,
        namespace: str | None = None,
        name_contains: NameContains = None,
        include_deleted: bool = False,
        first: int = 50,
        after: str | None = None,
        order_by: OrderBy = CatalogOrder.NAME,
    ) -> Any:
        f = NodeFilter(namespace, name_contains, include_deleted)
        return await connection.page(info, f, first, after, order_by)

    description = (
        f"{kinds}, by namespace and name unless `orderBy` says otherwise (first: default 50, at "
        "most 500)."
    )
    return strawberry.field(resolver=resolve, graphql_type=connection, description=description)


def node_field(node_type: type[CatalogNode], description: str) -> Any:
    """The Query field of one dataset or one job by namespace and name (a dataset by an alias
    too): null when there is none."""

    async def resolve(info: Info, namespace: str, name: str) -> Any:
        return await node_type.by_key(info, namespace, name)

    return strawberry.field(resolver=resolve, graphql_type=node_type | None, description=description)
