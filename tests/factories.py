"""Plain builders of OpenLineage events for tests."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

PRODUCER = "https://example.com/headwater-tests"
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
T0 = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)


def at(minutes: float) -> str:
    """An RFC 3339 time ``minutes`` after T0."""
    return (T0 + dt.timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def dataset(
    name: str,
    namespace: str = "warehouse",
    fields: list[str | tuple[str, str]] | None = None,
    column_lineage: dict[str, list[tuple[str, str, str]]] | None = None,
    symlinks: list[tuple[str, str, str]] | None = None,
    **facets: Any,
) -> dict[str, Any]:
    """A dataset; ``fields`` as names or (name, type); column_lineage as out -> [(ns, name, field)]."""
    all_facets: dict[str, Any] = dict(facets)
    if fields is not None:
        all_facets["schema"] = {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json",
            "fields": [
                {"name": f, "type": "string"} if isinstance(f, str) else {"name": f[0], "type": f[1]}
                for f in fields
            ],
        }
    if column_lineage is not None:
        all_facets["columnLineage"] = {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json",
            "fields": {
                out: {
                    "inputFields": [
                        {
                            "namespace": ns,
                            "name": n,
                            "field": f,
                            "transformations": [{"type": "DIRECT", "subtype": "IDENTITY"}],
                        }
                        for ns, n, f in sources
                    ]
                }
                for out, sources in column_lineage.items()
            },
        }
    if symlinks is not None:
        all_facets["symlinks"] = {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/SymlinksDatasetFacet.json",
            "identifiers": [{"namespace": ns, "name": n, "type": t} for ns, n, t in symlinks],
        }
    return {"namespace": namespace, "name": name, "facets": all_facets}


def run_event(
    job: str,
    event_type: str = "COMPLETE",
    *,
    run_id: str | uuid.UUID | None = None,
    namespace: str = "pipelines",
    inputs: list[dict[str, Any] | str] | None = None,
    outputs: list[dict[str, Any] | str] | None = None,
    time: str | float = 0,
    run_facets: dict[str, Any] | None = None,
    job_facets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A RunEvent; datasets may be given as plain names (namespace 'warehouse')."""
    return {
        "eventType": event_type,
        "eventTime": at(time) if isinstance(time, int | float) else time,
        "producer": PRODUCER,
        "schemaURL": SCHEMA_URL,
        "run": {"runId": str(run_id or uuid.uuid4()), "facets": run_facets or {}},
        "job": {"namespace": namespace, "name": job, "facets": job_facets or {}},
        "inputs": [dataset(d) if isinstance(d, str) else d for d in inputs or []],
        "outputs": [dataset(d) if isinstance(d, str) else d for d in outputs or []],
    }


def sql_facet(query: str) -> dict[str, Any]:
    return {
        "sql": {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/SQLJobFacet.json",
            "query": query,
        }
    }


def parent_facet(run_id: str | uuid.UUID, job: str, namespace: str = "pipelines") -> dict[str, Any]:
    return {
        "parent": {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/ParentRunFacet.json",
            "run": {"runId": str(run_id)},
            "job": {"namespace": namespace, "name": job},
        }
    }


def job_run(
    job: str,
    *,
    inputs: list[Any],
    outputs: list[Any],
    start: float = 0,
    end: float = 1,
    run_id: uuid.UUID | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """START (with inputs) and COMPLETE (with outputs) of one run, as most integrations send them."""
    run_id = run_id or uuid.uuid4()
    return [
        run_event(job, "START", run_id=run_id, inputs=inputs, time=start, **kwargs),
        run_event(job, "COMPLETE", run_id=run_id, outputs=outputs, time=end, **kwargs),
    ]


def rid(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"headwater-tests/{name}")


def mixed_history() -> list[dict[str, Any]]:
    """Spark-shaped runs with parents, schema and column lineage, a changed job, a failure, a tie."""
    app = rid("app")
    parent = parent_facet(app, "app")
    orders_v1 = dataset(
        "orders",
        fields=[("id", "int"), ("amount", "double")],
        column_lineage={
            "id": [("warehouse", "raw_orders", "id")],
            "amount": [("warehouse", "raw_orders", "amount")],
        },
    )
    orders_v2 = dataset(
        "orders",
        fields=[("id", "int"), ("amount", "double"), ("currency", "string")],
        column_lineage={
            "id": [("warehouse", "raw_orders", "id")],
            "currency": [("warehouse", "rates", "code")],
        },
    )
    raw = dataset(
        "raw_orders",
        fields=["id", "amount"],
        symlinks=[("hive://metastore", "sales.raw_orders", "TABLE")],
    )
    events = [run_event("app", "START", run_id=app, time=0)]
    events += job_run(
        "app.load_orders",
        inputs=[raw],
        outputs=[orders_v1],
        start=1,
        end=2,
        run_id=rid("load-1"),
        run_facets=parent,
    )
    events += job_run(
        "report",
        inputs=["orders", "customers"],
        outputs=["daily"],
        start=3,
        end=4,
        run_id=rid("report-1"),
        job_facets=sql_facet("SELECT * FROM orders JOIN customers"),
    )
    # The same eventTime in two jobs: archive order decides.
    events += job_run(
        "app.load_orders",
        inputs=[raw, "rates"],
        outputs=[orders_v2],
        start=5,
        end=6,
        run_id=rid("load-2"),
        run_facets=parent,
    )
    events += job_run(
        "audit", inputs=["orders"], outputs=["audit_log"], start=5, end=7, run_id=rid("audit-1")
    )
    # The report no longer reads customers: its edge is closed.
    events += job_run(
        "report",
        inputs=["orders"],
        outputs=["daily"],
        start=8,
        end=9,
        run_id=rid("report-2"),
        job_facets=sql_facet("SELECT * FROM orders"),
    )
    failed = run_event(
        "report",
        "FAIL",
        run_id=rid("report-3"),
        inputs=["orders"],
        time=11,
        run_facets={
            "errorMessage": {
                "_producer": PRODUCER,
                "_schemaURL": "x",
                "message": "boom",
                "programmingLanguage": "python",
            }
        },
    )
    events += [run_event("report", "START", run_id=rid("report-3"), inputs=["orders"], time=10), failed]
    events.append(
        {
            "eventTime": at(12),
            "producer": PRODUCER,
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
            "dataset": dataset("daily", fields=[("day", "date"), ("total", "double")]),
        }
    )
    events.append(run_event("app", "COMPLETE", run_id=app, time=13))
    # Arrival order is not eventTime order: a COMPLETE listed before its START.
    late = job_run(
        "cleanup",
        inputs=["audit_log"],
        outputs=["audit_archive"],
        start=14,
        end=15,
        run_id=rid("cleanup"),
    )
    events += [late[1], late[0]]
    events.append(events[3])  # a retried delivery: the same event twice
    return events
