"""Lineage derived from a job's SQL facet, beside (or instead of) what the producer reports."""

from __future__ import annotations

import asyncpg
import pytest

from tests.client import post_all
from tests.db.test_batched_ingest import ingest
from tests.factories import dataset, parent_facet, rid, run_event, sql_facet
from tests.snapshot import model_snapshot

pytestmark = pytest.mark.db

PG = "postgres://db:5432"
INSERT = (
    "INSERT INTO customer_totals (customer_id, name, total) SELECT c.id, c.name, SUM(o.amount) "
    "FROM orders o JOIN customers c ON o.customer_id = c.id GROUP BY c.id, c.name"
)


async def column_edges(conn):
    rows = await conn.fetch(
        "SELECT o.name || '.' || c.output_field AS output, i.name || '.' || c.input_field AS input,"
        " c.derived, c.superseded FROM column_lineage c"
        " JOIN datasets o ON o.dataset_uuid = c.output_dataset_uuid"
        " JOIN datasets i ON i.dataset_uuid = c.input_dataset_uuid"
        " WHERE c.transformation_type IS DISTINCT FROM 'INDIRECT' ORDER BY 1, 2, 3"
    )
    return [tuple(r) for r in rows]


async def test_sql_gives_column_lineage_when_producer_has_none(client, conn):
    event = run_event(
        "airflow_dag.insert_totals",
        job_facets=sql_facet(INSERT),
        inputs=[dataset("shop.public.orders", PG), dataset("shop.public.customers", PG)],
        outputs=[dataset("shop.public.customer_totals", PG)],
    )
    assert (await client.post("/api/v1/lineage", json=event)).status_code == 201
    assert await column_edges(conn) == [
        ("shop.public.customer_totals.customer_id", "shop.public.customers.id", True, False),
        ("shop.public.customer_totals.name", "shop.public.customers.name", True, False),
        ("shop.public.customer_totals.total", "shop.public.orders.amount", True, False),
    ]


async def test_the_schemas_the_event_reports_expand_star_and_place_bare_columns(client, conn):
    """Without the tables' columns, `SELECT *` and a column named without its table in a join have
    no column lineage; the event's schema facets give them."""
    copy = run_event(
        "dag.copy",
        job_facets=sql_facet("INSERT INTO orders_copy SELECT * FROM orders"),
        inputs=[dataset("shop.public.orders", PG, fields=["id", "customer_id", "amount"])],
        outputs=[dataset("shop.public.orders_copy", PG, fields=["order_id", "customer", "amount"])],
    )
    joined = run_event(
        "dag.join",
        job_facets=sql_facet(
            "CREATE TABLE wide AS SELECT amount, name FROM orders o JOIN customers c ON o.customer_id = c.id"
        ),
        inputs=[
            dataset("shop.public.orders", PG, fields=["id", "customer_id", "amount"]),
            dataset("shop.public.customers", PG, fields=["id", "name"]),
        ],
        outputs=[dataset("shop.public.wide", PG)],
    )
    await post_all(client, [copy, joined])
    assert await column_edges(conn) == [
        # INSERT … SELECT *: by position, into the target's columns.
        ("shop.public.orders_copy.amount", "shop.public.orders.amount", True, False),
        ("shop.public.orders_copy.customer", "shop.public.orders.customer_id", True, False),
        ("shop.public.orders_copy.order_id", "shop.public.orders.id", True, False),
        ("shop.public.wide.amount", "shop.public.orders.amount", True, False),
        ("shop.public.wide.name", "shop.public.customers.name", True, False),
    ]


def totals_event(output_names: tuple[str, str, str]) -> dict:
    """The INSERT job, with the producer's column lineage naming the three outputs as given."""
    customer_id, name, total = output_names
    output = dataset(
        "shop.public.customer_totals",
        PG,
        fields=["customer_id", "name", "total"],
        column_lineage={
            customer_id: [(PG, "shop.public.customers", "id")],
            name: [(PG, "shop.public.customers", "name")],
            total: [(PG, "shop.public.orders", "amount")],
        },
    )
    return run_event(
        "dag.task",
        job_facets=sql_facet(INSERT),
        inputs=[dataset("shop.public.orders", PG), dataset("shop.public.customers", PG)],
        outputs=[output],
    )


async def test_producer_lineage_naming_projections_loses_to_sql(client, conn):
    """Airflow's provider names outputs by SELECT projections (id, _0), not the target columns."""
    event = totals_event(("id", "name", "_0"))
    assert (await client.post("/api/v1/lineage", json=event)).status_code == 201
    edges = await column_edges(conn)
    assert [e for e in edges if not e[3]] == [
        ("shop.public.customer_totals.customer_id", "shop.public.customers.id", True, False),
        ("shop.public.customer_totals.name", "shop.public.customers.name", True, False),
        ("shop.public.customer_totals.total", "shop.public.orders.amount", True, False),
    ]
    assert ("shop.public.customer_totals._0", "shop.public.orders.amount", False, True) in edges


