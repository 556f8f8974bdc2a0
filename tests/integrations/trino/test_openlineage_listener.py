"""Trino's OpenLineage event listener posting to /api/v1/lineage: table and column lineage."""

from __future__ import annotations

import pytest

from tests.integrations.trino.events import TRINO, ol_examples, ol_listener_run
from tests.integrations.trino.test_endpoint import column_edges, table_edges

pytestmark = pytest.mark.db

QUERY_ID = "20250601_101500_00042_abcde"


async def post_all(client, events):
    for event in events:
        response = await client.post("/api/v1/lineage", json=event)
        assert response.status_code == 201, response.text
        assert "warnings" not in response.json(), response.json()


async def test_shared_examples_give_table_and_column_lineage(client, conn):
    await post_all(client, ol_examples())
    run = await conn.fetchrow(
        "SELECT r.current_state, r.started_at, r.ended_at, r.nominal_start_time, r.facets, j.namespace, j.name"
        " FROM runs r JOIN jobs j USING (job_uuid)"
    )
    assert (run["current_state"], run["namespace"], run["name"]) == ("COMPLETE", TRINO, QUERY_ID)
    assert run["started_at"].isoformat() == "2025-06-01T10:15:00.123000+00:00"
    assert run["ended_at"].isoformat() == "2025-06-01T10:15:03.027000+00:00"
    assert {"trino_metadata", "trino_query_context", "trino_query_statistics"} <= set(run["facets"])
    assert await table_edges(conn) == [
        (f"{TRINO}:{QUERY_ID}", f"{TRINO}:hive.sales.daily_revenue", "WRITE"),
        (f"{TRINO}:{QUERY_ID}", f"{TRINO}:tpch.tiny.customer", "READ"),
        (f"{TRINO}:{QUERY_ID}", f"{TRINO}:tpch.tiny.orders", "READ"),
    ]
    edges = await column_edges(conn)
    reported = [e for e in edges if not e[3]]
    direct = [e[:2] for e in reported if e[2] != "INDIRECT"]
    assert direct == [
        ("hive.sales.daily_revenue.mktsegment", "tpch.tiny.customer.mktsegment"),
        ("hive.sales.daily_revenue.orderdate", "tpch.tiny.orders.orderdate"),
        ("hive.sales.daily_revenue.revenue", "tpch.tiny.orders.totalprice"),
    ]
    # The dataset-level entries (join keys) apply to every output column, as indirect inputs.
    indirect = {e[:2] for e in reported if e[2] == "INDIRECT"}
    assert ("hive.sales.daily_revenue.revenue", "tpch.tiny.customer.custkey") in indirect
    assert ("hive.sales.daily_revenue.orderdate", "tpch.tiny.orders.custkey") in indirect
    source = await conn.fetchval(
        "SELECT source_name FROM datasets WHERE name = 'hive.sales.daily_revenue'"
    )
    assert source == "hive.sales"


async def test_column_lineage_follows_queries_through_tables(client, conn):
    """Two INSERTs chained through a table: walk column lineage from the last output back."""
    await post_all(
        client,
        ol_listener_run(
            "INSERT INTO iceberg.stg.orders SELECT id, amount * fx AS amount_eur FROM iceberg.raw.orders",
            query_id="q_stage",
            inputs={"iceberg.raw.orders": ["id", "amount", "fx"]},
            output="iceberg.stg.orders",
            columns=[
                ("id", "bigint", ["iceberg.raw.orders.id"]),
                ("amount_eur", "double", ["iceberg.raw.orders.amount", "iceberg.raw.orders.fx"]),
            ],
        ),
    )
    await post_all(
        client,
        ol_listener_run(
            "INSERT INTO iceberg.mart.revenue SELECT sum(amount_eur) AS revenue FROM iceberg.stg.orders",
            query_id="q_mart",
            inputs={"iceberg.stg.orders": ["amount_eur"]},
            output="iceberg.mart.revenue",
            columns=[("revenue", "double", ["iceberg.stg.orders.amount_eur"])],
            start="2025-06-01T12:10:00.000Z",
            end="2025-06-01T12:10:02.000Z",
        ),
    )
    origins = await conn.fetch(
        """
        WITH RECURSIVE walk(dataset_uuid, field) AS (
            SELECT dataset_uuid, 'revenue' FROM datasets WHERE name = 'iceberg.mart.revenue'
            UNION
            SELECT c.input_dataset_uuid, c.input_field FROM column_lineage c
            JOIN walk w ON c.output_dataset_uuid = w.dataset_uuid AND c.output_field = w.field
            WHERE c.valid_to IS NULL AND NOT c.superseded AND c.transformation_type IS DISTINCT FROM 'INDIRECT'
        )
        SELECT d.name || '.' || w.field FROM walk w JOIN datasets d USING (dataset_uuid) ORDER BY 1
        """
    )
    assert [r[0] for r in origins] == [
        "iceberg.mart.revenue.revenue",
        "iceberg.raw.orders.amount",
        "iceberg.raw.orders.fx",
        "iceberg.stg.orders.amount_eur",
    ]
    jobs = await conn.fetch("SELECT name FROM jobs ORDER BY name")
    assert [j["name"] for j in jobs] == ["q_mart", "q_stage"]


