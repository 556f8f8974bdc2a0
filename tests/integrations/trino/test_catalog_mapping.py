"""A Trino catalog mapped onto the metastore: Trino's and Spark's names of one table are one dataset."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from headwater.app import create_app
from headwater.ingest.aliases import PrefixRule, load_alias_rules
from headwater.settings import Settings
from tests.factories import dataset, run_event
from tests.integrations.trino.events import TRINO, ol_listener_run, query_completed

pytestmark = pytest.mark.db

HIVE = "hive://metastore"
SPARK_PRODUCER = "https://github.com/OpenLineage/OpenLineage/tree/1.30.0/integration/spark"
TRINO_QUERY = (
    "INSERT INTO hive.sales.daily_totals SELECT o.order_date, sum(o.amount) AS total"
    " FROM hive.sales.orders o JOIN tpch.tiny.nation n ON o.nation = n.name GROUP BY 1"
)


@pytest.fixture(params=["catalogs", "prefix"])
async def mapped(request, db, database_url, tmp_path) -> AsyncIterator[AsyncTestClient[Any]]:
    """The app with the Trino catalog ``hive`` mapped to the metastore, in either rules-file form."""
    if request.param == "catalogs":
        rules = [{"trinoUri": "http://trino-coordinator:8080", "catalogs": {"hive": HIVE}}]
    else:
        rules = [
            {"namespace": TRINO, "namePrefix": "hive.", "targetNamespace": HIVE, "targetNamePrefix": ""}
        ]
    path = tmp_path / "aliases.json"
    path.write_text(json.dumps(rules))
    settings = Settings(
        database_url=database_url, alias_rules_file=path, pool_min_size=0, pool_max_size=2
    )
    async with AsyncTestClient(app=create_app(settings)) as client:
        yield client


def spark_writes_orders() -> list[dict[str, Any]]:
    """Spark staging raw orders into s3://lake/sales/orders, the metastore table sales.orders."""
    raw = dataset(
        "/raw/orders",
        namespace="s3://lake",
        fields=[("order_date", "date"), ("amount", "double")],
        symlinks=[(HIVE, "raw.orders", "TABLE")],
    )
    orders = dataset(
        "/sales/orders",
        namespace="s3://lake",
        fields=[("order_date", "date"), ("amount", "double"), ("nation", "string")],
        symlinks=[(HIVE, "sales.orders", "TABLE")],
        column_lineage={
            "order_date": [("s3://lake", "/raw/orders", "order_date")],
            "amount": [("s3://lake", "/raw/orders", "amount")],
        },
    )
    run_id = uuid.uuid4()
    events = [
        run_event(
            "stage_orders.execute_insert_into_hadoop_fs_relation_command",
            "START",
            run_id=run_id,
            namespace="spark",
            inputs=[raw],
            time=0,
        ),
        run_event(
            "stage_orders.execute_insert_into_hadoop_fs_relation_command",
            "COMPLETE",
            run_id=run_id,
            namespace="spark",
            inputs=[raw],
            outputs=[orders],
            time=1,
        ),
    ]
    for event in events:
        event["producer"] = SPARK_PRODUCER
    return events


def trino_reads_orders() -> dict[str, Any]:
    """The HTTP event listener's event of a Trino query reading hive.sales.orders."""
    return query_completed(
        TRINO_QUERY,
        query_id="20260101_130000_00007_xyzab",
        create_time=1767272400.0,  # 2026-01-01T13:00:00Z, after the Spark run
        inputs={"hive.sales.orders": ["order_date", "amount", "nation"], "tpch.tiny.nation": ["name"]},
        output="hive.sales.daily_totals",
        columns=[
            ("order_date", "date", ["hive.sales.orders.order_date"]),
            ("total", "double", ["hive.sales.orders.amount"]),
        ],
    )


async def post_lineage(client, events):
    for event in events:
        response = await client.post("/api/v1/lineage", json=event)
        assert response.status_code == 201, response.text


