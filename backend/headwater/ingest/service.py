"""ingest_events: validated events -> raw_events + model rows + change log, in one transaction.

Retries are harmless: an event whose content hash is already stored changes nothing. Events of a
run may come in any order; every write below is a merge that respects eventTime.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from headwater.errors import FieldError
from headwater.ingest.normalize import (
    TERMINAL_STATES,
    AliasRule,
    ColumnEdgeDef,
    DatasetDef,
    NormalizedEvent,
    identities_for,
    normalize_event,
)
from headwater.ingest.sql_facets import derive_from_sql
from headwater.store import changes as change_store
from headwater.store import datasets as dataset_store
from headwater.store import edges as edge_store
from headwater.store import events as event_store
from headwater.store import jobs as job_store
from headwater.store import runs as run_store
from headwater.store.changes import Change

if TYPE_CHECKING:
    import asyncpg

    from headwater.ingest.validate import ValidEvent
    from headwater.store.datasets import DatasetRow

_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class IngestResult:
    """What happened to one event."""

    status: Literal["created", "duplicate"]
    kind: str
    run_id: str | None
    warnings: list[FieldError] = field(default_factory=list)


def dataset_node_id(namespace: str, name: str) -> str:
    return f"dataset:{namespace}:{name}"


def job_node_id(namespace: str, name: str) -> str:
    return f"job:{namespace}:{name}"


async def ingest_events(
    conn: asyncpg.Connection, events: list[ValidEvent], alias_rules: list[AliasRule] | None = None
) -> list[IngestResult]:
    """Store events in one transaction (all or none); duplicates are reported, not stored twice."""
    async with conn.transaction():
        return [await _ingest_one(conn, event, alias_rules or []) for event in events]


async def _ingest_one(
    conn: asyncpg.Connection, event: ValidEvent, rules: list[AliasRule]
) -> IngestResult:
    run = getattr(event.model, "run", None)
    run_id = str(run.run_id) if run else None
    raw_id = await event_store.insert_raw_event(conn, event, _encoder.encode(event.raw).decode())
    if raw_id is None:
        return IngestResult("duplicate", event.kind, run_id)
    n = normalize_event(event, rules)
    for error in derive_from_sql(n, rules):
        n.warnings.append(FieldError("$.job.facets.sql.query", f"SQL lineage not derived: {error}"))
    writer = _EventWriter(conn, n, rules)
    await writer.write()
    return IngestResult("created", event.kind, run_id, n.warnings)


class _EventWriter:
    """Writes one normalized event; collects the changes it makes for the change log."""

    def __init__(self, conn: asyncpg.Connection, event: NormalizedEvent, rules: list[AliasRule]) -> None:
        self.conn = conn
        self.n = event
        self.rules = rules
        self.changes: list[Change] = []
        # reported or aliased identity -> stored dataset
        self.datasets: dict[tuple[str, str], DatasetRow] = {}

    async def write(self) -> None:
        n = self.n
        await self._write_datasets()
        versions = await self._write_schemas_and_versions()
        if n.kind in ("RUN", "JOB"):
            await self._write_job_and_run(versions)
        await change_store.insert_changes(self.conn, self.changes)

    # -- datasets ---------------------------------------------------------------------------

    def _all_defs(self) -> list[DatasetDef]:
        return self.n.inputs + self.n.outputs

    async def _write_datasets(self) -> None:
        n = self.n
        defs = self._all_defs()
        # Datasets named only by column lineage (inputs of a field) are created as plain references.
        refs = {
            (e.input_namespace, e.input_name)
            for d in n.outputs
            for e in [*d.column_edges, *d.derived_column_edges]
        } - {(d.namespace, d.name) for d in defs}
        identity_lists = [d.identities for d in defs]
        identity_lists += [identities_for(ref[0], ref[1], [], self.rules) for ref in sorted(refs)]
        known = await dataset_store.find_dataset_aliases(
            self.conn, [(i[0], i[1]) for ids in identity_lists for i in ids]
        )
        upserts, targets = plan_dataset_upserts(defs, identity_lists, known)
        if n.job_namespace:
            await dataset_store.upsert_namespaces(
                self.conn, sorted({k[0] for k in upserts} | {n.job_namespace})
            )
        if not upserts:
            return
        if n.job_namespace is None:
            await dataset_store.upsert_namespaces(self.conn, sorted({k[0] for k in upserts}))
        sources = {(d.source_name, d.source_uri) for d in defs if d.source_name}
        await dataset_store.upsert_sources(self.conn, sorted(sources, key=lambda s: (s[0], s[1] or "")))
        rows = await dataset_store.upsert_datasets(self.conn, list(upserts.values()), n.event_time)
        by_key = {(r.namespace, r.name): r for r in rows}
        aliases: dict[tuple[str, str], tuple[str, str, uuid.UUID, str]] = {}
        for key, identities in zip(targets, identity_lists, strict=True):
            row = by_key[key]
            self.datasets[key] = row
            for namespace, name, kind in identities:
                self.datasets[(namespace, name)] = row
                aliases.setdefault((namespace, name), (namespace, name, row.dataset_uuid, kind))
        await dataset_store.insert_dataset_aliases(self.conn, list(aliases.values()))
        self.changes += [
            Change("DATASET_CREATED", dataset_node_id(r.namespace, r.name), r.namespace, n.event_time)
            for r in rows
            if r.created
        ]

    def row_of(self, d: DatasetDef) -> DatasetRow:
        return self.datasets[(d.namespace, d.name)]

    async def _write_schemas_and_versions(self) -> dict[uuid.UUID, uuid.UUID | None]:
        """Update current fields, create the versions written; returns dataset uuid -> version uuid."""
        n = self.n
        defs = self._all_defs()
        if not defs:
            return {}
        # The schema an event reports for a dataset: an output's wins over an input's.
        schemas: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for d in defs:
            if d.fields is not None:
                schemas[self.row_of(d).dataset_uuid] = [
                    {"name": x.name, "type": x.type, "description": x.description} for x in d.fields
                ]
        states = await dataset_store.fetch_dataset_states(
            self.conn, [self.row_of(d).dataset_uuid for d in defs]
        )
        replace: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for dataset_uuid, fields in schemas.items():
            state = states[dataset_uuid]
            if state.fields_at is not None and state.fields_at > n.event_time:
                continue  # a later event already set the schema
            replace[dataset_uuid] = fields
            diff = _schema_diff(state.fields, fields)
            if diff is not None and (state.fields or state.fields_at is not None):
                row = next(r for r in self.datasets.values() if r.dataset_uuid == dataset_uuid)
                self.changes.append(
                    Change(
                        "SCHEMA_CHANGED",
                        dataset_node_id(row.namespace, row.name),
                        row.namespace,
                        n.event_time,
                        diff,
                    )
                )
        await dataset_store.replace_dataset_fields(self.conn, replace, n.event_time)

        versions: dict[uuid.UUID, uuid.UUID | None] = {
            uuid_: state.current_version_uuid for uuid_, state in states.items()
        }
        if n.kind != "RUN":
            return versions
        writes: dict[uuid.UUID, tuple[uuid.UUID, list[dict[str, Any]] | None, str | None]] = {}
        for d in n.outputs:
            dataset_uuid = self.row_of(d).dataset_uuid
            writes[dataset_uuid] = (dataset_uuid, schemas.get(dataset_uuid), d.storage_version)
        written = await dataset_store.upsert_dataset_versions(
            self.conn, list(writes.values()), n.run_id, n.event_time
        )
        await dataset_store.set_current_dataset_versions(
            self.conn, {k: v[0] for k, v in written.items()}, n.event_time
        )
        versions.update({k: v[0] for k, v in written.items()})
        return versions

    # -- job, run and edges -----------------------------------------------------------------

    async def _write_job_and_run(self, versions: dict[uuid.UUID, uuid.UUID | None]) -> None:
        n = self.n
        assert n.job_namespace is not None
        assert n.job_name is not None
        parent_job_uuid = None
        if n.parent_job is not None and n.parent_job != (n.job_namespace, n.job_name):
            parent = await job_store.upsert_job(
                self.conn, n.parent_job[0], n.parent_job[1], at=n.event_time
            )
            parent_job_uuid = parent.job_uuid
            if parent.created:
                self.changes.append(
                    Change("JOB_CREATED", job_node_id(*n.parent_job), n.parent_job[0], n.event_time)
                )
        job = await job_store.upsert_job(
            self.conn,
            n.job_namespace,
            n.job_name,
            at=n.event_time,
            parent_job_uuid=parent_job_uuid,
            job_type=n.job_type,
            description=n.job_description,
            facets=n.job_facets,
            deleted_facets=n.job_deleted_facets,
        )
        node = job_node_id(n.job_namespace, n.job_name)
        if job.created:
            self.changes.append(Change("JOB_CREATED", node, n.job_namespace, n.event_time))

        # The run's state after this event and since when: a late START of a finished run still
        # versions the job as of the run's end.
        run_state, state_at = "COMPLETE", n.event_time
        if n.kind == "RUN":
            assert n.run_id is not None
            warnings = [{"path": w.path, "message": w.message} for w in n.warnings]
            state = await run_store.upsert_run(self.conn, n, job.job_uuid, warnings)
            run_state, state_at = state.current_state or "", state.current_state_at or n.event_time
            if state.previous_state != state.current_state:
                self.changes.append(
                    Change(
                        "RUN_STATE_CHANGED",
                        node,
                        n.job_namespace,
                        n.event_time,
                        {
                            "runId": str(n.run_id),
                            "previousState": state.previous_state,
                            "state": state.current_state,
                        },
                    )
                )
            items = [
                (self.row_of(d).dataset_uuid, "INPUT", versions.get(self.row_of(d).dataset_uuid))
                for d in n.inputs
            ]
            items += [
                (self.row_of(d).dataset_uuid, "OUTPUT", versions.get(self.row_of(d).dataset_uuid))
                for d in n.outputs
            ]
            await run_store.upsert_run_datasets(self.conn, n.run_id, n.event_time, _unique(items))

        edges = [
            (self.row_of(d).node_id, job.node_id, self.row_of(d).dataset_uuid, "READ", d.derived)
            for d in n.inputs
        ]
        edges += [
            (job.node_id, self.row_of(d).node_id, self.row_of(d).dataset_uuid, "WRITE", d.derived)
            for d in n.outputs
        ]
        added = await edge_store.upsert_lineage_edges(
            self.conn, job.job_uuid, _unique(edges), n.event_time, n.run_id
        )
        if added:
            self.changes.append(
                Change(
                    "EDGES_ADDED",
                    node,
                    n.job_namespace,
                    n.event_time,
                    {"edges": await self._describe_edges(added, node)},
                )
            )
        await self._write_column_lineage(job.job_uuid)
        if run_state in TERMINAL_STATES:
            await self._write_job_version(job.job_uuid, node, run_state, state_at)

    async def _write_column_lineage(self, job_uuid: uuid.UUID) -> None:
        """Store reported and SQL-derived column edges; per output, mark the less trusted superseded."""
        n = self.n
        for d in n.outputs:
            reported = self._column_rows(d, d.column_edges)
            derived = self._column_rows(d, d.derived_column_edges)
            prefer_derived = bool(derived) and _names_unknown_fields(d)
            await edge_store.upsert_column_lineage(
                self.conn, reported, job_uuid, n.event_time, n.run_id, superseded=prefer_derived
            )
            await edge_store.upsert_column_lineage(
                self.conn,
                derived,
                job_uuid,
                n.event_time,
                n.run_id,
                derived=True,
                superseded=bool(reported) and not prefer_derived,
            )

    def _column_rows(self, d: DatasetDef, edges: list[ColumnEdgeDef]) -> list[edge_store.ColumnEdgeRow]:
        out_uuid = self.row_of(d).dataset_uuid
        return [
            edge_store.ColumnEdgeRow(
                output_dataset_uuid=out_uuid,
                output_field=e.output_field,
                input_dataset_uuid=self.datasets[(e.input_namespace, e.input_name)].dataset_uuid,
                input_field=e.input_field,
                transformation_type=e.transformation_type,
                transformation_subtype=e.transformation_subtype,
                description=e.description,
                masking=e.masking,
            )
            for e in edges
        ]

    async def _write_job_version(
        self, job_uuid: uuid.UUID, node: str, run_state: str, at: dt.datetime
    ) -> None:
        """Version the job from everything its finished run reported; a COMPLETE makes it current."""
        n = self.n
        if n.kind == "RUN":
            assert n.run_id is not None
            touched = await run_store.fetch_run_datasets(self.conn, n.run_id)
            inputs = sorted(
                {(t.namespace, t.name, t.dataset_uuid) for t in touched if t.direction == "INPUT"}
            )
            outputs = sorted(
                {(t.namespace, t.name, t.dataset_uuid) for t in touched if t.direction == "OUTPUT"}
            )
        else:
            inputs = sorted({(r.namespace, r.name, r.dataset_uuid) for r in map(self.row_of, n.inputs)})
            outputs = sorted(
                {(r.namespace, r.name, r.dataset_uuid) for r in map(self.row_of, n.outputs)}
            )
        version = job_version_hash([i[:2] for i in inputs], [o[:2] for o in outputs], n.code_hash)
        version_uuid, _ = await job_store.upsert_job_version(
            self.conn,
            job_uuid,
            version,
            [i[2] for i in inputs],
            [o[2] for o in outputs],
            n.code_hash,
            n.run_id,
            at,
        )
        if n.run_id is not None:
            await run_store.set_run_job_version(self.conn, n.run_id, version_uuid)
        if run_state != "COMPLETE":
            return  # a failed or aborted run is versioned, but does not redefine the job's lineage
        move = await job_store.set_current_job_version(self.conn, job_uuid, version_uuid, at, n.run_id)
        if move is None:
            return  # a later run already defined the current lineage
        input_uuids = [i[2] for i in inputs]
        output_uuids = [o[2] for o in outputs]
        closed = await edge_store.close_stale_job_edges(
            self.conn, job_uuid, at, input_uuids, output_uuids
        )
        for derived in (False, True):
            with_columns = [
                self.row_of(d).dataset_uuid
                for d in n.outputs
                if (d.derived_column_edges if derived else d.column_edges)
            ]
            await edge_store.close_stale_column_lineage(
                self.conn, job_uuid, with_columns, at, n.run_id, derived=derived
            )
        if move.previous_version_uuid == version_uuid and not closed:
            return
        added_inputs = [i for i in inputs if i[2] not in set(move.previous_input_uuids)]
        added_outputs = [o for o in outputs if o[2] not in set(move.previous_output_uuids)]
        if move.previous_version_uuid is None:
            added_inputs, added_outputs = inputs, outputs
        details = {
            "version": version,
            "previousVersion": None,
            "addedEdges": [
                {"origin": dataset_node_id(i[0], i[1]), "destination": node} for i in added_inputs
            ]
            + [{"origin": node, "destination": dataset_node_id(o[0], o[1])} for o in added_outputs],
            "removedEdges": await self._describe_edges(closed, node),
        }
        self.changes.append(Change("JOB_VERSION_CHANGED", node, n.job_namespace, at, details))

    async def _describe_edges(
        self, edges: list[edge_store.EdgeChange], job_node: str
    ) -> list[dict[str, str]]:
        rows = await dataset_store.fetch_dataset_identities(
            self.conn, sorted({e.dataset_uuid for e in edges})
        )
        described = []
        for e in edges:
            ds = rows[e.dataset_uuid]
            dataset = dataset_node_id(ds.namespace, ds.name)
            if e.edge_type == "READ":
                described.append({"origin": dataset, "destination": job_node})
            else:
                described.append({"origin": job_node, "destination": dataset})
        return described


def plan_dataset_upserts(
    defs: list[DatasetDef],
    identity_lists: list[list[tuple[str, str, str]]],
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
        )
    for key in targets[len(defs) :]:
        upserts.setdefault(key, dataset_store.DatasetUpsert(key[0], key[1], None, None, {}, []))
    return upserts, targets


def job_version_hash(
    inputs: list[tuple[str, str]], outputs: list[tuple[str, str]], code_hash: str | None
) -> str:
    """A job version: SHA-256 over its sorted input and output identities and its code (SQL/source)."""
    body = json.dumps(
        {"inputs": sorted(inputs), "outputs": sorted(outputs), "code": code_hash}, sort_keys=True
    )
    return hashlib.sha256(body.encode()).hexdigest()


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


def _names_unknown_fields(d: DatasetDef) -> bool:
    """Whether the producer's column lineage names output fields the output's schema does not have.

    Some producers name SQL projections instead of target columns (``_0`` for ``SUM(x)``); their
    lineage then loses to the lineage derived from the SQL itself.
    """
    if not d.column_edges:
        return True
    if d.fields is None:
        return False
    known = {f.name for f in d.fields}
    return any(e.output_field not in known for e in d.column_edges)


def _unique(items: list[Any]) -> list[Any]:
    return list(dict.fromkeys(items))
