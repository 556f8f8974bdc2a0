"""A core-valid event turned into the plain values the store writes. Pure functions, no I/O.

Identity: a dataset is (namespace, name) as the producer reports it. Its other identities (symlinks,
alias rules) are aliases. When a dataset is new, its canonical identity is its first TABLE symlink if
it has one (a table name outlives its storage path), else the identity the producer reported.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from headwater import times
from headwater.errors import FieldError
from headwater.ingest import facets as f
from headwater.ingest.validate import (
    MAX_TRANSFORMATION_BYTES,
    DatasetEventModel,
    DatasetModel,
    JobEventModel,
    RunEventModel,
    ValidEvent,
    run_uuid,
    too_long,
)
from headwater.lineage.node_ids import MAX_FIELD_NAME_BYTES, MAX_NAME_BYTES, MAX_NAMESPACE_BYTES

# Maps a reported (namespace, name) to the identity other engines use for it, or None to keep it.
AliasRule = Callable[[str, str], tuple[str, str] | None]

TERMINAL_STATES = frozenset({"COMPLETE", "FAIL", "ABORT"})


# Tuples, not frozen dataclasses: an event holds dozens of fields and column edges, and a frozen
# dataclass is about four times slower to make.
class FieldDef(NamedTuple):
    name: str
    type: str | None
    description: str | None


class ColumnEdgeDef(NamedTuple):
    output_field: str
    input_namespace: str
    input_name: str
    input_field: str
    transformation_type: str | None
    transformation_subtype: str | None
    description: str | None
    masking: bool | None


@dataclass
class DatasetDef:
    namespace: str
    name: str
    # Identities to try, in order of preference for a new dataset; the first is canonical.
    identities: list[tuple[str, str, str]]
    facets: dict[str, Any]
    deleted_facets: list[str]
    fields: list[FieldDef] | None = None
    source_name: str | None = None
    source_uri: str | None = None
    description: str | None = None
    storage_version: str | None = None
    lifecycle_state: str | None = None
    previous_identity: tuple[str, str] | None = None
    column_edges: list[ColumnEdgeDef] = field(default_factory=list)
    # Not reported by the producer, known only from what the event implies: the job's SQL, or the
    # identity a renamed output had before (renamed_from).
    derived: bool = False
    derived_column_edges: list[ColumnEdgeDef] = field(default_factory=list)
    # For a derived input that is a renamed output's identity before (renamed_from): that output's.
    renamed_to: tuple[str, str] | None = None


@dataclass
class NormalizedEvent:
    kind: Literal["RUN", "DATASET", "JOB"]
    event_type: str | None
    event_time: dt.datetime
    producer: str
    job_namespace: str | None = None
    job_name: str | None = None
    job_facets: dict[str, Any] = field(default_factory=dict)
    job_deleted_facets: list[str] = field(default_factory=list)
    job_type: str | None = None
    job_description: str | None = None
    sql: str | None = None
    sql_dialect: str | None = None
    code_hash: str | None = None
    run_id: uuid.UUID | None = None
    # The runId as reported when it is not a UUID (run_id is then derived from it).
    reported_run_id: str | None = None
    run_facets: dict[str, Any] = field(default_factory=dict)
    parent_run_id: uuid.UUID | None = None
    parent_job: tuple[str, str] | None = None
    root_run_id: uuid.UUID | None = None
    nominal_start_time: dt.datetime | None = None
    nominal_end_time: dt.datetime | None = None
    error_message: str | None = None
    error_language: str | None = None
    error_stack_trace: str | None = None
    inputs: list[DatasetDef] = field(default_factory=list)
    outputs: list[DatasetDef] = field(default_factory=list)
    warnings: list[FieldError] = field(default_factory=list)


# What one event's facets may make it write, its datasets together: an event is written in one
# transaction, and every other writer waits for it. Measured here, 100,000 schema fields took 1.6 s
# to write and 50,000 column edges 5.3 s. A columnLineage facet's dataset-level inputs apply to
# each of its fields, so a 49 KB event could ask for 90,000 column edges (8.4 s), and a 700 KB one
# for 25 million. A facet past what is left of the event's share is ignored, with a warning; the
# raw event keeps it.
MAX_EVENT_FIELDS = 100_000
MAX_EVENT_COLUMN_EDGES = 20_000


@dataclass
class _Allowance:
    """What is left of an event's share of schema fields and column edges, taken facet by facet."""

    fields: int = MAX_EVENT_FIELDS
    column_edges: int = MAX_EVENT_COLUMN_EDGES

    def schema(
        self, facet: f.SchemaFacet | None, path: str, warnings: list[FieldError]
    ) -> f.SchemaFacet | None:
        """The facet, its fields taken from what is left; None (and a warning) past it."""
        if facet is None:
            return None
        if len(facet.fields) > self.fields:
            warnings.append(
                FieldError(
                    f"{path}.schema",
                    f"facet ignored: its {len(facet.fields):,} fields are more than the "
                    f"{self.fields:,} left of the {MAX_EVENT_FIELDS:,} one event's schemas may hold",
                )
            )
            return None
        self.fields -= len(facet.fields)
        return facet

    def lineage(
        self,
        facet: f.ColumnLineageFacet | None,
        fields: list[FieldDef] | None,
        path: str,
        warnings: list[FieldError],
    ) -> f.ColumnLineageFacet | None:
        """The facet, the column edges it makes taken from what is left; None (and a warning) past it."""
        if facet is None:
            return None
        count = column_edge_count(facet, fields)
        if count > self.column_edges:
            warnings.append(
                FieldError(
                    f"{path}.columnLineage",
                    f"facet ignored: it makes {count:,} column edges (its dataset-level inputs "
                    f"apply to each of its fields), more than the {self.column_edges:,} left of the "
                    f"{MAX_EVENT_COLUMN_EDGES:,} one event may make",
                )
            )
            return None
        self.column_edges -= count
        return facet