async def post_trino(client, event):
    response = await client.post("/api/v1/integrations/trino", json=event)
    assert response.status_code == 201, response.text
    return response.json()


async def datasets(conn):
    rows = await conn.fetch("SELECT namespace, name FROM datasets ORDER BY namespace, name")
    return [tuple(r) for r in rows]


async def column_origins(conn, name, field):
    """Every (dataset, field) a column comes from, walking column lineage across jobs."""
    rows = await conn.fetch(
        """
        WITH RECURSIVE walk(dataset_uuid, field) AS (
            SELECT dataset_uuid, $2 FROM datasets WHERE name = $1
            UNION
            SELECT c.input_dataset_uuid, c.input_field FROM column_lineage c
            JOIN walk w ON c.output_dataset_uuid = w.dataset_uuid AND c.output_field = w.field
            WHERE c.valid_to IS NULL AND NOT c.superseded AND c.transformation_type IS DISTINCT FROM 'INDIRECT'
        )
        SELECT d.namespace || ':' || d.name || '.' || w.field FROM walk w JOIN datasets d USING (dataset_uuid)
        ORDER BY 1
        """,
        name,
        field,
    )
    return [r[0] for r in rows]


async def upstream_jobs(conn, namespace, name):
    """Jobs upstream of a dataset through the current table-level edges."""
    rows = await conn.fetch(
        """
        WITH RECURSIVE up(node_id) AS (
            SELECT node_id FROM datasets WHERE namespace = $1 AND name = $2
            UNION
            SELECT e.src_node_id FROM lineage_edges e JOIN up ON e.dst_node_id = up.node_id
            WHERE e.valid_to IS NULL
        )
        SELECT j.namespace || ':' || j.name FROM jobs j JOIN up USING (node_id) ORDER BY 1
        """,
        namespace,
        name,
    )
    return [r[0] for r in rows]


async def assert_one_graph(client, conn):
    assert await datasets(conn) == [
        (HIVE, "raw.orders"),
        (HIVE, "sales.daily_totals"),
        (HIVE, "sales.orders"),
        (TRINO, "tpch.tiny.nation"),
    ]
    aliases = await conn.fetch(
        "SELECT a.namespace, a.name FROM dataset_aliases a JOIN datasets d USING (dataset_uuid)"
        " WHERE d.name = 'sales.orders' ORDER BY 1, 2"
    )
    assert [tuple(a) for a in aliases] == [
        (HIVE, "sales.orders"),
        ("s3://lake", "/sales/orders"),
        (TRINO, "hive.sales.orders"),
    ]
    assert await upstream_jobs(conn, HIVE, "sales.daily_totals") == [
        "spark:stage_orders.execute_insert_into_hadoop_fs_relation_command",
        f"{TRINO}:20260101_130000_00007_xyzab",
    ]
    assert await column_origins(conn, "sales.daily_totals", "total") == [
        f"{HIVE}:raw.orders.amount",
        f"{HIVE}:sales.daily_totals.total",
        f"{HIVE}:sales.orders.amount",
    ]


async def test_spark_then_trino_over_the_http_listener(mapped, conn):
    await post_lineage(mapped, spark_writes_orders())
    body = await post_trino(mapped, trino_reads_orders())
    assert body["job"]["namespace"] == TRINO
    await assert_one_graph(mapped, conn)


async def test_trino_then_spark(mapped, conn):
    await post_trino(mapped, trino_reads_orders())
    await post_lineage(mapped, spark_writes_orders())
    await assert_one_graph(mapped, conn)


