"""Dataset writes of one event: identities and aliases, current schema, versions written."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING, Any

from headwater.ingest.normalize import AliasRule, DatasetDef, NormalizedEvent, identities_for
from headwater.lineage.node_ids import format_node_id
from headwater.store import datasets as dataset_store
from headwater.store.changes import Change

if TYPE_CHECKING:
    from headwater.ingest.rounds import Rounds
    from headwater.store.datasets import DatasetRow

# The identities of each dataset an event names (``dataset_identity_lists``): per dataset, its own
# identity first, then its aliases, as (namespace, name, kind).
IdentityLists = list[list[tuple[str, str, str]]]


class DatasetWriter:
    """Writes the datasets of one event; ``row_of`` then maps any identity to the stored dataset.

    ``aliases`` maps the identities recorded so far (before the batch, and by the events written
    before this one) to the canonical identity of their dataset; the writer adds those it records.
    """

    def __init__(
        self,
        db: Rounds,
        event: NormalizedEvent,
        identity_lists: IdentityLists,
        aliases: dict[tuple[str, str], tuple[str, str]],
        changes: list[Change],
        written_facets: dataset_store.WrittenFacets,
    ) -> None:
        self.db = db
        self.n = event
        # the identities of each dataset the event names (dataset_identity_lists)
        self.identity_lists = identity_lists
        self.aliases = aliases
        self.changes = changes
        # what the transaction's upserts left of its datasets' facets: facets held are not sent
        self.written_facets = written_facets
        # reported or aliased identity -> stored dataset
        self.datasets: dict[tuple[str, str], DatasetRow] = {}
        # the state of each stored dataset as the event found it (by uuid)
        self.states: dict[uuid.UUID, dataset_store.DatasetState] = {}
        # the fields_hash of the schema the event reports for a stored dataset (by uuid)
        self.schema_hashes: dict[uuid.UUID, int] = {}

    def _all_defs(self) -> list[DatasetDef]:
        return self.n.inputs + self.n.outputs

    async def write_datasets(self) -> None:
        n = self.n
        defs = self._all_defs()
        identity_lists = self.identity_lists
        known = self.aliases
        upserts, targets = plan_dataset_upserts(defs, identity_lists, known)
        if not upserts:
            return
        sources = {(d.source_name, d.source_uri) for d in defs if d.source_name}
        # Learned from what is sent: a facet left out is held already, as the event reports it.
        sent = [self.written_facets.unsent(u) for u in upserts.values()]
        upserted = await self.db(
            dataset_store.upsert_datasets,
            dataset_store.DatasetUpserts(
                sent, n.event_time, sorted(sources, key=lambda s: (s[0], s[1] or ""))
            ),
        )
        for u, result in zip(sent, upserted, strict=True):
            self.written_facets.learn(u, n.event_time, result.facets_at, result)
        rows = [u.row for u in upserted]
        self.states = {u.row.dataset_uuid: u.state for u in upserted}
        by_key = {(r.namespace, r.name): r for r in rows}
        self.schema_hashes = {
            by_key[key].dataset_uuid: u.fields_hash
            for key, u in upserts.items()
            if u.fields_hash is not None
        }
        aliases: dict[tuple[str, str], tuple[str, str, uuid.UUID, str]] = {}
        recorded: dict[tuple[str, str], tuple[str, str]] = {}
        for key, identities in zip(targets, identity_lists, strict=True):
            row = by_key[key]
            self.datasets[key] = row
            for namespace, name, kind in identities:
                self.datasets[(namespace, name)] = row
                # A recorded alias keeps its dataset; of two for one identity, the first is kept.
                if (namespace, name) not in known and (namespace, name) not in aliases:
                    aliases[(namespace, name)] = (namespace, name, row.dataset_uuid, kind)
                    recorded[(namespace, name)] = (row.namespace, row.name)
        if aliases:
            await self.db(dataset_store.insert_dataset_aliases, list(aliases.values()))
            known.update(recorded)
        self.changes += [
            Change(
                "DATASET_CREATED",
                format_node_id("DATASET", r.namespace, r.name),
                r.namespace,
                n.event_time,
            )
            for r in rows
            if r.created
        ]

    def by_uuid(self) -> dict[uuid.UUID, DatasetRow]:
        """The event's stored datasets by uuid."""
        return {r.dataset_uuid: r for r in self.datasets.values()}

    def row_of(self, d: DatasetDef) -> DatasetRow:
        return self.datasets[(d.namespace, d.name)]

    async def write_schemas_and_versions(self) -> dict[uuid.UUID, uuid.UUID | None]:
        """Update current fields, create the versions written; returns dataset uuid -> version uuid."""
        n = self.n
        defs = self._all_defs()
        if not defs:
            return {}
        # The schema an event reports for a dataset: an output's wins over an input's.
        schemas: dict[uuid.UUID, list[dict[str, Any]]] = {}
        written: set[uuid.UUID] = set()
        for is_write, d in [(False, d) for d in n.inputs] + [(True, d) for d in n.outputs]:
            fields = _schema_of(d)
            if fields is not None:
                dataset_uuid = self.row_of(d).dataset_uuid
                schemas[dataset_uuid] = fields
                if is_write:
                    written.add(dataset_uuid)
        states = {u: self.states[u] for u in (self.row_of(d).dataset_uuid for d in defs)}
        await self._write_schemas(schemas, written, states)
        versions: dict[uuid.UUID, uuid.UUID | None] = {
            uuid_: state.current_version_uuid for uuid_, state in states.items()
        }
        if n.kind == "RUN":
            versions.update(await self._write_versions(schemas))
        return versions

    async def _write_schemas(
        self,
        schemas: dict[uuid.UUID, list[dict[str, Any]]],
        written: set[uuid.UUID],
        states: dict[uuid.UUID, dataset_store.DatasetState],
    ) -> None:
        """Replace current schemas, logging what changed.

        A reader often reports only the columns it read, without types (Trino), so a schema seen on
        an input sets the current schema only while the dataset has none.
        """
        n = self.n
        # Datasets this event created, with the hash of its schema already on their row (see
        # plan_dataset_upserts): their fields are written, and there is no earlier schema to compare.
        created = {u for u, row in self.by_uuid().items() if row.created}
        replace = {
            dataset_uuid: fields
            for dataset_uuid, fields in schemas.items()
            if dataset_uuid in created
            or _replaces_schema(
                states[dataset_uuid],
                fields,
                self.schema_hashes[dataset_uuid],
                dataset_uuid in written,
                n.event_time,
            )
        }
        # The stored fields of the schemas that change, where only their hash was read: to say what
        # changed.
        unread = [u for u in replace if states[u].fields is None and u not in created]
        if unread:
            states = {**states, **await self.db(dataset_store.fetch_dataset_states, unread)}
        for dataset_uuid, fields in replace.items():
            if dataset_uuid in created:
                continue
            state = states[dataset_uuid]
            assert state.fields is not None
            diff = _schema_diff(state.fields, fields)
            if diff is not None and (state.fields or state.fields_at is not None):
                row = self.by_uuid()[dataset_uuid]
                node = format_node_id("DATASET", row.namespace, row.name)
                self.changes.append(Change("SCHEMA_CHANGED", node, row.namespace, n.event_time, diff))
        if replace:
            await self.db(dataset_store.replace_dataset_fields, (replace, n.event_time))

    async def _write_versions(
        self, schemas: dict[uuid.UUID, list[dict[str, Any]]]
    ) -> dict[uuid.UUID, uuid.UUID]:
        """The version each output was written at, made current if this is its latest write."""
        n = self.n
        writes: dict[uuid.UUID, tuple[uuid.UUID, list[dict[str, Any]] | None, str | None]] = {}
        for d in n.outputs:
            dataset_uuid = self.row_of(d).dataset_uuid
            writes[dataset_uuid] = (dataset_uuid, schemas.get(dataset_uuid), d.storage_version)
        if not writes:
            return {}
        created = await self.db(
            dataset_store.upsert_dataset_versions,
            dataset_store.VersionWrites(list(writes.values()), n.run_id, n.event_time),
        )
        return {k: v[0] for k, v in created.items()}


