"""Lineage derived from a job's SQL facet, beside (or instead of) what the producer reports."""

from __future__ import annotations

import pytest

from tests.factories import dataset, run_event, sql_facet

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
    assert warning["message"].startswith("SQL lineage not derived: Line 1, Col")
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