def normalize_event(event: ValidEvent, alias_rules: list[AliasRule] | None = None) -> NormalizedEvent:
    """Turn a validated event into the values the store writes; malformed facets become warnings."""
    model = event.model
    rules = alias_rules or []
    out = NormalizedEvent(
        kind=event.kind,
        event_type=getattr(model, "event_type", None),
        event_time=model.event_time,
        producer=model.producer,
    )
    warnings = out.warnings
    allowance = _Allowance()
    if isinstance(model, DatasetEventModel):
        out.outputs = [
            _dataset(model.dataset, "$.dataset", rules, warnings, allowance, with_lineage=False)
        ]
        return out
    assert isinstance(model, RunEventModel | JobEventModel)
    _job(out, model, warnings)
    if isinstance(model, RunEventModel):
        _run(out, model, warnings)
    out.inputs = [
        _dataset(d, f"$.inputs[{i}]", rules, warnings, allowance, with_lineage=False)
        for i, d in enumerate(model.inputs or [])
    ]
    out.outputs = [
        _dataset(d, f"$.outputs[{i}]", rules, warnings, allowance, with_lineage=True)
        for i, d in enumerate(model.outputs or [])
    ]
    renamed_from(out, rules)
    return out


# The column edges of a rename: each column of the renamed table is the column of the same name
# before, as it was.
RENAME_TRANSFORMATION = ("DIRECT", "IDENTITY", "renamed")


def renamed_from(event: NormalizedEvent, rules: list[AliasRule]) -> None:
    """A renamed output (lifecycleStateChange RENAME, with previousIdentifier) is read from its
    identity before the rename: the old identity becomes a derived input of the job, and each column
    of the output's schema a derived column edge from the column of the same name before.

    So lineage goes on across a rename, as a copy would: upstream of the new name are the jobs that
    wrote the old one, downstream of an old column its column under the new name. The old dataset
    keeps its own history. Outputs whose producer reports the old identity as an input already are
    left as reported.
    """
    for output in event.outputs:
        previous = output.previous_identity
        if output.lifecycle_state != "RENAME" or previous is None:
            continue
        namespace, name = previous
        own = {(ns, nm) for ns, nm, _ in output.identities}
        reported = {(d.namespace, d.name) for d in event.inputs}
        # (An identity too long to store never gets here: _read leaves out the facet, with a warning.)
        if not namespace or not name or previous in own or previous in reported:
            continue
        event.inputs.append(
            DatasetDef(
                namespace=namespace,
                name=name,
                identities=identities_for(namespace, name, [], rules),
                facets={},
                deleted_facets=[],
                derived=True,
                renamed_to=(output.namespace, output.name),
            )
        )
        output.derived_column_edges += [
            ColumnEdgeDef(column.name, namespace, name, column.name, *RENAME_TRANSFORMATION, False)
            for column in output.fields or []
        ]