def dataset_identity_lists(n: NormalizedEvent, rules: list[AliasRule]) -> IdentityLists:
    """The identities of each dataset an event names: its inputs and outputs, then the datasets named
    only by column lineage (inputs of a field), which are created as plain references."""
    defs = n.inputs + n.outputs
    refs = {
        (e.input_namespace, e.input_name)
        for d in n.outputs
        for e in [*d.column_edges, *d.derived_column_edges]
    } - {(d.namespace, d.name) for d in defs}
    identity_lists = [d.identities for d in defs]
    identity_lists += [identities_for(ref[0], ref[1], [], rules) for ref in sorted(refs)]
    return identity_lists


def plan_dataset_upserts(
    defs: list[DatasetDef],
    identity_lists: IdentityLists,
    known: dict[tuple[str, str], tuple[str, str]],
) -> tuple[dict[tuple[str, str], dataset_store.DatasetUpsert], list[tuple[str, str]]]:
    """One upsert per stored dataset, and the stored identity each identity list resolves to.

    ``identity_lists`` starts with the identities of ``defs`` (same order), then those of datasets
    only referenced by column lineage. A list resolves to the dataset that already owns any of its
    identities, else to its first (canonical) identity. Defs resolving to one dataset are merged.
    """
    targets = []
    for identities in identity_lists:
        owner = next((known[(ns, nm)] for ns, nm, _ in identities if (ns, nm) in known), None)
        targets.append(owner or (identities[0][0], identities[0][1]))
    upserts: dict[tuple[str, str], dataset_store.DatasetUpsert] = {}
    for key, d in zip(targets, defs, strict=False):
        previous = upserts.get(key)
        upserts[key] = dataset_store.DatasetUpsert(
            namespace=key[0],
            name=key[1],
            source_name=d.source_name or (previous.source_name if previous else None),
            description=d.description or (previous.description if previous else None),
            facets={**previous.facets, **d.facets} if previous else d.facets,
            deleted_facets=sorted({*d.deleted_facets, *(previous.deleted_facets if previous else [])}),
            # As in write_schemas_and_versions: the last def reporting one wins (outputs come last).
            fields_hash=(
                dataset_store.fields_hash(_schema_of(d) or [])
                if d.fields is not None
                else (previous.fields_hash if previous else None)
            ),
        )
    for key in targets[len(defs) :]:
        upserts.setdefault(key, dataset_store.DatasetUpsert(key[0], key[1], None, None, {}, []))
    return upserts, targets