def dags_test_events() -> list[dict]:
    """What Airflow's provider sends for the example DAG under `airflow dags test`, in its order.

    The SQL task reports the schema of customer_totals and column lineage named after the SELECT
    projections (id, name, _0); the Python task then re-sends the same INSERT as a child QUERY job
    ``….report.query.1`` whose output has the same column lineage but no schema facet.
    """
    projections = {
        "id": [(PG, "shop.public.customers", "id")],
        "name": [(PG, "shop.public.customers", "name")],
        "_0": [(PG, "shop.public.orders", "amount")],
    }
    tables = [
        dataset("shop.public.customers", PG, fields=["id", "name"]),
        dataset("shop.public.orders", PG, fields=["id", "customer_id", "amount", "ordered_at"]),
    ]
    totals = dataset(
        "shop.public.customer_totals",
        PG,
        fields=["customer_id", "name", "total"],
        column_lineage=projections,
    )
    dag = parent_facet(rid("dag"), "customer_totals")
    report = parent_facet(rid("report"), "customer_totals.report")
    events = [
        run_event(
            "customer_totals.load_customer_totals",
            kind,
            run_id=rid("load"),
            time=minute,
            inputs=tables,
            outputs=[totals],
            run_facets=dag,
            job_facets=sql_facet(INSERT),
        )
        for kind, minute in (("START", 0), ("COMPLETE", 1))
    ]
    events.append(
        run_event("customer_totals.report", "START", run_id=rid("report"), time=2, run_facets=dag)
    )
    events += [
        run_event(
            "customer_totals.report.query.1",
            kind,
            run_id=rid("query"),
            time=3,
            inputs=[dataset("shop.public.customers", PG), dataset("shop.public.orders", PG)],
            outputs=[dataset("shop.public.customer_totals", PG, column_lineage=projections)],
            run_facets=report,
            job_facets=sql_facet(INSERT),
        )
        for kind in ("START", "COMPLETE")
    ]
    events.append(
        run_event("customer_totals.report", "COMPLETE", run_id=rid("report"), time=4, run_facets=dag)
    )
    events.append(run_event("customer_totals", "COMPLETE", run_id=rid("dag"), time=5))
    return events


@pytest.mark.parametrize("batched", [False, True], ids=["one by one", "one array"])
async def test_a_resent_query_without_schema_loses_to_sql_as_its_parent_task_does(client, conn, batched):
    """The schema customer_totals already has (from the SQL task, earlier in the same batch too)
    decides for the re-sent query: its reported edges name no column of the table."""
    events = dags_test_events()
    if batched:
        assert (await client.post("/api/v1/lineage", json=events)).status_code == 201
    else:
        await post_all(client, events)
    expected = [
        ("shop.public.customer_totals.customer_id", "shop.public.customers.id"),
        ("shop.public.customer_totals.name", "shop.public.customers.name"),
        ("shop.public.customer_totals.total", "shop.public.orders.amount"),
    ]
    rows = await conn.fetch(
        "SELECT j.name AS job, o.name || '.' || c.output_field AS output,"
        " i.name || '.' || c.input_field AS input, c.derived, c.superseded FROM column_lineage c"
        " JOIN jobs j USING (job_uuid)"
        " JOIN datasets o ON o.dataset_uuid = c.output_dataset_uuid"
        " JOIN datasets i ON i.dataset_uuid = c.input_dataset_uuid"
        " WHERE c.valid_to IS NULL ORDER BY 1, 2, 3, 4"
    )
    for job in ("customer_totals.load_customer_totals", "customer_totals.report.query.1"):
        edges = [tuple(r)[1:] for r in rows if r["job"] == job]
        assert [e[:2] for e in edges if not e[3]] == expected, job
        assert all(e[2] for e in edges if not e[3]), f"{job}: only derived edges are preferred"
        assert sorted(e[:2] for e in edges if e[3]) == sorted(
            [
                ("shop.public.customer_totals._0", "shop.public.orders.amount"),
                ("shop.public.customer_totals.id", "shop.public.customers.id"),
                ("shop.public.customer_totals.name", "shop.public.customers.name"),
            ]
        ), f"{job}: the reported edges are kept, superseded"

    # Through the API, the table's columns come from the SQL: for the one pair both sources name
    # (name <- name), the derived transformation (DIRECT), not the producer's (DIRECT/IDENTITY).
    response = await client.get(
        "/api/v1/column-lineage",
        params={"nodeId": f"dataset:{PG}:shop.public.customer_totals", "direction": "UPSTREAM"},
    )
    assert response.status_code == 200, response.text
    columns = {
        (
            f"{n['data']['dataset']}.{n['data']['field']}",
            f"{i['dataset']}.{i['field']}",
            tuple((t["type"], t["subtype"]) for t in i["transformations"]),
        )
        for n in response.json()["graph"]
        if n["data"]["dataset"] == "shop.public.customer_totals"
        for i in n["data"]["inputFields"]
    }
    # Exactly the table's own columns: the superseded edges into _0 and id are not lineage.
    assert sorted(columns) == [(*edge, (("DIRECT", None),)) for edge in expected]


