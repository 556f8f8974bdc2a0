"""Runs, versions and identities built from events that arrive out of order and more than once."""

from __future__ import annotations

import uuid

import pytest

from tests.client import post_all
from tests.factories import at, dataset, job_run, parent_facet, run_event, sql_facet

pytestmark = pytest.mark.db


async def run_row(conn, run_id):
    return await conn.fetchrow("SELECT * FROM runs WHERE run_uuid = $1", run_id)


async def test_duplicate_event_is_noop(client, conn):
    event = run_event("load", outputs=["orders"])
    await post_all(client, [event, event])
    second = await client.post("/api/v1/lineage", json=event)
    assert (second.status_code, second.json()["status"]) == (201, "duplicate")
    counts = await conn.fetchrow(
        "SELECT (SELECT count(*) FROM raw_events) AS raw, (SELECT count(*) FROM run_states) AS states,"
        " (SELECT count(*) FROM dataset_versions) AS versions, (SELECT count(*) FROM change_log) AS changes"
    )
    assert dict(counts) == {"raw": 1, "states": 1, "versions": 1, "changes": 5}


async def test_run_state_follows_event_time_and_terminal_wins(client, conn):
    run_id = uuid.uuid4()
    start = run_event("load", "START", run_id=run_id, inputs=["raw"], time=0)
    running = run_event("load", "RUNNING", run_id=run_id, time=1)
    complete = run_event("load", "COMPLETE", run_id=run_id, outputs=["orders"], time=2)
    await post_all(client, [complete, start, running])  # arrival order differs from eventTime order
    run = await run_row(conn, run_id)
    assert (run["current_state"], run["started_at"].isoformat(), run["ended_at"].isoformat()) == (
        "COMPLETE",
        at(0).replace("Z", "+00:00"),
        at(2).replace("Z", "+00:00"),
    )
    # A late START (even with a later eventTime) never overwrites a terminal state.
    await post_all(client, [run_event("load", "START", run_id=run_id, time=5)])
    assert (await run_row(conn, run_id))["current_state"] == "COMPLETE"
    states = await conn.fetch(
        "SELECT state FROM run_states WHERE run_uuid = $1 ORDER BY event_time", run_id
    )
    assert [s["state"] for s in states] == ["START", "RUNNING", "COMPLETE", "START"]


async def test_run_datasets_are_merged_across_events(client, conn):
    run_id = uuid.uuid4()
    await post_all(
        client,
        [
            run_event("load", "START", run_id=run_id, inputs=["raw"], time=0),
            run_event("load", "RUNNING", run_id=run_id, inputs=["lookup"], time=1),
            run_event("load", "COMPLETE", run_id=run_id, outputs=["orders"], time=2),
        ],
    )
    rows = await conn.fetch(
        "SELECT d.name, rd.direction FROM run_datasets rd JOIN datasets d USING (dataset_uuid)"
        " WHERE rd.run_uuid = $1 ORDER BY 2, 1",
        run_id,
    )
    assert [(r["name"], r["direction"]) for r in rows] == [
        ("lookup", "INPUT"),
        ("raw", "INPUT"),
        ("orders", "OUTPUT"),
    ]
    version = await conn.fetchrow(
        "SELECT array_length(v.input_uuids, 1) AS inputs, array_length(v.output_uuids, 1) AS outputs"
        " FROM runs r JOIN job_versions v ON v.job_version_uuid = r.job_version_uuid WHERE r.run_uuid = $1",
        run_id,
    )
    assert dict(version) == {"inputs": 2, "outputs": 1}


async def test_failed_run_keeps_error_message(client, conn):
    run_id = uuid.uuid4()
    error = {
        "errorMessage": {
            "_producer": "x",
            "_schemaURL": "y",
            "message": "boom",
            "programmingLanguage": "python",
            "stackTrace": "Traceback...",
        }
    }
    await post_all(client, [run_event("load", "FAIL", run_id=run_id, run_facets=error, time=1)])
    run = await run_row(conn, run_id)
    assert (run["current_state"], run["error_message"], run["error_language"]) == (
        "FAIL",
        "boom",
        "python",
    )


async def test_job_version_changes_only_with_inputs_outputs_or_code(client, conn):
    await post_all(client, job_run("report", inputs=["a"], outputs=["r"], start=0, end=1))
    await post_all(client, job_run("report", inputs=["a"], outputs=["r"], start=2, end=3))
    assert await conn.fetchval("SELECT count(*) FROM job_versions") == 1
    await post_all(client, job_run("report", inputs=["a", "b"], outputs=["r"], start=4, end=5))
    assert await conn.fetchval("SELECT count(*) FROM job_versions") == 2
    await post_all(
        client,
        job_run(
            "report",
            inputs=["a", "b"],
            outputs=["r"],
            start=6,
            end=7,
            job_facets=sql_facet("SELECT * FROM a JOIN b USING (id)"),
        ),
    )
    assert await conn.fetchval("SELECT count(*) FROM job_versions") == 3
    runs = await conn.fetch("SELECT job_version_uuid FROM runs ORDER BY started_at")
    assert len({r["job_version_uuid"] for r in runs}) == 3
    current = await conn.fetchval(
        "SELECT v.code_hash IS NOT NULL FROM jobs j JOIN job_versions v ON v.job_version_uuid = j.current_version_uuid"
    )
    assert current is True