async def test_spark_then_trino_over_the_openlineage_listener(mapped, conn):
    await post_lineage(mapped, spark_writes_orders())
    await post_lineage(
        mapped,
        ol_listener_run(
            TRINO_QUERY,
            query_id="20260101_130000_00007_xyzab",
            inputs={
                "hive.sales.orders": ["order_date", "amount", "nation"],
                "tpch.tiny.nation": ["name"],
            },
            output="hive.sales.daily_totals",
            columns=[
                ("order_date", "date", ["hive.sales.orders.order_date"]),
                ("total", "double", ["hive.sales.orders.amount"]),
            ],
            start="2026-01-01T13:00:00Z",
            end="2026-01-01T13:00:03Z",
        ),
    )
    await assert_one_graph(mapped, conn)


async def test_lineage_api_from_trinos_name_reaches_the_spark_job(mapped, conn):
    await post_lineage(mapped, spark_writes_orders())
    await post_trino(mapped, trino_reads_orders())
    response = await mapped.get(
        "/api/v1/lineage",
        params={"nodeId": f"dataset:{TRINO}:hive.sales.daily_totals", "direction": "UPSTREAM"},
    )
    assert response.status_code == 200, response.text
    ids = {node["id"] for node in response.json()["graph"]}
    assert {
        f"dataset:{HIVE}:sales.daily_totals",
        f"job:{TRINO}:20260101_130000_00007_xyzab",
        f"dataset:{HIVE}:sales.orders",
        "job:spark:stage_orders.execute_insert_into_hadoop_fs_relation_command",
        f"dataset:{HIVE}:raw.orders",
    } <= ids


async def test_without_the_mapping_the_names_stay_apart(client, conn):
    await post_lineage(client, spark_writes_orders())
    await post_trino(client, trino_reads_orders())
    names = await datasets(conn)
    assert (HIVE, "sales.orders") in names
    assert (TRINO, "hive.sales.orders") in names
    assert await upstream_jobs(conn, TRINO, "hive.sales.daily_totals") == [
        f"{TRINO}:20260101_130000_00007_xyzab"
    ]


async def test_a_trino_read_keeps_the_types_spark_reported(mapped, conn):
    await post_lineage(mapped, spark_writes_orders())
    event = trino_reads_orders()
    event["ioMetadata"]["inputs"][0]["columns"] = ["amount"]
    await post_trino(mapped, event)
    fields = await conn.fetch(
        "SELECT f.name, f.type FROM dataset_fields f JOIN datasets d USING (dataset_uuid)"
        " WHERE d.name = 'sales.orders' ORDER BY f.position"
    )
    assert [tuple(f) for f in fields] == [
        ("order_date", "date"),
        ("amount", "double"),
        ("nation", "string"),
    ]


def test_rules_file_accepts_the_catalogs_form(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(
        json.dumps(
            [
                {"trinoUri": "trino://trino:8080", "catalogs": {"hive": "hive://metastore"}},
                {"namespace": "s3://old", "targetNamespace": "s3://new"},
            ]
        )
    )
    assert load_alias_rules(path) == [
        PrefixRule("trino://trino:8080", "hive.", "hive://metastore", ""),
        PrefixRule("s3://old", "", "s3://new", ""),
    ]
    path.write_text(json.dumps([{"catalogs": {"hive": "hive://metastore"}}]))
    with pytest.raises(ValueError, match="needs 'trinoUri'"):
        load_alias_rules(path)
    path.write_text(json.dumps([{"trinoUri": "trino://t:1", "catalogs": {"hive": ["x"]}}]))
    with pytest.raises(ValueError, match=r"Alias rule 0 .* catalog 'hive' must map"):
        load_alias_rules(path)


def test_the_example_rules_file_loads():
    path = Path(__file__).parents[3] / "integrations" / "trino" / "catalog-aliases.example.json"
    rules = load_alias_rules(path)
    assert rules[0]("trino://trino-coordinator:8080", "hive.sales.orders") == (HIVE, "sales.orders")
    assert rules[2]("trino://trino-coordinator:8080", "pg.public.orders") == (
        "postgres://db.internal:5432",
        "shop.public.orders",
    )
    assert len(rules) == 4
