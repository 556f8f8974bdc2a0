"""Declaring classifications through the API, and reading a dataset's classification back."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from headwater.errors import InvalidRequestError
from headwater.governance.propagation import CLASSIFICATION_DECLARED, effective_labels
from headwater.lineage.node_ids import format_node_id
from headwater.store import governance as store
from headwater.store.changes import Change, insert_changes
from headwater.store.tags import DatasetFieldNotFoundError

if TYPE_CHECKING:
    import asyncpg

    from headwater.governance.policy import Policy

MAX_PAGE = 1000


@dataclass(frozen=True)
class DeclaredLabel:
    label: str
    sources: list[str]  # api, facet, tag
    on_dataset: bool  # declared on the dataset, so on each of its fields


@dataclass(frozen=True)
class InheritedLabel:
    label: str
    path: list[dict[str, Any]]


@dataclass(frozen=True)
class FieldClassification:
    field: str
    level: str | None
    labels: list[str]
    declared: list[DeclaredLabel]
    inherited: list[InheritedLabel]


@dataclass(frozen=True)
class DatasetClassification:
    namespace: str
    name: str
    level: str | None  # the highest level declared on the dataset itself
    labels: list[str]  # declared on the dataset itself
    fields: list[FieldClassification]
    applied_change_id: int  # the change log is applied up to here
    violations: list[store.ViolationRecord] = field(default_factory=list)


async def declare(
    conn: asyncpg.Connection,
    policy: Policy,
    namespace: str,
    name: str,
    field_name: str | None,
    *,
    level: str | None,
    tags: list[str],
    at: dt.datetime,
) -> None:
    """Replace what the API declares on a dataset (``field_name`` None) or one of its fields.

    Committed with a CLASSIFICATION_DECLARED change, which the governance worker applies (and
    subscribers see); an empty declaration (no level, no tags) removes the API's.
    """
    labels: set[str] = set()
    level_label = None
    if level is not None:
        level_label = policy.check_label(level)
        if level_label not in policy.levels:
            raise InvalidRequestError(
                f"'{level_label}' is a tag, not a level: levels are {', '.join(policy.levels)}."
            )
        labels.add(level_label)
    for tag in tags:
        checked = policy.check_label(tag)
        if checked in policy.levels:
            raise InvalidRequestError(f"'{checked}' is a level: set it as the level, not as a tag.")
        labels.add(checked)
    if field_name == "":
        raise InvalidRequestError(
            "A field name must not be empty; leave it out to classify the dataset."
        )
    async with conn.transaction():
        dataset = await store.fetch_dataset_identity(conn, namespace, name, lock=True)
        if field_name is not None and (
            dataset.dataset_uuid,
            field_name,
        ) not in await store.fetch_dataset_columns(conn, [dataset.dataset_uuid]):
            raise DatasetFieldNotFoundError(namespace, name, field_name)
        await store.replace_declarations(conn, "api", {(dataset.dataset_uuid, field_name or ""): labels})
        node = format_node_id("DATASET", dataset.namespace, dataset.name)
        details = {"field": field_name, "level": level_label, "tags": sorted(labels - {level_label})}
        await insert_changes(
            conn, [Change(CLASSIFICATION_DECLARED, node, dataset.namespace, at, details)]
        )


async def describe(
    conn: asyncpg.Connection, policy: Policy, namespace: str, name: str
) -> DatasetClassification:
    """A dataset's classification: declared on it, and per field declared and inherited (with paths)."""
    dataset = await store.fetch_dataset_identity(conn, namespace, name)
    node = format_node_id("DATASET", dataset.namespace, dataset.name)
    declarations = await store.fetch_dataset_declarations(conn, dataset.dataset_uuid)
    inherited = await store.fetch_dataset_inherited(conn, dataset.dataset_uuid)
    progress = await store.fetch_progress(conn)
    violations = await store.list_violations(
        conn, state="open", namespace=None, dataset=dataset.dataset_uuid, after=0, limit=MAX_PAGE
    )
    known = policy.labels
    on_dataset: dict[str, set[str]] = {}
    per_field: dict[str, store.FieldLabels] = {}
    for d in declarations:
        if d.label not in known:
            continue
        if d.field == "":
            on_dataset.setdefault(d.label, set()).add(d.source)
        else:
            per_field.setdefault(d.field, store.FieldLabels({}, {})).declared.setdefault(
                d.label, set()
            ).add(d.source)
    for field_name, label, path in inherited:
        per_field.setdefault(field_name, store.FieldLabels({}, {})).inherited[label] = path
    fields = []
    for field_name, labels in sorted(per_field.items()):
        declared = [
            DeclaredLabel(label, sorted(s), False) for label, s in sorted(labels.declared.items())
        ]
        declared += [
            DeclaredLabel(label, sorted(s), True)
            for label, s in sorted(on_dataset.items())
            if label not in labels.declared
        ]
        for label in on_dataset:
            labels.declared.setdefault(label, set())
        effective = effective_labels(policy, node, field_name, labels)
        fields.append(
            FieldClassification(
                field_name,
                policy.level_of(effective),
                sorted(effective),
                declared,
                [
                    InheritedLabel(label, path)
                    for label, path in sorted(labels.inherited.items())
                    if label in known
                ],
            )
        )
    return DatasetClassification(
        dataset.namespace,
        dataset.name,
        policy.level_of({label: [] for label in on_dataset}),
        sorted(on_dataset),
        fields,
        progress.last_change_id if progress else 0,
        violations,
    )


async def list_violations(
    conn: asyncpg.Connection,
    *,
    state: str = "open",
    namespace: str | None = None,
    after: int = 0,
    limit: int = 100,
) -> list[store.ViolationRecord]:
    """Violations newest first: ``state`` open, cleared or all; a page below the ``after`` id."""
    if state not in ("open", "cleared", "all"):
        raise InvalidRequestError(f"Invalid violation state '{state}': use open, cleared or all.")
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidRequestError(f"limit must be between 1 and {MAX_PAGE}, got {limit}.")
    if after < 0:
        raise InvalidRequestError(f"after must be a violation id (0 or more), got {after}.")
    return await store.list_violations(
        conn, state=state, namespace=namespace, dataset=None, after=after, limit=limit
    )