def _replaces_schema(
    state: dataset_store.DatasetState,
    fields: list[dict[str, Any]],
    digest: int,
    is_write: bool,
    at: dt.datetime,
) -> bool:
    """Whether a schema an event reports at ``at`` (``digest``: its fields_hash) becomes a stored
    dataset's current one."""
    if state.fields_at is not None and state.fields_at > at:
        return False  # a later event already set the schema
    if not is_write and state.has_fields:
        return False  # a read does not redefine a known schema
    # The schema as stored: nothing to rewrite (fields_at is the last change).
    return state.fields_at is None or not state.has_same_fields(fields, digest)


def _schema_of(d: DatasetDef) -> list[dict[str, Any]] | None:
    """The schema a dataset def reports, as stored; None when it reports none."""
    if d.fields is None:
        return None
    return [{"name": x.name, "type": x.type, "description": x.description} for x in d.fields]


def _schema_diff(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Fields added, removed and retyped between two schemas; None when nothing changed."""
    before = {f["name"]: f.get("type") for f in old}
    after = {f["name"]: f.get("type") for f in new}
    added = [{"name": k, "type": after[k]} for k in after if k not in before]
    removed = [{"name": k, "type": before[k]} for k in before if k not in after]
    retyped = [
        {"name": k, "previousType": before[k], "type": after[k]}
        for k in after
        if k in before and before[k] != after[k]
    ]
    if not (added or removed or retyped):
        return None
    return {"added": added, "removed": removed, "retyped": retyped}