async def column_sources(url: str) -> list[tuple]:
    """Every column edge with the source it comes from and whether it is superseded."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT j.name, o.name, c.output_field, i.name, c.input_field, c.derived, c.superseded"
            " FROM column_lineage c JOIN jobs j USING (job_uuid)"
            " JOIN datasets o ON o.dataset_uuid = c.output_dataset_uuid"
            " JOIN datasets i ON i.dataset_uuid = c.input_dataset_uuid ORDER BY 1, 2, 3, 4, 5, 6"
        )
    finally:
        await conn.close()
    return [tuple(r) for r in rows]


async def test_the_resent_query_builds_one_model_one_by_one_or_in_one_batch(make_database):
    """The stored schema the re-sent query is judged by is read in the wave after the SQL task's."""
    events = dags_test_events()
    async with make_database() as serial, make_database() as batched:
        await ingest(serial, events, batch=1)
        await ingest(batched, events, batch=len(events))
        assert await model_snapshot(batched) == await model_snapshot(serial)
        # The model snapshot leaves out which source is superseded: the very thing decided here.
        assert await column_sources(batched) == await column_sources(serial)


async def test_correct_producer_lineage_is_kept_and_derived_kept_for_comparison(client, conn):
    event = totals_event(("customer_id", "name", "total"))
    assert (await client.post("/api/v1/lineage", json=event)).status_code == 201
    edges = await column_edges(conn)
    assert [e for e in edges if not e[3]] == [
        ("shop.public.customer_totals.customer_id", "shop.public.customers.id", False, False),
        ("shop.public.customer_totals.name", "shop.public.customers.name", False, False),
        ("shop.public.customer_totals.total", "shop.public.orders.amount", False, False),
    ]
    assert len([e for e in edges if e[2] and e[3]]) == 3


async def test_sql_adds_tables_the_producer_did_not_report(client, conn):
    sql = "INSERT INTO mart.revenue SELECT o.day, SUM(o.amount) FROM stg.orders o JOIN stg.fx f ON o.ccy = f.ccy GROUP BY 1"
    event = run_event(
        "spark_app.build",
        job_facets=sql_facet(sql),
        inputs=[dataset("stg.orders", "hive://metastore")],
        outputs=[dataset("mart.revenue", "hive://metastore")],
    )
    assert (await client.post("/api/v1/lineage", json=event)).status_code == 201
    edges = await conn.fetch(
        "SELECT d.name, e.edge_type, e.derived FROM lineage_edges e JOIN datasets d USING (dataset_uuid) ORDER BY 1"
    )
    assert [tuple(e) for e in edges] == [
        ("mart.revenue", "WRITE", False),
        ("stg.fx", "READ", True),
        ("stg.orders", "READ", False),
    ]


async def test_unparseable_sql_is_a_warning_not_a_failure(client, conn):
    event = run_event(
        "dag.task",
        job_facets=sql_facet("INSERT INTO SELECT FROM WHERE ((("),
        inputs=[dataset("a", PG)],
        outputs=[dataset("b", PG)],
    )
    response = await client.post("/api/v1/lineage", json=event)
    assert response.status_code == 201
    warning = response.json()["warnings"][0]
    assert warning["path"] == "$.job.facets.sql.query"
    assert warning["message"] == (
        "SQL lineage: expected a table name but found 'WHERE' at line 1, column 25"
    )
    assert await conn.fetchval("SELECT count(*) FROM lineage_edges") == 2


async def test_sql_names_a_table_written_to_a_path_by_its_symlink(client, conn):
    """Spark writes tables to their location with a TABLE symlink; the SQL uses the table name."""
    output = dataset(
        "/warehouse/dept_totals",
        namespace="file",
        symlinks=[("file:/warehouse", "default.dept_totals", "TABLE")],
    )
    source = dataset(
        "/warehouse/emp", namespace="file", symlinks=[("file:/warehouse", "default.emp", "TABLE")]
    )
    event = run_event(
        "app.execute_insert.default_dept_totals",
        inputs=[source],
        outputs=[output],
        job_facets=sql_facet("INSERT INTO dept_totals SELECT dept, SUM(salary) FROM emp GROUP BY dept"),
    )
    assert (await client.post("/api/v1/lineage", json=event)).status_code == 201
    names = await conn.fetch("SELECT namespace, name FROM datasets ORDER BY name")
    assert [tuple(r) for r in names] == [
        ("file:/warehouse", "default.dept_totals"),
        ("file:/warehouse", "default.emp"),
    ]