async def test_custom_job_name_format_and_namespace(client, conn):
    await post_all(
        client,
        ol_listener_run(
            "INSERT INTO memory.default.t SELECT a FROM memory.default.s",
            inputs={"memory.default.s": ["a"]},
            output="memory.default.t",
            columns=[("a", "bigint", ["memory.default.s.a"])],
            job_namespace="trino-prod",
            job_name="20250601_120000_00001_abcde-etl-airflow-10.0.0.9-nightly",
        ),
    )
    job = await conn.fetchrow("SELECT namespace, name FROM jobs")
    assert tuple(job) == ("trino-prod", "20250601_120000_00001_abcde-etl-airflow-10.0.0.9-nightly")
    namespaces = await conn.fetch("SELECT DISTINCT namespace FROM datasets")
    assert [n[0] for n in namespaces] == [TRINO]


async def test_failed_query_reports_a_failed_run_with_its_datasets(client, conn):
    await post_all(
        client,
        ol_listener_run(
            "INSERT INTO hive.sales.t SELECT a FROM hive.sales.s",
            inputs={"hive.sales.s": ["a"]},
            output="hive.sales.t",
            failure="Access Denied: Cannot insert into table",
        ),
    )
    run = await conn.fetchrow("SELECT current_state, error_message FROM runs")
    assert tuple(run) == ("FAIL", "Access Denied: Cannot insert into table")
    assert len(await table_edges(conn)) == 2


async def test_ddl_statement_is_a_run_without_datasets(client, conn):
    await post_all(client, ol_listener_run("CREATE SCHEMA hive.new_schema", inputs={}))
    assert await conn.fetchval("SELECT current_state FROM runs") == "COMPLETE"
    assert await conn.fetchval("SELECT count(*) FROM datasets") == 0


async def test_output_without_column_lineage_gets_it_from_the_sql(client, conn):
    """A version or table type without column lineage: the sql facet (Trino dialect) fills it in."""
    await post_all(
        client,
        ol_listener_run(
            "INSERT INTO hive.mart.t SELECT o.id, upper(c.name) AS name FROM hive.sales.orders o"
            " JOIN hive.sales.customers c ON o.cid = c.id",
            inputs={"hive.sales.orders": ["id", "cid"], "hive.sales.customers": ["id", "name"]},
            output="hive.mart.t",
        ),
    )
    direct = [e for e in await column_edges(conn) if e[2] != "INDIRECT"]
    assert direct == [
        ("hive.mart.t.id", "hive.sales.orders.id", "DIRECT", True),
        ("hive.mart.t.name", "hive.sales.customers.name", "DIRECT", True),
    ]


async def test_ctas_creates_the_output_with_its_schema(client, conn):
    await post_all(
        client,
        ol_listener_run(
            "CREATE TABLE hive.mart.nations AS SELECT nationkey, name FROM tpch.tiny.nation",
            inputs={"tpch.tiny.nation": ["nationkey", "name"]},
            output="hive.mart.nations",
            columns=[
                ("nationkey", "bigint", ["tpch.tiny.nation.nationkey"]),
                ("name", "varchar(25)", ["tpch.tiny.nation.name"]),
            ],
        ),
    )
    fields = await conn.fetch(
        "SELECT f.name, f.type FROM dataset_fields f JOIN datasets d USING (dataset_uuid)"
        " WHERE d.name = 'hive.mart.nations' ORDER BY position"
    )
    assert [tuple(f) for f in fields] == [("nationkey", "bigint"), ("name", "varchar(25)")]
