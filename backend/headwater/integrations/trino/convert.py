"""Trino's HTTP event listener bridged to OpenLineage: a QueryCompletedEvent becomes RunEvents.

The HTTP event listener (``event-listener.name=http``) posts Trino's own SPI event objects as JSON,
one per request, with no envelope. This module turns each into the RunEvents Trino's OpenLineage
event listener sends for the same query, named the same way, so both listeners build one graph:

* job: namespace ``trino://host:port`` (the coordinator), name the query id, or a template of
  ``$QUERY_ID``, ``$USER``, ``$SOURCE`` and ``$CLIENT_IP`` like the listener's ``job.name-format``;
* run: a runId derived from the query id and its create time, so a re-sent event lands on the same
  run; START at the create time, then COMPLETE (or FAIL, with the failure message) at the end time;
* datasets: ``catalog.schema.table`` in the coordinator's namespace. Inputs are the tables read
  (``ioMetadata.inputs``, the directly referenced tables and views of ``metadata.tables``) with the
  columns read; the output carries its columns and types and Trino's own column lineage
  (``ioMetadata.output.columns[].sourceColumns``). Without it, the ingest derives column lineage
  from the ``sql`` job facet.

A QueryCreatedEvent becomes a START alone (same runId as its COMPLETE); a SplitCompletedEvent
carries no lineage and is ignored. Timestamps are Jackson's decimal epoch seconds, or RFC 3339.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

from headwater import __version__
from headwater.integrations.trino.events import (
    IoMetadata,
    OutputMetadata,
    QueryCompletedEvent,
    QueryContext,
    QueryCreatedEvent,
    QueryMetadata,
    TrinoEventKind,
    decode_event,
    event_kind,
    parse_instant,
)
from headwater.integrations.trino.naming import (
    BridgeOptions,
    dataset_namespace,
    job_name,
    run_id_for,
    table_name,
)

PRODUCER = f"https://github.com/headwater/headwater/tree/{__version__}/integrations/trino"
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
_RUN_FACET = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunFacet"
_FACETS = "https://openlineage.io/spec/facets"


@dataclass(frozen=True)
class Conversion:
    """One Trino event as OpenLineage RunEvents, or why it gives none (``skipped``)."""

    kind: TrinoEventKind
    events: list[dict[str, Any]] = field(default_factory=list)
    query_id: str | None = None
    query_state: str | None = None
    job_namespace: str | None = None
    job_name: str | None = None
    run_id: str | None = None
    skipped: str | None = None


def convert(raw: Any, options: BridgeOptions | None = None, prefix: str = "$") -> Conversion:
    """One decoded JSON object from the HTTP event listener as OpenLineage RunEvents (as dicts)."""
    options = options or BridgeOptions()
    kind = event_kind(raw, prefix)
    if kind == "SplitCompletedEvent":
        return Conversion(kind, skipped="a SplitCompletedEvent carries no lineage")
    event = decode_event(
        raw, QueryCompletedEvent if kind == "QueryCompletedEvent" else QueryCreatedEvent, prefix
    )
    context = event.context or QueryContext()
    metadata = event.metadata
    query_type = (context.query_type or "").upper() or None
    if options.query_types is not None and query_type not in options.query_types:
        return Conversion(
            kind,
            query_id=metadata.query_id,
            query_state=metadata.query_state,
            skipped=f"query type {query_type or 'unknown'} is not reported "
            f"(reported: {', '.join(sorted(options.query_types))})",
        )
    namespace = dataset_namespace(event, options, prefix)
    job_namespace = options.namespace or namespace
    name = job_name(options.job_name_format, metadata.query_id, context)
    created = parse_instant(event.create_time, f"{prefix}.createTime")
    run_id = run_id_for(metadata.query_id, created)
    builder = _Builder(namespace, job_namespace, name, run_id, metadata, context)
    events = [builder.start(created)]
    if isinstance(event, QueryCompletedEvent):
        ended = parse_instant(event.end_time, f"{prefix}.endTime")
        events.append(builder.end(event, created, ended))
    return Conversion(
        kind,
        events=events,
        query_id=metadata.query_id,
        query_state=metadata.query_state,
        job_namespace=job_namespace,
        job_name=name,
        run_id=str(run_id),
    )


def to_run_events(raw: Any, options: BridgeOptions | None = None) -> list[dict[str, Any]]:
    """The RunEvents of one Trino event (none for an ignored or skipped one)."""
    return convert(raw, options).events


# -- building the RunEvents ------------------------------------------------------------------------


class _Builder:
    def __init__(
        self,
        namespace: str,
        job_namespace: str,
        name: str,
        run_id: uuid.UUID,
        metadata: QueryMetadata,
        context: QueryContext,
    ) -> None:
        self.namespace = namespace
        self.job_namespace = job_namespace
        self.name = name
        self.run_id = run_id
        self.metadata = metadata
        self.context = context

    def _event(self, event_type: str, at: dt.datetime, run_facets: dict[str, Any]) -> dict[str, Any]:
        job_facets: dict[str, Any] = {
            "jobType": _facet(
                "2-0-3/JobTypeJobFacet.json#/$defs/JobTypeJobFacet",
                processingType="BATCH",
                integration="TRINO",
                jobType="QUERY",
            ),
        }
        if self.metadata.query:
            job_facets["sql"] = _facet(
                "1-1-0/SQLJobFacet.json#/$defs/SQLJobFacet", query=self.metadata.query, dialect="trino"
            )
        return {
            "eventType": event_type,
            "eventTime": _rfc3339(at),
            "producer": PRODUCER,
            "schemaURL": SCHEMA_URL,
            "run": {"runId": str(self.run_id), "facets": run_facets},
            "job": {"namespace": self.job_namespace, "name": self.name, "facets": job_facets},
        }

    def _run_facets(self) -> dict[str, Any]:
        facets: dict[str, Any] = {}
        if self.context.server_version:
            facets["processing_engine"] = _facet(
                "1-1-1/ProcessingEngineRunFacet.json#/$defs/ProcessingEngineRunFacet",
                name="trino",
                version=self.context.server_version,
            )
        facets["trino_metadata"] = _run_facet(
            query_id=self.metadata.query_id,
            transaction_id=self.metadata.transaction_id,
        )
        c = self.context
        facets["trino_query_context"] = _run_facet(
            server_address=c.server_address,
            environment=c.environment,
            query_type=c.query_type,
            user=c.user,
            original_user=c.original_user,
            principal=c.principal,
            source=c.source,
            client_info=c.client_info,
            remote_client_address=c.remote_client_address,
            user_agent=c.user_agent,
            trace_token=c.trace_token,
            # The session's: what the query's unqualified table names are in.
            catalog=c.catalog,
            schema=c.schema,
        )
        return facets

    def start(self, created: dt.datetime) -> dict[str, Any]:
        return self._event("START", created, self._run_facets())

    def end(
        self, event: QueryCompletedEvent, created: dt.datetime, ended: dt.datetime
    ) -> dict[str, Any]:
        failed = (self.metadata.query_state or "").upper() == "FAILED" or event.failure_info is not None
        facets = self._run_facets()
        failure = event.failure_info
        facets["trino_metadata"] = _run_facet(
            query_id=self.metadata.query_id,
            transaction_id=self.metadata.transaction_id,
            query_plan=self.metadata.plan,
            update_type=self.metadata.update_type,
            query_state=self.metadata.query_state,
            error_code=failure.error_code.name if failure and failure.error_code else None,
            error_type=failure.error_code.type if failure and failure.error_code else None,
            failure_type=failure.failure_type if failure else None,
        )
        facets["trino_query_statistics"] = _run_facet(**_statistics(event.statistics))
        facets["nominalTime"] = _facet(
            "1-0-1/NominalTimeRunFacet.json#/$defs/NominalTimeRunFacet",
            nominalStartTime=_rfc3339(created),
            nominalEndTime=_rfc3339(ended),
        )
        if failed:
            message = (
                (failure.failure_message if failure else None)
                or (
                    failure.error_code.name
                    if failure and failure.error_code and failure.error_code.name
                    else None
                )
                or "query failed"
            )
            facets["errorMessage"] = _facet(
                "1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet",
                message=message,
                programmingLanguage="SQL",
            )
        out = self._event("FAIL" if failed else "COMPLETE", ended, facets)
        io = event.io_metadata or IoMetadata()
        output = self._output(io.output, event.statistics if not failed else None)
        out["inputs"] = self._inputs(io, output["name"] if output else None)
        out["outputs"] = [output] if output else []
        return out

    def _inputs(self, io: IoMetadata, output_name: str | None) -> list[dict[str, Any]]:
        tables: dict[str, list[str]] = {}

        def add(name: str, columns: list[str]) -> None:
            known = tables.setdefault(name, [])
            known.extend(c for c in columns if c not in known)

        read = set()
        for i in io.inputs or []:
            name = table_name(i.catalog_name, i.schema, i.table)
            read.add(name)
            add(name, [c for c in map(_column_name, i.columns or []) if c])
        # Directly referenced tables and views (the OpenLineage listener's inputs); not the target.
        for t in self.metadata.tables or []:
            name = table_name(t.catalog, t.schema, t.table)
            if t.directly_referenced and (name != output_name or name in read):
                add(name, [c.column for c in t.columns or []])
        # Every table the output's column lineage names is read.
        for column in (io.output.columns or []) if io.output else []:
            for s in column.source_columns or []:
                add(table_name(s.catalog, s.schema, s.table), [s.column_name])
        inputs = []
        for name, columns in tables.items():
            facets: dict[str, Any] = {}
            if columns:
                facets["schema"] = _facet(
                    "1-2-0/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet",
                    fields=[{"name": c} for c in columns],
                )
            inputs.append({"namespace": self.namespace, "name": name, "facets": facets})
        return inputs

    def _output(
        self, output: OutputMetadata | None, statistics: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        if output is None:
            return None
        name = table_name(output.catalog_name, output.schema, output.table)
        schema_name = f"{output.catalog_name}.{output.schema}"
        facets: dict[str, Any] = {
            "dataSource": _facet(
                "1-0-1/DatasourceDatasetFacet.json#/$defs/DatasourceDatasetFacet",
                name=schema_name,
                uri=f"{self.namespace}/{schema_name}",
            ),
        }
        if output.columns is not None:
            facets["schema"] = _facet(
                "1-2-0/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet",
                fields=[
                    {"name": c.column_name, **({"type": c.column_type} if c.column_type else {})}
                    for c in output.columns
                ],
            )
        lineage = {
            c.column_name: {
                "inputFields": [
                    {
                        "namespace": self.namespace,
                        "name": table_name(s.catalog, s.schema, s.table),
                        "field": s.column_name,
                    }
                    for s in c.source_columns
                ]
            }
            for c in output.columns or []
            if c.source_columns
        }
        if lineage:  # else the ingest derives column lineage from the sql facet
            facets["columnLineage"] = _facet(
                "1-2-0/ColumnLineageDatasetFacet.json#/$defs/ColumnLineageDatasetFacet",
                fields=lineage,
            )
        result: dict[str, Any] = {"namespace": self.namespace, "name": name, "facets": facets}
        stats = statistics or {}
        rows, size = stats.get("writtenRows"), stats.get("writtenBytes")
        if _is_int(rows) or _is_int(size):
            counts = {
                "rowCount": rows if _is_int(rows) else None,
                "size": size if _is_int(size) else None,
            }
            result["outputFacets"] = {
                "outputStatistics": _facet(
                    "1-0-2/OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet",
                    **{k: v for k, v in counts.items() if v is not None},
                )
            }
        return result


def _rfc3339(at: dt.datetime) -> str:
    at = at.astimezone(dt.UTC)
    spec = "milliseconds" if at.microsecond % 1000 == 0 else "microseconds"
    return at.isoformat(timespec=spec).replace("+00:00", "Z")


def _facet(schema: str, **fields: Any) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": f"{_FACETS}/{schema}", **fields}


def _run_facet(**fields: Any) -> dict[str, Any]:
    """A Trino run facet: a flat map of non-empty values, as the OpenLineage listener sends them."""
    return {
        "_producer": PRODUCER,
        "_schemaURL": _RUN_FACET,
        **{k: v for k, v in fields.items() if v is not None and v != ""},
    }


def _statistics(statistics: dict[str, Any] | None) -> dict[str, str]:
    """QueryStatistics flattened to strings (durations in seconds); lists and objects left out."""
    out: dict[str, str] = {}
    for key, value in (statistics or {}).items():
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, int):
            out[key] = str(value)
        elif isinstance(value, float):
            out[key] = f"{value:.9f}" if key.endswith("Time") else repr(value)
        elif isinstance(value, str):
            out[key] = value
    return out


def _column_name(column: Any) -> str | None:
    if isinstance(column, str):
        return column
    if isinstance(column, dict):
        for key in ("column", "name", "columnName"):
            value = column.get(key)
            if isinstance(value, str):
                return value
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
