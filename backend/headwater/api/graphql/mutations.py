"""The Mutation root: tags, manual lineage, soft delete and restore.

Each mutation commits one transaction that also appends its change_log row(s) and NOTIFYs, so
subscribers on every server see it. Expected failures come back as union members (NotFoundError,
InvalidInputError, ConflictError); with HEADWATER_API_KEY set, mutations need the same
``Authorization: Bearer <key>`` header as ingest.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import strawberry
from strawberry.permission import BasePermission

from headwater.api.graphql.context import Info
from headwater.api.graphql.governance import DatasetClassificationResult, set_classification
from headwater.api.graphql.types.common import Conflict, InvalidInput, NotFound, problem_from_error
from headwater.api.graphql.types.dataset import Dataset
from headwater.api.graphql.types.job import Job
from headwater.api.graphql.types.lineage import LineageEdge, ManualEdge
from headwater.errors import AppError
from headwater.lineage.graph import resolve_root
from headwater.store import catalog, manual_lineage, tags

DatasetResult = Annotated[Dataset | NotFound | InvalidInput, strawberry.union("DatasetResult")]
JobResult = Annotated[Job | NotFound | InvalidInput, strawberry.union("JobResult")]
ManualEdgeResult = Annotated[
    ManualEdge | NotFound | InvalidInput | Conflict, strawberry.union("ManualEdgeResult")
]


class CanWrite(BasePermission):
    """Mutations need a key with the `write` scope once any key exists (api/auth.py)."""

    message = "This operation writes: it needs an API key with the 'write' scope."
    error_extensions = {"code": "forbidden"}

    def has_permission(self, source: Any, info: Info, **kwargs: Any) -> bool:  # noqa: ARG002
        return "write" in info.context.scopes


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _mutation(description: str) -> Any:
    return strawberry.mutation(permission_classes=[CanWrite], description=description)


async def _node_tag(
    info: Info,
    node_type: type[Dataset] | type[Job],
    namespace: str,
    name: str,
    tag: str,
    *,
    tagged: bool,
    field: str | None = None,
    description: str | None,
) -> Any:
    try:
        async with info.context.pool.acquire() as conn:
            record = await tags.set_node_tag(
                node_type.shape,
                conn,
                namespace,
                name,
                tag,
                tagged=tagged,
                field=field,
                description=description,
                at=_now(),
            )
    except AppError as exc:
        return problem_from_error(exc)
    return node_type.from_record(record)


async def _manual_edge(
    info: Info, origin: str, destination: str, *, add: bool, description: str | None
) -> Any:
    try:
        async with info.context.pool.acquire() as conn:
            roots = [await resolve_root(conn, origin), await resolve_root(conn, destination)]
            refs = await manual_lineage.fetch_node_refs(conn, [r.node_id for r in roots])
            ends = (refs[roots[0].node_id], refs[roots[1].node_id])
            if add:
                edge = await manual_lineage.add_manual_edge(
                    conn, *ends, description=description, at=_now()
                )
            else:
                edge = await manual_lineage.remove_manual_edge(conn, *ends, at=_now())
    except AppError as exc:
        return problem_from_error(exc)
    return ManualEdge(
        origin=strawberry.ID(edge.origin),
        destination=strawberry.ID(edge.destination),
        edges=[
            LineageEdge(origin=strawberry.ID(o), destination=strawberry.ID(d), manual=add)
            for o, d in edge.edges
        ],
        changed=edge.changed,
        via_job=(edge.via.namespace, edge.via.name) if edge.via else None,
    )


async def _node_deleted(
    info: Info, node_type: type[Dataset] | type[Job], namespace: str, name: str, *, deleted: bool
) -> Any:
    try:
        async with info.context.pool.acquire() as conn:
            record = await catalog.mark_node_deleted(
                node_type.shape, conn, namespace, name, deleted=deleted, at=_now()
            )
    except AppError as exc:
        return problem_from_error(exc)
    return node_type.from_record(record)


FieldArg = Annotated[
    str | None, strawberry.argument(description="Tag this field of the dataset instead.")
]
TagDescription = Annotated[str | None, strawberry.argument(description="Sets the tag's description.")]


@strawberry.type
class Mutation:
    # A dataset's and a job's mutations are declared one by one, as strawberry needs each on the
    # root with its own arguments (a dataset's field) and result union; what they do is written once
    # for both kinds (_node_tag, _node_deleted).
    @_mutation("Tag a dataset or one of its fields; an unknown tag is created.")
    async def tag_dataset(
        self,
        info: Info,
        namespace: str,
        name: str,
        tag: str,
        field: FieldArg = None,
        description: TagDescription = None,
    ) -> DatasetResult:
        return await _node_tag(
            info, Dataset, namespace, name, tag, tagged=True, field=field, description=description
        )

    @_mutation("Remove a tag from a dataset or one of its fields.")
    async def untag_dataset(
        self, info: Info, namespace: str, name: str, tag: str, field: FieldArg = None
    ) -> DatasetResult:
        return await _node_tag(
            info, Dataset, namespace, name, tag, tagged=False, field=field, description=None
        )

    @_mutation("Tag a job; an unknown tag is created.")
    async def tag_job(
        self, info: Info, namespace: str, name: str, tag: str, description: TagDescription = None
    ) -> JobResult:
        return await _node_tag(info, Job, namespace, name, tag, tagged=True, description=description)

    @_mutation("Remove a tag from a job.")
    async def untag_job(self, info: Info, namespace: str, name: str, tag: str) -> JobResult:
        return await _node_tag(info, Job, namespace, name, tag, tagged=False, description=None)

    @_mutation(
        "Declare lineage by hand: dataset -> job, job -> dataset, or dataset -> dataset (through the "
        "destination's manual job). Ingest never closes a manual edge."
    )
    async def add_manual_edge(
        self,
        info: Info,
        origin: strawberry.ID,
        destination: strawberry.ID,
        description: str | None = None,
    ) -> ManualEdgeResult:
        return await _manual_edge(info, origin, destination, add=True, description=description)

    @_mutation("Remove an edge declared by hand (observed edges stay).")
    async def remove_manual_edge(
        self, info: Info, origin: strawberry.ID, destination: strawberry.ID
    ) -> ManualEdgeResult:
        return await _manual_edge(info, origin, destination, add=False, description=None)

    @_mutation("Soft-delete a dataset: hidden from listings and search, kept with its history.")
    async def delete_dataset(self, info: Info, namespace: str, name: str) -> DatasetResult:
        return await _node_deleted(info, Dataset, namespace, name, deleted=True)

    @_mutation("Restore a soft-deleted dataset.")
    async def restore_dataset(self, info: Info, namespace: str, name: str) -> DatasetResult:
        return await _node_deleted(info, Dataset, namespace, name, deleted=False)

    @_mutation("Soft-delete a job: hidden from listings and search, kept with its history.")
    async def delete_job(self, info: Info, namespace: str, name: str) -> JobResult:
        return await _node_deleted(info, Job, namespace, name, deleted=True)

    @_mutation("Restore a soft-deleted job.")
    async def restore_job(self, info: Info, namespace: str, name: str) -> JobResult:
        return await _node_deleted(info, Job, namespace, name, deleted=False)

    @_mutation(
        "Declare a dataset's classification (without field) or a field's, replacing what the API "
        "declared there before; no level and no tags removes it. Inheritance along column lineage "
        "and policy checks follow within moments (datasetClassification.appliedCursor)."
    )
    async def set_classification(
        self,
        info: Info,
        namespace: str,
        name: str,
        field: Annotated[
            str | None, strawberry.argument(description="Classify this field of the dataset instead.")
        ] = None,
        level: Annotated[
            str | None, strawberry.argument(description="One of the policy's levels.")
        ] = None,
        tags: Annotated[
            list[str] | None, strawberry.argument(description="Classifying tags, such as pii.")
        ] = None,
    ) -> DatasetClassificationResult:
        return await set_classification(info, namespace, name, field, level, tags or [])
