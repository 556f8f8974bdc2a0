"""A renamed dataset (lifecycleStateChange RENAME with previousIdentifier) keeps its lineage: the old
identity is read by the rename's job, and each column comes from the column of the same name."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.client import post_all
from tests.corpus import corpus_file
from tests.factories import PRODUCER, SCHEMA_URL, at, dataset, job_run, run_event

pytestmark = pytest.mark.db


def renamed(name: str, previous: str, fields: list[str], namespace: str = "warehouse") -> dict[str, Any]:
    return dataset(
        name,
        namespace,
        fields=fields,
        lifecycleStateChange={
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/LifecycleStateChangeDatasetFacet.json",
            "lifecycleStateChange": "RENAME",
            "previousIdentifier": {"namespace": namespace, "name": previous},
        },
    )


async def lineage_ids(client, node_id: str, direction: str) -> set[str]:
    response = await client.get(
        "/api/v1/lineage", params={"nodeId": node_id, "direction": direction, "depth": 10}
    )
    assert response.status_code == 200, response.text
    return {node["id"] for node in response.json()["graph"]}


async def column_inputs(client, node_id: str) -> dict[str, list[dict[str, Any]]]:
    """Each field upstream of ``node_id`` with the fields it comes from."""
    response = await client.get(
        "/api/v1/column-lineage", params={"nodeId": node_id, "direction": "UPSTREAM", "depth": 10}
    )
    assert response.status_code == 200, response.text
    return {node["id"]: node["data"]["inputFields"] for node in response.json()["graph"]}


async def test_lineage_and_column_lineage_go_on_across_a_rename(client, conn):
    await post_all(
        client,
        job_run(
            "load",
            inputs=[dataset("raw", fields=["id", "amount"])],
            outputs=[
                dataset(
                    "orders",
                    fields=["id", "amount"],
                    column_lineage={
                        "id": [("warehouse", "raw", "id")],
                        "amount": [("warehouse", "raw", "amount")],
                    },
                )
            ],
        ),
    )
    await post_all(
        client,
        [run_event("rename_orders", outputs=[renamed("orders_v2", "orders", ["id", "amount"])], time=2)],
    )
    await post_all(
        client, job_run("report", inputs=["orders_v2"], outputs=["dashboard"], start=3, end=4)
    )

    assert await lineage_ids(client, "dataset:warehouse:dashboard", "UPSTREAM") == {
        "dataset:warehouse:dashboard",
        "job:pipelines:report",
        "dataset:warehouse:orders_v2",
        "job:pipelines:rename_orders",
        "dataset:warehouse:orders",
        "job:pipelines:load",
        "dataset:warehouse:raw",
    }
    # Downstream of the old name: what reads the table under its new one.
    assert "job:pipelines:report" in await lineage_ids(client, "dataset:warehouse:orders", "DOWNSTREAM")

    fields = await column_inputs(client, "datasetField:warehouse:orders_v2:amount")
    [renamed_from] = fields["datasetField:warehouse:orders_v2:amount"]
    assert (renamed_from["dataset"], renamed_from["field"]) == ("orders", "amount")
    assert renamed_from["transformations"] == [
        {"type": "DIRECT", "subtype": "IDENTITY", "description": "renamed", "masking": False}
    ]
    assert [(i["dataset"], i["field"]) for i in fields["datasetField:warehouse:orders:amount"]] == [
        ("raw", "amount")
    ]
    assert "datasetField:warehouse:raw:amount" in fields

    # Known from the rename, not reported by the producer: marked derived, and the old dataset is
    # not rewritten (it keeps its own schema and history).
    derived = await conn.fetchval(
        """SELECT bool_and(e.derived) FROM lineage_edges e JOIN datasets d ON d.dataset_uuid = e.dataset_uuid
           WHERE d.name = 'orders' AND e.edge_type = 'READ'"""
    )
    assert derived is True
    assert await conn.fetchval("SELECT count(*) FROM datasets WHERE name = 'orders'") == 1


async def test_the_spark_rename_event_of_the_corpus_links_the_table_under_its_old_name(client):
    """Spark names the table by path and symlinks it by table name: the old path resolves to the
    table it was seen as before, through that table's alias."""
    old_path, table_ns = "/tmp/alter_test/alter_table_test", "file:/tmp/alter_test"
    write = run_event(
        "open_lineage_integration_alter_table.execute_insert_into_hive_table",
        namespace="testAlterTable",
        outputs=[
            dataset(
                old_path,
                "file",
                fields=["a", "b"],
                symlinks=[(table_ns, "default.alter_table_test", "TABLE")],
            )
        ],
    )
    rename = json.loads(
        corpus_file("spark/alter-table-rename-lifecycle-complete.template.json").read_text()
    )
    rename.update(
        eventTime=at(5), producer=PRODUCER, schemaURL=SCHEMA_URL, run={"runId": str(uuid.uuid4())}
    )
    await post_all(client, [write, rename])

    new_table = f"dataset:{table_ns}:default.alter_table_test_new"
    assert await lineage_ids(client, new_table, "UPSTREAM") == {
        new_table,
        "job:testAlterTable:open_lineage_integration_alter_table.execute_alter_table_rename_command",
        f"dataset:{table_ns}:default.alter_table_test",
        "job:testAlterTable:open_lineage_integration_alter_table.execute_insert_into_hive_table",
    }
    fields = await column_inputs(client, f"datasetField:{table_ns}:default.alter_table_test_new:d")
    [source] = fields[f"datasetField:{table_ns}:default.alter_table_test_new:d"]
    assert (source["dataset"], source["field"]) == ("default.alter_table_test", "d")