def _job(out: NormalizedEvent, model: RunEventModel | JobEventModel, warnings: list[FieldError]) -> None:
    out.job_namespace = model.job.namespace
    out.job_name = model.job.name
    out.job_facets, out.job_deleted_facets = f.split_deleted(model.job.facets)
    facets = model.job.facets
    path = "$.job.facets"
    f.check_facets(facets, "job", path, warnings)
    job_type = f.read_facet(facets, "jobType", f.JobTypeFacet, path, warnings)
    if job_type is not None:
        out.job_type = job_type.job_type
    doc = f.read_facet(facets, "documentation", f.DocumentationFacet, path, warnings)
    if doc is not None:
        out.job_description = doc.description
    sql = f.read_facet(facets, "sql", f.SqlFacet, path, warnings)
    source = f.read_facet(facets, "sourceCode", f.SourceCodeFacet, path, warnings)
    code_parts: list[str] = []
    if sql is not None:
        out.sql = sql.query
        out.sql_dialect = sql.dialect
        code_parts.append("sql:" + sql.query)
    if source is not None and source.source_code:
        code_parts.append(f"{source.language or ''}:{source.source_code}")
    if code_parts:
        out.code_hash = hashlib.sha256("\n".join(code_parts).encode()).hexdigest()


def _run(out: NormalizedEvent, model: RunEventModel, warnings: list[FieldError]) -> None:
    out.run_id = model.run.run_id
    out.reported_run_id = model.run.non_uuid_run_id
    out.run_facets, _ = f.split_deleted(model.run.facets)
    facets = model.run.facets
    path = "$.run.facets"
    parent = _read(facets, "parent", f.ParentFacet, path, warnings)
    if parent is not None:
        out.parent_run_id = run_uuid(parent.run.run_id)
        out.parent_job = (parent.job.namespace, parent.job.name)
        out.root_run_id = run_uuid(parent.root.run.run_id if parent.root else parent.run.run_id)
    nominal = _read(facets, "nominalTime", f.NominalTimeFacet, path, warnings)
    if nominal is not None:
        # In UTC, as the eventTime (validate): a facet read here has its times in range.
        out.nominal_start_time = times.instant(nominal.nominal_start_time)
        end = nominal.nominal_end_time
        out.nominal_end_time = times.instant(end) if end else None
    error = f.read_facet(facets, "errorMessage", f.ErrorMessageFacet, path, warnings)
    if error is not None:
        out.error_message = error.message
        out.error_language = error.programming_language
        out.error_stack_trace = error.stack_trace


def _dataset(
    model: DatasetModel,
    path: str,
    rules: list[AliasRule],
    warnings: list[FieldError],
    allowance: _Allowance,
    *,
    with_lineage: bool,
) -> DatasetDef:
    facets, deleted = f.split_deleted(model.facets)
    fpath = f"{path}.facets"
    f.check_facets(model.facets, "dataset", fpath, warnings)
    f.check_facets(model.input_facets, "inputFacets", f"{path}.inputFacets", warnings)
    f.check_facets(model.output_facets, "outputFacets", f"{path}.outputFacets", warnings)
    identities = _identities(model, fpath, rules, warnings)
    dataset = DatasetDef(
        namespace=model.namespace,
        name=model.name,
        identities=identities,
        facets=facets,
        deleted_facets=deleted,
    )
    schema = allowance.schema(
        _read(model.facets, "schema", f.SchemaFacet, fpath, warnings), fpath, warnings
    )
    if schema is not None:
        dataset.fields = [FieldDef(x.name, x.type, x.description) for x in schema.fields]
    source = _read(model.facets, "dataSource", f.DataSourceFacet, fpath, warnings)
    if source is not None:
        dataset.source_name = source.name or model.namespace
        dataset.source_uri = source.uri
    doc = f.read_facet(model.facets, "documentation", f.DocumentationFacet, fpath, warnings)
    if doc is not None:
        dataset.description = doc.description
    version = f.read_facet(model.facets, "version", f.DatasetVersionFacet, fpath, warnings)
    if version is not None:
        dataset.storage_version = version.dataset_version
    lifecycle = _read(model.facets, "lifecycleStateChange", f.LifecycleStateChangeFacet, fpath, warnings)
    if lifecycle is not None:
        dataset.lifecycle_state = lifecycle.lifecycle_state_change
        if lifecycle.previous_identifier is not None:
            prev = lifecycle.previous_identifier
            dataset.previous_identity = (prev.namespace, prev.name)
    if with_lineage:
        lineage = allowance.lineage(
            _read(model.facets, "columnLineage", f.ColumnLineageFacet, fpath, warnings),
            dataset.fields,
            fpath,
            warnings,
        )
        if lineage is not None:
            dataset.column_edges = column_edges(lineage, dataset.fields)
    return dataset