async def test_dataset_version_per_schema_and_each_write_keeps_its_run(client, conn):
    runs = [uuid.uuid4() for _ in range(3)]
    schemas = [["id", "amount"], ["id", "amount"], ["id", "amount", "currency"]]
    for i, (run_id, fields) in enumerate(zip(runs, schemas, strict=True)):
        await post_all(
            client,
            [run_event("load", run_id=run_id, outputs=[dataset("orders", fields=fields)], time=i)],
        )
    versions = await conn.fetch("SELECT created_by_run_uuid FROM dataset_versions ORDER BY created_at")
    assert [v["created_by_run_uuid"] for v in versions] == [runs[0], runs[2]]
    writes = await conn.fetch(
        "SELECT rd.run_uuid, v.created_by_run_uuid FROM run_datasets rd"
        " JOIN dataset_versions v USING (dataset_version_uuid) WHERE rd.direction = 'OUTPUT' ORDER BY rd.first_seen_at"
    )
    assert [(w["run_uuid"], w["created_by_run_uuid"]) for w in writes] == [
        (runs[0], runs[0]),
        (runs[1], runs[0]),
        (runs[2], runs[2]),
    ]
    fields = await conn.fetch("SELECT name FROM dataset_fields ORDER BY position")
    assert [f["name"] for f in fields] == ["id", "amount", "currency"]


async def test_older_schema_arriving_late_does_not_replace_newer(client, conn):
    await post_all(
        client,
        [
            run_event("load", outputs=[dataset("orders", fields=["id", "amount", "currency"])], time=5),
            run_event("load", outputs=[dataset("orders", fields=["id"])], time=1),
        ],
    )
    fields = await conn.fetch("SELECT name FROM dataset_fields ORDER BY position")
    assert [f["name"] for f in fields] == ["id", "amount", "currency"]


@pytest.mark.parametrize("hashed", [True, False], ids=["schema hashed", "schema set before hashes"])
async def test_schema_change_is_logged_with_its_diff(client, conn, hashed):
    first = [("id", "int"), ("amount", "int")]
    await post_all(client, [run_event("load", outputs=[dataset("orders", fields=first)], time=0)])
    if not hashed:  # as migration 0092 leaves a schema stored before it
        await conn.execute("UPDATE datasets SET fields_hash = NULL")
    fields_at = await conn.fetchval("SELECT fields_at FROM datasets WHERE name = 'orders'")
    await post_all(client, [run_event("load", outputs=[dataset("orders", fields=first)], time=0.5)])
    # The same schema again: nothing rewritten.
    assert await conn.fetchval("SELECT fields_at FROM datasets WHERE name = 'orders'") == fields_at
    await post_all(
        client,
        [
            run_event(
                "load",
                outputs=[
                    dataset("orders", fields=[("id", "int"), ("amount", "decimal"), ("ccy", "string")])
                ],
                time=1,
            ),
        ],
    )
    details = await conn.fetchval("SELECT details FROM change_log WHERE kind = 'SCHEMA_CHANGED'")
    assert await conn.fetchval("SELECT fields_hash IS NOT NULL FROM datasets WHERE name = 'orders'")
    assert details == {
        "added": [{"name": "ccy", "type": "string"}],
        "removed": [],
        "retyped": [{"name": "amount", "previousType": "int", "type": "decimal"}],
    }


async def test_symlinks_join_storage_path_and_table_name(client, conn):
    spark_output = dataset(
        "/warehouse/sales.db/orders",
        namespace="s3://lake",
        symlinks=[("hive://metastore", "sales.orders", "TABLE")],
    )
    await post_all(
        client,
        [
            run_event("spark_load", outputs=[spark_output], time=0),
            run_event(
                "report",
                inputs=[dataset("sales.orders", namespace="hive://metastore")],
                outputs=["kpis"],
                time=1,
            ),
            run_event(
                "audit", inputs=[dataset("/warehouse/sales.db/orders", namespace="s3://lake")], time=2
            ),
        ],
    )
    datasets = await conn.fetch("SELECT namespace, name FROM datasets ORDER BY name")
    assert [(d["namespace"], d["name"]) for d in datasets] == [
        ("warehouse", "kpis"),
        ("hive://metastore", "sales.orders"),
    ]
    aliases = await conn.fetch(
        "SELECT namespace, name, alias_type FROM dataset_aliases ORDER BY namespace"
    )
    assert [tuple(a) for a in aliases] == [
        ("hive://metastore", "sales.orders", "TABLE"),
        ("s3://lake", "/warehouse/sales.db/orders", "REPORTED"),
        ("warehouse", "kpis", "REPORTED"),
    ]