async def test_a_rename_its_producer_reports_as_a_copy_is_left_as_reported(client, conn):
    """The old identity already among the inputs (a producer that says what it read): nothing is
    added, and the column lineage reported is the one kept."""
    output = renamed("orders_v2", "orders", ["id"])
    output["facets"].update(
        dataset("x", fields=["id"], column_lineage={"id": [("warehouse", "orders", "id")]})["facets"]
    )
    await post_all(client, [run_event("copy", inputs=["orders"], outputs=[output])])
    rows = await conn.fetch(
        "SELECT derived, superseded FROM column_lineage c JOIN datasets d ON d.dataset_uuid = c.output_dataset_uuid"
    )
    assert [(r["derived"], r["superseded"]) for r in rows] == [(False, False)]


async def test_a_rename_to_its_own_name_adds_nothing(client, conn):
    await post_all(client, [run_event("noop", outputs=[renamed("orders", "orders", ["id"])])])
    assert await conn.fetchval("SELECT count(*) FROM lineage_edges") == 1
    assert await conn.fetchval("SELECT count(*) FROM column_lineage") == 0


async def test_a_rename_that_keeps_its_storage_reads_nothing(client, conn):
    """An external table renamed keeps its path: its old and new names are the same stored dataset,
    and the rename is a write of it with one more name, not a read of itself."""
    table = dataset(
        "/data/ext", "file", fields=["id"], symlinks=[("file:/data", "default.ext", "TABLE")]
    )
    await post_all(client, [run_event("load", outputs=[table])])
    output = renamed("/data/ext", "default.ext", ["id"], namespace="file")
    output["facets"]["lifecycleStateChange"]["previousIdentifier"]["namespace"] = "file:/data"
    output["facets"].update(
        symlinks=dataset("x", symlinks=[("file:/data", "default.ext2", "TABLE")])["facets"]["symlinks"]
    )
    await post_all(client, [run_event("rename_ext", outputs=[output], time=2)])

    edges = await conn.fetch(
        """SELECT e.edge_type, d.name FROM lineage_edges e
           JOIN jobs j USING (job_uuid) JOIN datasets d USING (dataset_uuid)
           WHERE j.name = 'rename_ext'"""
    )
    assert [(e["edge_type"], e["name"]) for e in edges] == [("WRITE", "default.ext")]
    assert await conn.fetchval("SELECT count(*) FROM column_lineage") == 0
    # The new name is one more name of the dataset.
    assert await lineage_ids(client, "dataset:file:/data:default.ext2", "UPSTREAM") == {
        "dataset:file:/data:default.ext",
        "job:pipelines:load",
        "job:pipelines:rename_ext",
    }