def _identities(
    model: DatasetModel, path: str, rules: list[AliasRule], warnings: list[FieldError]
) -> list[tuple[str, str, str]]:
    symlinks = _read(model.facets, "symlinks", f.SymlinksFacet, path, warnings)
    links = [
        (s.namespace, s.name, (s.type or "TABLE").upper())
        for s in (symlinks.identifiers if symlinks else [])
    ]
    return identities_for(model.namespace, model.name, links, rules)


def identities_for(
    namespace: str, name: str, links: list[tuple[str, str, str]], rules: list[AliasRule]
) -> list[tuple[str, str, str]]:
    """All identities of a dataset, canonical first: TABLE symlinks, then as reported, then the rest.

    Each identity is preceded by what an alias rule maps it to, so a rule's target wins.
    """
    ordered = [s for s in links if s[2] == "TABLE"] + [(namespace, name, "REPORTED")]
    ordered += [s for s in links if s[2] != "TABLE"]
    result: list[tuple[str, str, str]] = []
    for ns, nm, kind in ordered:
        for rule in rules:
            mapped = rule(ns, nm)
            if mapped is not None and mapped != (ns, nm):
                result.append((mapped[0], mapped[1], "RULE"))
        result.append((ns, nm, kind))
    seen: set[tuple[str, str]] = set()
    unique = []
    for ns, nm, kind in result:
        if (ns, nm) not in seen:
            seen.add((ns, nm))
            unique.append((ns, nm, kind))
    return unique


def column_edge_count(facet: f.ColumnLineageFacet, fields: list[FieldDef] | None) -> int:
    """How many column edges ``column_edges`` makes of a facet at most, counted without making them."""

    def each(sources: list[f.InputField]) -> int:
        return sum(max(1, len(s.transformations or ())) for s in sources)

    count = sum(each(entry.input_fields) for entry in facet.fields.values())
    if facet.dataset:
        count += (len(facet.fields) or len(fields or ())) * each(facet.dataset)
    return count


def column_edges(facet: f.ColumnLineageFacet, fields: list[FieldDef] | None) -> list[ColumnEdgeDef]:
    """Flatten a columnLineage facet into output field <- input field edges.

    Dataset-level entries (``dataset: [...]``, facet 1-2-0) apply to every output field: they are
    the indirect inputs (filters, joins) of the whole output.
    """
    edges: dict[tuple[Any, ...], ColumnEdgeDef] = {}

    def add(
        output_field: str, source: f.InputField, default_type: str | None, default_desc: str | None
    ) -> None:
        transformations = source.transformations or [
            f.Transformation(type=default_type, description=default_desc)
        ]
        for t in transformations:
            edge = ColumnEdgeDef(
                output_field=output_field,
                input_namespace=source.namespace,
                input_name=source.name,
                input_field=source.field,
                transformation_type=t.type or default_type or None,
                transformation_subtype=t.subtype or None,
                description=t.description or default_desc or None,
                masking=t.masking,
            )
            key = (
                edge.output_field,
                edge.input_namespace,
                edge.input_name,
                edge.input_field,
                edge.transformation_type,
                edge.transformation_subtype,
            )
            edges.setdefault(key, edge)

    for output_field, entry in facet.fields.items():
        for source in entry.input_fields:
            add(output_field, source, entry.transformation_type, entry.transformation_description)
    if facet.dataset:
        targets = list(facet.fields) or [x.name for x in (fields or [])]
        for output_field in targets:
            for source in facet.dataset:
                add(output_field, source, "INDIRECT", None)
    return list(edges.values())


