"""Trino events for tests: the shared examples, QueryCompletedEvents, and OpenLineage-listener events."""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

from tests.corpus import corpus_file

TRINO = "trino://trino-coordinator:8080"
OL_PRODUCER = "https://github.com/trinodb/trino/plugin/trino-openlineage"
CREATE_TIME = 1748772900.123  # 2025-06-01T10:15:00.123Z


def example(name: str) -> dict[str, Any]:
    """One of the hand-made examples of Trino's two listeners in the shared corpus."""
    return json.loads(corpus_file(f"trino/{name}").read_text())


def http_example() -> dict[str, Any]:
    return example("http-event-listener-query-completed.example.json")


def ol_examples() -> list[dict[str, Any]]:
    return [
        example("openlineage-listener-insert-start.example.json"),
        example("openlineage-listener-insert-complete.example.json"),
    ]


Col = tuple[str, str, list[str]]  # (output column, type, ["catalog.schema.table.column", ...])


def query_completed(
    query: str,
    *,
    query_id: str = "20250601_101500_00042_abcde",
    inputs: dict[str, list[str]] | None = None,
    output: str | None = None,
    columns: list[Col] | None = None,
    state: str = "FINISHED",
    query_type: str = "INSERT",
    failure: str | None = None,
    create_time: float = CREATE_TIME,
    duration: float = 3.0,
    uri: str | None = "http://trino-coordinator:8080",
    views: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """A QueryCompletedEvent like the HTTP event listener posts; inputs map table -> columns read."""
    event = copy.deepcopy(http_example())
    meta = event["metadata"]
    meta.update(queryId=query_id, query=query, queryState=state, updateType=query_type)
    meta["uri"] = f"{uri}/v1/query/{query_id}" if uri else None
    tables = {**(inputs or {})}
    meta["tables"] = [
        _table_info(name, cols, direct=True) for name, cols in {**tables, **(views or {})}.items()
    ]
    event["context"]["queryType"] = query_type
    io_inputs = []
    for name, cols in tables.items():
        catalog, schema, table = name.split(".")
        io_inputs.append(
            {
                "catalogName": catalog,
                "catalogVersion": "default",
                "schema": schema,
                "table": table,
                "columns": cols,
                "connectorInfo": None,
                "connectorMetrics": {},
                "physicalInputBytes": None,
                "physicalInputRows": 10,
            }
        )
    event["ioMetadata"]["inputs"] = io_inputs
    if output is None:
        event["ioMetadata"]["output"] = None
    else:
        catalog, schema, table = output.split(".")
        event["ioMetadata"]["output"] = {
            "catalogName": catalog,
            "schema": schema,
            "table": table,
            "columns": None
            if columns is None
            else [
                {"columnName": c, "columnType": t, "sourceColumns": [_source(s) for s in sources]}
                for c, t, sources in columns
            ],
            "connectorOutputMetadata": None,
            "jsonLengthLimitExceeded": None,
        }
    if failure is not None:
        meta["queryState"] = "FAILED"
        event["failureInfo"] = {
            "errorCode": {"code": 1, "name": "GENERIC_USER_ERROR", "type": "USER_ERROR"},
            "failureType": "io.trino.spi.TrinoException",
            "failureMessage": failure,
            "failureTask": None,
            "failureHost": None,
            "failuresJson": "{}",
        }
    event["createTime"] = create_time
    event["executionStartTime"] = create_time + 0.1
    event["endTime"] = create_time + duration
    return event


def _table_info(name: str, columns: list[str], *, direct: bool) -> dict[str, Any]:
    catalog, schema, table = name.split(".")
    return {
        "catalog": catalog,
        "schema": schema,
        "table": table,
        "authorization": "admin",
        "filters": [],
        "columns": [{"column": c, "mask": None} for c in columns],
        "directlyReferenced": direct,
    }


def _source(qualified: str) -> dict[str, str]:
    catalog, schema, table, column = qualified.split(".")
    return {"catalog": catalog, "schema": schema, "table": table, "columnName": column}


def ol_listener_run(
    query: str,
    *,
    query_id: str = "20250601_120000_00001_abcde",
    inputs: dict[str, list[str]],
    output: str | None = None,
    columns: list[Col] | None = None,
    namespace: str = TRINO,
    job_namespace: str | None = None,
    job_name: str | None = None,
    failure: str | None = None,
    start: str = "2025-06-01T12:00:00.000Z",
    end: str = "2025-06-01T12:00:05.000Z",
) -> list[dict[str, Any]]:
    """START and COMPLETE (or FAIL) as Trino's OpenLineage listener sends them for one query."""
    run_id = str(uuid.uuid4())

    def facet(**fields: Any) -> dict[str, Any]:
        return {
            "_producer": OL_PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunFacet",
            **fields,
        }

    job = {
        "namespace": job_namespace or namespace,
        "name": job_name or query_id,
        "facets": {
            "jobType": {
                "_producer": OL_PRODUCER,
                "_schemaURL": "https://openlineage.io/spec/facets/2-0-3/JobTypeJobFacet.json",
                "processingType": "BATCH",
                "integration": "TRINO",
                "jobType": "QUERY",
            },
            "sql": {
                "_producer": OL_PRODUCER,
                "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/SQLJobFacet.json",
                "query": query,
            },
        },
    }
    run_facets = {
        "trino_metadata": facet(query_id=query_id),
        "trino_query_context": facet(server_address="10.0.4.2", environment="test", query_type="INSERT"),
    }
    start_event = {
        "eventTime": start,
        "producer": OL_PRODUCER,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "eventType": "START",
        "run": {"runId": run_id, "facets": run_facets},
        "job": job,
    }
    end_facets = {**run_facets, "trino_query_statistics": facet(cpuTime="0.5", complete="true")}
    if failure:
        end_facets["errorMessage"] = {
            "_producer": OL_PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/ErrorMessageRunFacet.json",
            "message": failure,
            "programmingLanguage": "SQL",
        }
    outputs = []
    if output is not None:
        out_facets: dict[str, Any] = {}
        if columns is not None:
            out_facets["schema"] = {
                "_producer": OL_PRODUCER,
                "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/SchemaDatasetFacet.json",
                "fields": [{"name": c, "type": t} for c, t, _ in columns],
            }
            out_facets["columnLineage"] = {
                "_producer": OL_PRODUCER,
                "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json",
                "fields": {
                    c: {
                        "inputFields": [
                            {
                                "namespace": namespace,
                                "name": s.rsplit(".", 1)[0],
                                "field": s.rsplit(".", 1)[1],
                            }
                            for s in sources
                        ]
                    }
                    for c, _, sources in columns
                },
            }
        outputs.append({"namespace": namespace, "name": output, "facets": out_facets})
    end_event = {
        **start_event,
        "eventTime": end,
        "eventType": "FAIL" if failure else "COMPLETE",
        "run": {"runId": run_id, "facets": end_facets},
        "inputs": [
            {
                "namespace": namespace,
                "name": name,
                "facets": {
                    "schema": {
                        "_producer": OL_PRODUCER,
                        "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/SchemaDatasetFacet.json",
                        "fields": [{"name": c} for c in cols],
                    }
                },
            }
            for name, cols in inputs.items()
        ],
        "outputs": outputs,
    }
    return [start_event, end_event]
