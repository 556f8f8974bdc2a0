"""Job writes of one event: parent job, job, run, lineage edges, column lineage, job version."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from headwater.ingest.fold import (
    ACTIVE_STATES,
    RunState,
    VersionDataset,
    job_version_hash,
    names_unknown_fields,
    run_lineage,
    run_state_after,
    touches_parent,
)
from headwater.ingest.normalize import TERMINAL_STATES, ColumnEdgeDef, DatasetDef, NormalizedEvent
from headwater.lineage.node_ids import format_node_id
from headwater.store import datasets as dataset_store
from headwater.store import edges as edge_store
from headwater.store import jobs as job_store
from headwater.store import runs as run_store
from headwater.store.changes import Change

if TYPE_CHECKING:
    from headwater.ingest.dataset_writes import DatasetWriter
    from headwater.ingest.rounds import Rounds
    from headwater.store.datasets import DatasetRow


class JobVersion(NamedTuple):
    uuid: uuid.UUID
    hash: str


@dataclass(frozen=True)
class FinishedRun:
    """A run in a terminal state after an event (or a job event), with the job version it defines."""

    state: str
    at: dt.datetime
    version: JobVersion
    inputs: list[VersionDataset]
    outputs: list[VersionDataset]


def dataset_node_id(namespace: str, name: str) -> str:
    return format_node_id("DATASET", namespace, name)


class JobWriter:
    """Writes the job side of one RunEvent or JobEvent, over datasets already written."""

    def __init__(
        self,
        db: Rounds,
        event: NormalizedEvent,
        datasets: DatasetWriter,
        changes: list[Change],
        parents_created: dict[tuple[str, str], dt.datetime],
        written_edges: edge_store.WrittenEdges,
        new_runs: run_store.NewRuns,
    ) -> None:
        self.db = db
        self.new_runs = new_runs
        self.n = event
        self.parents_created = parents_created
        self.written_edges = written_edges
        self.datasets = datasets
        self.row_of = datasets.row_of
        self.changes = changes
        # A rename onto the dataset it was reads nothing: an external table keeps its storage, so
        # its old and new names may both be identities of one stored dataset.
        onto_itself = [d for d in event.inputs if self._renamed_onto_itself(d)]
        self.inputs = [d for d in event.inputs if all(d is not o for o in onto_itself)]
        self.renamed_onto_itself = {self.row_of(d).dataset_uuid for d in onto_itself}

    def _renamed_onto_itself(self, d: DatasetDef) -> bool:
        """Whether ``d`` is a renamed output's old identity (see ``normalize.renamed_from``) that
        names the same stored dataset as the output."""
        return (
            d.renamed_to is not None
            and self.row_of(d).dataset_uuid == self.datasets.datasets[d.renamed_to].dataset_uuid
        )

    async def write(self, versions: dict[uuid.UUID, uuid.UUID | None]) -> None:
        n = self.n
        assert n.job_namespace is not None
        assert n.job_name is not None
        parent = None
        upserts = []
        if n.parent_job is not None and n.parent_job != (n.job_namespace, n.job_name):
            parent = n.parent_job
            # A stored parent the event does not change is only named (the job's upsert finds its
            # uuid), so that events of one parent's children need not wait for one another.
            if touches_parent(n, self.parents_created):
                upserts.append(job_store.JobUpsert(*parent, at=n.event_time))
        upserts.append(
            job_store.JobUpsert(
                n.job_namespace,
                n.job_name,
                at=n.event_time,
                parent=parent,
                job_type=n.job_type,
                description=n.job_description,
                facets=n.job_facets,
                deleted_facets=n.job_deleted_facets,
            )
        )
        *parent_row, job = await self.db(job_store.upsert_jobs, upserts)
        if parent is not None and parent_row and parent_row[0].created:
            self.changes.append(
                Change("JOB_CREATED", format_node_id("JOB", *parent), parent[0], n.event_time)
            )
        node = format_node_id("JOB", n.job_namespace, n.job_name)
        if job.created:
            self.changes.append(Change("JOB_CREATED", node, n.job_namespace, n.event_time))

        finished: FinishedRun | None
        if n.kind == "RUN":
            finished = await self._write_run(job.job_uuid, node, versions)
        else:  # a job event defines its job as a completed run would
            inputs, outputs = run_lineage([], self._reported())
            version = await self._upsert_job_version(job.job_uuid, inputs, outputs, n.event_time)
            finished = FinishedRun("COMPLETE", n.event_time, version, inputs, outputs)

        edges = [
            (self.row_of(d).node_id, job.node_id, self.row_of(d).dataset_uuid, "READ", d.derived)
            for d in self.inputs
        ]
        edges += [
            (job.node_id, self.row_of(d).node_id, self.row_of(d).dataset_uuid, "WRITE", d.derived)
            for d in n.outputs
        ]
        column_edges = await self._column_edges()
        opened = edge_store.EdgesOpened()
        if edges or column_edges:
            opened = await self.db(
                edge_store.upsert_edges,
                edge_store.EventEdges(
                    job.job_uuid,
                    n.event_time,
                    n.run_id,
                    _unique(edges),
                    column_edges,
                    self.written_edges,
                ),
            )
        if opened.edges:
            self.changes.append(
                Change(
                    "EDGES_ADDED",
                    node,
                    n.job_namespace,
                    n.event_time,
                    {"edges": await self._describe_edges(opened.edges, node)},
                )
            )
        if opened.column_edges:
            self._announce_column_edges(opened.column_edges, node)
        # A failed or aborted run is versioned, but does not redefine the job's lineage.
        if finished is not None and finished.state == "COMPLETE":
            await self._move_current_version(job.job_uuid, node, finished)

    async def _write_run(
        self, job_uuid: uuid.UUID, node: str, versions: dict[uuid.UUID, uuid.UUID | None]
    ) -> FinishedRun | None:
        """Fold the event into its run as stored and write the run once, with its state after the
        event and, once the run is finished, the job version it ran as: a late START of a finished
        run still versions the job as of the run's end, from every dataset the run touched."""
        n = self.n
        assert n.run_id is not None
        assert n.job_namespace is not None
        so_far = await self.db(run_store.read_runs, run_store.RunRead(n.run_id, self.new_runs))
        before = RunState(so_far.state, so_far.state_at)
        after = run_state_after(before, n.event_type, n.event_time)
        finished = None
        if after.state in TERMINAL_STATES and after.at is not None:
            inputs, outputs = run_lineage(
                [((t.namespace, t.name, t.dataset_uuid), t.direction) for t in so_far.datasets],
                self._reported(),
            )
            version = await self._upsert_job_version(job_uuid, inputs, outputs, after.at)
            finished = FinishedRun(after.state, after.at, version, inputs, outputs)
        touched = [
            (
                run_store.RunDataset(row.dataset_uuid, direction, row.node_id, row.namespace, row.name),
                versions.get(row.dataset_uuid),
            )
            for direction, defs in (("INPUT", self.inputs), ("OUTPUT", n.outputs))
            for row in map(self.row_of, defs)
        ]
        await self.db(
            run_store.write_run_events,
            run_store.RunEventWrite(
                n,
                job_uuid,
                [{"path": w.path, "message": w.message} for w in n.warnings],
                _unique(touched),
                after.state,
                after.at,
                finished.version.uuid if finished else None,
                n.event_time if n.event_type in ACTIVE_STATES else None,
                n.event_time if n.event_type in TERMINAL_STATES else None,
                so_far.stored,
                self.new_runs,
            ),
        )
        if before.state != after.state:
            self.changes.append(
                Change(
                    "RUN_STATE_CHANGED",
                    node,
                    n.job_namespace,
                    n.event_time,
                    {"runId": str(n.run_id), "previousState": before.state, "state": after.state},
                )
            )
        return finished

    def _reported(self) -> list[tuple[VersionDataset, str]]:
        """The event's datasets as job versions name them, with INPUT or OUTPUT."""
        return [
            ((row.namespace, row.name, row.dataset_uuid), direction)
            for direction, defs in (("INPUT", self.inputs), ("OUTPUT", self.n.outputs))
            for row in map(self.row_of, defs)
        ]

    async def _column_edges(self) -> list[tuple[edge_store.ColumnEdgeRow, bool, bool]]:
        """The reported and SQL-derived column edges of the event, each with whether it is derived
        and whether it is superseded: per output, the less trusted of the two is."""
        n = self.n
        schemas = await self._output_schemas()
        rows: list[tuple[edge_store.ColumnEdgeRow, bool, bool]] = []
        for d, schema in zip(n.outputs, schemas, strict=True):
            reported = self._column_rows(d, d.column_edges)
            derived = [
                row
                for row in self._column_rows(d, d.derived_column_edges)
                if row.input_dataset_uuid != row.output_dataset_uuid
                or row.input_dataset_uuid not in self.renamed_onto_itself
            ]
            prefer_derived = bool(derived) and names_unknown_fields(d.column_edges, schema)
            rows += [(row, False, prefer_derived) for row in reported]
            rows += [(row, True, bool(reported) and not prefer_derived) for row in derived]
        return rows

    def _announce_column_edges(self, opened: list[edge_store.ColumnEdgeOpened], node: str) -> None:
        """Column edges the job did not have before are a change of their own (COLUMN_EDGES_ADDED):
        a column's lineage may grow in the middle of a run, before any job version changes."""
        n = self.n
        by_uuid = self.datasets.by_uuid()
        edges = [
            {
                "origin": _node(by_uuid[e.input_dataset_uuid]),
                "originField": e.input_field,
                "destination": _node(by_uuid[e.output_dataset_uuid]),
                "destinationField": e.output_field,
                "derived": e.derived,
            }
            for e in opened
        ]
        # In the order of names, not of uuids: the same events give the same change anywhere.
        edges.sort(
            key=lambda e: (e["destination"], e["destinationField"], e["origin"], e["originField"])
        )
        assert n.job_namespace is not None
        self.changes.append(
            Change("COLUMN_EDGES_ADDED", node, n.job_namespace, n.event_time, {"columnEdges": edges})
        )

    async def _output_schemas(self) -> list[set[str] | None]:
        """The field names each output is known to have (None: no schema known), where it matters.

        The event's own schema facet, else the dataset's stored schema: a producer may send column
        lineage without a schema (Airflow re-sending a query as a child ``...query.N`` job), and the
        schema an earlier event set, earlier in the same batch too, still tells whether the names
        its column lineage uses are columns. Stored schemas are read only for outputs with both
        reported and derived column edges and no schema of their own.
        """
        schemas: list[set[str] | None] = [
            None if d.fields is None else {f.name for f in d.fields} for d in self.n.outputs
        ]
        missing = [
            i
            for i, d in enumerate(self.n.outputs)
            if d.fields is None and d.column_edges and d.derived_column_edges
        ]
        if missing:
            states = await self.db(
                dataset_store.fetch_dataset_states,
                [self.row_of(self.n.outputs[i]).dataset_uuid for i in missing],
            )
            for i in missing:
                state = states[self.row_of(self.n.outputs[i]).dataset_uuid]
                if state.fields or state.fields_at is not None:
                    schemas[i] = {f["name"] for f in state.fields or []}
        return schemas

    def _column_rows(self, d: DatasetDef, edges: list[ColumnEdgeDef]) -> list[edge_store.ColumnEdgeRow]:
        out_uuid = self.row_of(d).dataset_uuid
        return [
            edge_store.ColumnEdgeRow(
                output_dataset_uuid=out_uuid,
                output_field=e.output_field,
                input_dataset_uuid=self.datasets.datasets[
                    (e.input_namespace, e.input_name)
                ].dataset_uuid,
                input_field=e.input_field,
                transformation_type=e.transformation_type,
                transformation_subtype=e.transformation_subtype,
                description=e.description,
                masking=e.masking,
            )
            for e in edges
        ]

    async def _upsert_job_version(
        self,
        job_uuid: uuid.UUID,
        inputs: list[VersionDataset],
        outputs: list[VersionDataset],
        at: dt.datetime,
    ) -> JobVersion:
        """The job version a finished run (or a job event) defines, created on first sight."""
        n = self.n
        version = job_version_hash([i[:2] for i in inputs], [o[:2] for o in outputs], n.code_hash)
        version_uuid, _ = await self.db(
            job_store.upsert_job_versions,
            job_store.JobVersionUpsert(
                job_uuid,
                version,
                [i[2] for i in inputs],
                [o[2] for o in outputs],
                n.code_hash,
                n.run_id,
                at,
            ),
        )
        return JobVersion(version_uuid, version)

    async def _move_current_version(
        self,
        job_uuid: uuid.UUID,
        node: str,
        finished: FinishedRun,
    ) -> None:
        """Make a completed run's version its job's current one, unless a later run already defined
        the job; close the edges it no longer has and announce the change."""
        n = self.n
        version, inputs, outputs, at = finished.version, finished.inputs, finished.outputs, finished.at
        column_outputs = [
            (
                [
                    self.row_of(d).dataset_uuid
                    for d in n.outputs
                    if (d.derived_column_edges if derived else d.column_edges)
                ],
                derived,
            )
            for derived in (False, True)
        ]
        move = await self.db(
            job_store.set_job_versions,
            job_store.VersionWritten(
                job_uuid,
                version.uuid,
                at,
                n.run_id,
                [i[2] for i in inputs],
                [o[2] for o in outputs],
                [c for c in column_outputs if c[0]],
            ),
        )
        if move is None:
            return
        self.written_edges.forget_job(job_uuid)
        closed = move.closed_edges
        if move.previous_version_uuid == version.uuid and not closed:
            return
        added_inputs = [i for i in inputs if i[2] not in set(move.previous_input_uuids)]
        added_outputs = [o for o in outputs if o[2] not in set(move.previous_output_uuids)]
        if move.previous_version_uuid is None:
            added_inputs, added_outputs = inputs, outputs
        details = {
            "version": version.hash,
            "previousVersion": move.previous_version,
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
        # The event's own datasets are known; only edges closed on other datasets need a lookup.
        rows = self.datasets.by_uuid()
        unknown = sorted({e.dataset_uuid for e in edges} - rows.keys())
        if unknown:
            rows.update(await self.db(dataset_store.fetch_dataset_identities, unknown))
        described = []
        for e in edges:
            ds = rows[e.dataset_uuid]
            dataset = _node(ds)
            if e.edge_type == "READ":
                described.append({"origin": dataset, "destination": job_node})
            else:
                described.append({"origin": job_node, "destination": dataset})
        return described


def _node(row: DatasetRow) -> str:
    return dataset_node_id(row.namespace, row.name)


def _unique(items: list[Any]) -> list[Any]:
    return list(dict.fromkeys(items))
