"""Governance in GraphQL: a dataset's classification, policy violations, the policy, and the
mutation declaring a classification. Query and Mutation take these fields by inheritance."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import strawberry

from headwater.api.graphql.context import Info
from headwater.api.graphql.types.common import JSON, InvalidInput, NotFound, problem_from_error
from headwater.api.graphql.types.paging import check_page_size
from headwater.api.parameters import violation_cursor
from headwater.errors import AppError
from headwater.governance import classifications
from headwater.governance.policy import Policy
from headwater.store.governance import ViolationRecord


@strawberry.type(description="A label declared on a field, or on its dataset (so on each field).")
class DeclaredLabel:
    label: str
    sources: list[str] = strawberry.field(
        description="Who declared it: api (REST/GraphQL), facet (a producer's tags), tag (the tag API)."
    )
    on_dataset: bool = strawberry.field(description="Declared on the dataset rather than the field.")


@strawberry.type(description="A label a field inherits through column lineage.")
class InheritedLabel:
    label: str
    path: JSON = strawberry.field(
        description="The hops it came by, the declaring field first: [{dataset, field, job}]."
    )


@strawberry.type(description="A field's classification.")
class FieldClassification:
    field: str
    level: str | None = strawberry.field(
        description="The highest level it carries, declared or inherited."
    )
    labels: list[str] = strawberry.field(description="Every label it carries, declared or inherited.")
    declared: list[DeclaredLabel]
    inherited: list[InheritedLabel]


@strawberry.type(description="A rule a field breaks (or broke), with the path its label came by.")
class PolicyViolation:
    id: strawberry.ID
    rule: str
    namespace: str
    name: str
    field: str
    label: str
    path: JSON
    opened_at: dt.datetime
    opened_cursor: str | None = strawberry.field(
        description="The POLICY_VIOLATION change announcing it."
    )
    cleared_at: dt.datetime | None
    cleared_cursor: str | None = strawberry.field(
        description="The POLICY_VIOLATION_CLEARED change announcing its end."
    )

    @classmethod
    def from_record(cls, v: ViolationRecord) -> PolicyViolation:
        return cls(
            id=strawberry.ID(str(v.violation_id)),
            rule=v.rule,
            namespace=v.namespace,
            name=v.name,
            field=v.field,
            label=v.label,
            path=JSON(v.path),
            opened_at=v.opened_at,
            opened_cursor=None if v.opened_change_id is None else str(v.opened_change_id),
            cleared_at=v.cleared_at,
            cleared_cursor=None if v.cleared_change_id is None else str(v.cleared_change_id),
        )


@strawberry.type(description="A dataset's classification: its own, each field's, and open violations.")
class DatasetClassification:
    namespace: str
    name: str
    level: str | None = strawberry.field(description="The highest level declared on the dataset itself.")
    labels: list[str] = strawberry.field(description="Labels declared on the dataset itself.")
    fields: list[FieldClassification]
    violations: list[PolicyViolation]
    applied_cursor: str = strawberry.field(
        description="Governance has applied the change log up to this cursor."
    )

    @classmethod
    def from_record(cls, c: classifications.DatasetClassification) -> DatasetClassification:
        return cls(
            namespace=c.namespace,
            name=c.name,
            level=c.level,
            labels=c.labels,
            fields=[
                FieldClassification(
                    field=f.field,
                    level=f.level,
                    labels=f.labels,
                    declared=[
                        DeclaredLabel(label=d.label, sources=d.sources, on_dataset=d.on_dataset)
                        for d in f.declared
                    ],
                    inherited=[InheritedLabel(label=i.label, path=JSON(i.path)) for i in f.inherited],
                )
                for f in c.fields
            ],
            violations=[PolicyViolation.from_record(v) for v in c.violations],
            applied_cursor=str(c.applied_change_id),
        )


@strawberry.type(description="The policy in force (HEADWATER_POLICIES).")
class GovernancePolicy:
    levels: list[str] = strawberry.field(description="Classification levels, lowest first.")
    tags: list[str] = strawberry.field(description="Free classifying tags, such as pii.")
    masking_aggregations: list[str] = strawberry.field(
        description="Aggregations that remove identity: a column computed by one inherits nothing."
    )
    masking_indirect: bool = strawberry.field(
        description="Whether INDIRECT edges (filters, joins, grouping keys) carry nothing."
    )
    rules: JSON


DatasetClassificationResult = Annotated[
    DatasetClassification | NotFound | InvalidInput, strawberry.union("DatasetClassificationResult")
]


def _policy(info: Info) -> Policy:
    policy: Policy = info.context.state.policy
    return policy


@strawberry.type
class GovernanceQuery:
    @strawberry.field(description="A dataset's classification, declared and inherited; null if unknown.")
    async def dataset_classification(
        self, info: Info, namespace: str, name: str
    ) -> DatasetClassification | None:
        async with info.context.pool.acquire() as conn:
            try:
                found = await classifications.describe(conn, _policy(info), namespace, name)
            except AppError as exc:
                if exc.status == 404:
                    return None
                raise
        return DatasetClassification.from_record(found)

    @strawberry.field(description="Policy violations, newest first.")
    async def policy_violations(
        self,
        info: Info,
        state: Annotated[
            str, strawberry.argument(description="open (default), cleared or all")
        ] = "open",
        namespace: str | None = None,
        first: int = 100,
        after: Annotated[
            str | None, strawberry.argument(description="The last id of the previous page.")
        ] = None,
    ) -> list[PolicyViolation]:
        check_page_size(first, classifications.MAX_PAGE)
        after_id = violation_cursor(after)
        async with info.context.pool.acquire() as conn:
            found = await classifications.list_violations(
                conn, state=state, namespace=namespace, after=after_id, limit=first
            )
        return [PolicyViolation.from_record(v) for v in found]

    @strawberry.field(description="The governance policy in force.")
    def governance_policy(self, info: Info) -> GovernancePolicy:
        described: dict[str, Any] = _policy(info).describe()
        return GovernancePolicy(
            levels=described["levels"],
            tags=described["tags"],
            masking_aggregations=described["masking"]["aggregations"],
            masking_indirect=described["masking"]["indirect"],
            rules=JSON(described["rules"]),
        )


async def set_classification(
    info: Info, namespace: str, name: str, field: str | None, level: str | None, tags: list[str]
) -> Any:
    """The mutation's work, apart so that Mutation can declare it with its write permission."""
    try:
        async with info.context.pool.acquire() as conn:
            await classifications.declare(
                conn,
                _policy(info),
                namespace,
                name,
                field,
                level=level,
                tags=tags,
                at=dt.datetime.now(dt.UTC),
            )
            found = await classifications.describe(conn, _policy(info), namespace, name)
    except AppError as exc:
        return problem_from_error(exc)
    return DatasetClassification.from_record(found)
