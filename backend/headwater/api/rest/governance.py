"""Governance over REST: declare classifications, read them with their paths, list violations.

Datasets are named by ``namespace`` and ``name`` query parameters (namespaces are URIs, which
path segments would need encoded twice). Writing needs the ``write`` scope (api/auth.py).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import msgspec
from litestar import get, put
from litestar.datastructures import State
from litestar.params import Parameter, QueryParameter

from headwater.api.parameters import refuse_nul_fields, violation_cursor
from headwater.api.rest.catalog.routing import BODY_PROBLEMS, PROBLEMS
from headwater.governance import classifications
from headwater.governance.classifications import DatasetClassification
from headwater.store.governance import ViolationRecord

TAGS = ["governance"]


class ClassificationBody(msgspec.Struct, forbid_unknown_fields=True):
    """What PUT /api/v1/governance/classifications carries: the API's declaration, replacing its
    earlier one on the same dataset or field (no level and no tags removes it)."""

    namespace: str
    name: str
    field: str | None = None
    level: str | None = None
    tags: list[str] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        refuse_nul_fields(self)


def violation_json(v: ViolationRecord) -> dict[str, Any]:
    return {
        "id": str(v.violation_id),
        "rule": v.rule,
        "namespace": v.namespace,
        "name": v.name,
        "field": v.field,
        "label": v.label,
        "path": v.path,
        "openedAt": v.opened_at.isoformat(),
        "openedCursor": None if v.opened_change_id is None else str(v.opened_change_id),
        "clearedAt": None if v.cleared_at is None else v.cleared_at.isoformat(),
        "clearedCursor": None if v.cleared_change_id is None else str(v.cleared_change_id),
    }


def classification_json(c: DatasetClassification) -> dict[str, Any]:
    return {
        "namespace": c.namespace,
        "name": c.name,
        "level": c.level,
        "labels": c.labels,
        "fields": [
            {
                "field": f.field,
                "level": f.level,
                "labels": f.labels,
                "declared": [
                    {"label": d.label, "sources": d.sources, "onDataset": d.on_dataset}
                    for d in f.declared
                ],
                "inherited": [{"label": i.label, "path": i.path} for i in f.inherited],
            }
            for f in c.fields
        ],
        "violations": [violation_json(v) for v in c.violations],
        "appliedCursor": str(c.applied_change_id),
    }


@get(
    "/api/v1/governance/classifications",
    summary="A dataset's classification: declared, inherited (with paths), open violations",
    tags=TAGS,
    responses=PROBLEMS,
)
async def get_classification(
    state: State,
    namespace: Annotated[str, Parameter(description="The dataset's namespace")],
    name: Annotated[str, Parameter(description="The dataset's name")],
) -> dict[str, Any]:
    """``appliedCursor`` is the change-log cursor governance has applied up to."""
    async with state.pool.acquire() as conn:
        return classification_json(await classifications.describe(conn, state.policy, namespace, name))


@put(
    "/api/v1/governance/classifications",
    summary="Declare a dataset's or a field's classification",
    tags=TAGS,
    responses=BODY_PROBLEMS,
    status_code=200,
)
async def put_classification(state: State, data: ClassificationBody) -> dict[str, Any]:
    """Replaces the API's declaration; propagation follows within moments (see the README)."""
    async with state.pool.acquire() as conn:
        await classifications.declare(
            conn,
            state.policy,
            data.namespace,
            data.name,
            data.field,
            level=data.level,
            tags=data.tags,
            at=dt.datetime.now(dt.UTC),
        )
        return classification_json(
            await classifications.describe(conn, state.policy, data.namespace, data.name)
        )


@get(
    "/api/v1/governance/violations",
    summary="Policy violations, newest first",
    tags=TAGS,
    responses=PROBLEMS,
)
async def get_violations(
    state: State,
    violation_state: Annotated[
        str, QueryParameter(name="state", description="open (default), cleared or all")
    ] = "open",
    namespace: Annotated[str | None, Parameter(description="Only datasets of this namespace")] = None,
    after: Annotated[
        str | None, Parameter(description="The last violation id of the previous page")
    ] = None,
    limit: Annotated[int, Parameter(description="Page size (default 100, at most 1000)")] = 100,
) -> dict[str, Any]:
    after_id = violation_cursor(after)
    async with state.pool.acquire() as conn:
        found = await classifications.list_violations(
            conn, state=violation_state, namespace=namespace, after=after_id, limit=limit
        )
    return {
        "violations": [violation_json(v) for v in found],
        "next": str(found[-1].violation_id) if len(found) == limit else None,
    }


@get("/api/v1/governance/policy", summary="The policy in force", tags=TAGS, responses=PROBLEMS)
async def get_policy(state: State) -> dict[str, Any]:
    """Levels (lowest first), classifying tags, what masks, and the rules."""
    return dict(state.policy.describe())


governance_handlers = [get_classification, put_classification, get_violations, get_policy]