def _read(
    facets: dict[str, Any] | None, key: str, model: type[f.T], path: str, warnings: list[FieldError]
) -> f.T | None:
    """``read_facet``, and the facet ignored too (with a warning) if the model could not store a
    value of it: a name longer than its index allows, a time outside years 1 to 9999."""
    facet = f.read_facet(facets, key, model, path, warnings)
    if facet is None:
        return None
    problems = list(_unstorable(facet))
    for where, problem in problems:
        warnings.append(FieldError(f"{path}.{key}{where}", f"facet ignored: {problem}"))
    return None if problems else facet


# The checks below yield only what is wrong, and build a value's path only then: they run on
# every facet of every event, nearly always finding nothing.


def _unstorable(facet: Any) -> Iterator[tuple[str, str]]:
    """(path in the facet, problem) for each value of it the model cannot store in an index."""
    if isinstance(facet, f.SchemaFacet):
        yield from _schema_fields(facet)
    elif isinstance(facet, f.DataSourceFacet) and facet.name:
        if problem := too_long(facet.name, MAX_NAMESPACE_BYTES):
            yield ".name", problem
    elif isinstance(facet, f.SymlinksFacet):
        for i, s in enumerate(facet.identifiers):
            yield from _identity(f".identifiers[{i}]", s.namespace, s.name)
    elif isinstance(facet, f.LifecycleStateChangeFacet) and facet.previous_identifier:
        prev = facet.previous_identifier
        yield from _identity(".previousIdentifier", prev.namespace, prev.name)
    elif isinstance(facet, f.ParentFacet):
        yield from _identity(".job", facet.job.namespace, facet.job.name)
    elif isinstance(facet, f.NominalTimeFacet):
        yield from _nominal_times(facet)
    elif isinstance(facet, f.ColumnLineageFacet):
        yield from _column_lineage(facet)


def _schema_fields(facet: f.SchemaFacet) -> Iterator[tuple[str, str]]:
    for i, x in enumerate(facet.fields):
        if problem := too_long(x.name, MAX_FIELD_NAME_BYTES):
            yield f".fields[{i}].name", problem


def _nominal_times(facet: f.NominalTimeFacet) -> Iterator[tuple[str, str]]:
    if problem := times.out_of_range(facet.nominal_start_time):
        yield ".nominalStartTime", problem
    end = facet.nominal_end_time
    if end and (problem := times.out_of_range(end)):
        yield ".nominalEndTime", problem


def _column_lineage(facet: f.ColumnLineageFacet) -> Iterator[tuple[str, str]]:
    for name, entry in facet.fields.items():
        if problem := too_long(name, MAX_FIELD_NAME_BYTES):
            yield f".fields.{name}", problem
        yield from _input_fields(name, entry.input_fields)
        if problem := _too_long_type(entry.transformation_type):
            yield f".fields.{name}.transformationType", problem
    yield from _input_fields(None, facet.dataset or [])


def _identity(path: str, namespace: str, name: str) -> Iterator[tuple[str, str]]:
    if problem := too_long(namespace, MAX_NAMESPACE_BYTES):
        yield f"{path}.namespace", problem
    if problem := too_long(name, MAX_NAME_BYTES):
        yield f"{path}.name", problem


def _input_fields(output_field: str | None, sources: list[f.InputField]) -> Iterator[tuple[str, str]]:
    """The input fields of an output field (None: the facet's dataset-level inputs)."""
    for i, source in enumerate(sources):
        if (
            too_long(source.namespace, MAX_NAMESPACE_BYTES)
            or too_long(source.name, MAX_NAME_BYTES)
            or too_long(source.field, MAX_FIELD_NAME_BYTES)
            or any(
                _too_long_type(t.type) or _too_long_type(t.subtype) for t in source.transformations or []
            )
        ):
            path = (
                f".fields.{output_field}.inputFields[{i}]"
                if output_field is not None
                else f".dataset[{i}]"
            )
            yield from _identity(path, source.namespace, source.name)
            if problem := too_long(source.field, MAX_FIELD_NAME_BYTES):
                yield f"{path}.field", problem
            for j, t in enumerate(source.transformations or []):
                if problem := _too_long_type(t.type):
                    yield f"{path}.transformations[{j}].type", problem
                if problem := _too_long_type(t.subtype):
                    yield f"{path}.transformations[{j}].subtype", problem


def _too_long_type(value: str | None) -> str | None:
    return too_long(value, MAX_TRANSFORMATION_BYTES) if value else None