async def test_parent_job_and_run_are_linked(client, conn):
    app_run = uuid.uuid4()
    child = run_event("app.insert.orders", run_facets=parent_facet(app_run, "app"), outputs=["orders"])
    await post_all(client, [child, run_event("app", run_id=app_run, time=2)])
    row = await conn.fetchrow(
        "SELECT p.name AS parent_job, r.parent_run_uuid FROM jobs j JOIN jobs p ON p.job_uuid = j.parent_job_uuid"
        " JOIN runs r ON r.job_uuid = j.job_uuid WHERE j.name = 'app.insert.orders'"
    )
    assert dict(row) == {"parent_job": "app", "parent_run_uuid": app_run}


async def test_column_lineage_is_stored(client, conn):
    output = dataset(
        "totals",
        fields=["customer_id", "total"],
        column_lineage={
            "customer_id": [("warehouse", "customers", "id")],
            "total": [("warehouse", "orders", "amount")],
        },
    )
    await post_all(client, [run_event("agg", inputs=["customers", "orders"], outputs=[output])])
    rows = await conn.fetch(
        "SELECT o.name || '.' || c.output_field AS output, i.name || '.' || c.input_field AS input,"
        " c.transformation_type, c.transformation_subtype FROM column_lineage c"
        " JOIN datasets o ON o.dataset_uuid = c.output_dataset_uuid"
        " JOIN datasets i ON i.dataset_uuid = c.input_dataset_uuid ORDER BY 1"
    )
    assert [tuple(r) for r in rows] == [
        ("totals.customer_id", "customers.id", "DIRECT", "IDENTITY"),
        ("totals.total", "orders.amount", "DIRECT", "IDENTITY"),
    ]


async def test_dataset_and_job_events(client, conn):
    dataset_event = {
        "eventTime": at(0),
        "producer": "p",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
        "dataset": dataset("dim_customers", fields=["id", "name"]),
    }
    job_event = {
        "eventTime": at(1),
        "producer": "p",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent",
        "job": {"namespace": "pipelines", "name": "static_job"},
        "inputs": [dataset("dim_customers")],
        "outputs": [dataset("mart")],
    }
    await post_all(client, [dataset_event, job_event])
    fields = await conn.fetch("SELECT name FROM dataset_fields ORDER BY position")
    assert [f["name"] for f in fields] == ["id", "name"]
    edges = await conn.fetchval("SELECT count(*) FROM lineage_edges WHERE valid_to IS NULL")
    assert edges == 2
    assert await conn.fetchval("SELECT count(*) FROM job_versions") == 1


async def test_job_version_change_is_logged_with_edges_added_and_removed(client, conn):
    await post_all(
        client, job_run("report", inputs=["orders", "legacy"], outputs=["kpis"], start=0, end=1)
    )
    await post_all(client, job_run("report", inputs=["orders", "fx"], outputs=["kpis"], start=2, end=3))
    changes = await conn.fetch(
        "SELECT details FROM change_log WHERE kind = 'JOB_VERSION_CHANGED' ORDER BY change_id"
    )
    first, second = (c["details"] for c in changes)
    assert first["previousVersion"] is None
    assert second["previousVersion"] == first["version"]
    assert second["addedEdges"] == [
        {"origin": "dataset:warehouse:fx", "destination": "job:pipelines:report"}
    ]
    assert second["removedEdges"] == [
        {"origin": "dataset:warehouse:legacy", "destination": "job:pipelines:report"}
    ]


async def test_a_read_does_not_redefine_a_known_schema(client, conn):
    """Readers such as Trino report only the columns they read, without types."""
    await post_all(
        client,
        [
            run_event(
                "load",
                outputs=[dataset("orders", fields=[("id", "int"), ("amount", "decimal")])],
                time=0,
            ),
            run_event("report", inputs=[dataset("orders", fields=["amount"])], outputs=["kpis"], time=1),
            run_event("audit", inputs=[dataset("unknown_so_far", fields=[("id", "int")])], time=2),
        ],
    )
    fields = await conn.fetch(
        "SELECT d.name, f.name AS field, f.type FROM dataset_fields f JOIN datasets d USING (dataset_uuid)"
        " ORDER BY 1, f.position"
    )
    assert [tuple(f) for f in fields] == [
        ("orders", "id", "int"),
        ("orders", "amount", "decimal"),
        ("unknown_so_far", "id", "int"),
    ]
