"""End to end: a real Airflow 3 (`airflow dags test` of integrations/airflow/example_dag.py) sends
OpenLineage over HTTP (API key, gzip) to a real `headwater serve`; everything is checked through
Headwater's REST API, and column lineage through its tables too.

`dags test` runs every task in one process, and the provider's SQL hook-lineage collector is not
reset between tasks: the Python task re-sends the SQL task's query as its own child job
``customer_totals.report.query.N`` (a QUERY job under the ``report`` task). A scheduler run does
not; the assertions below name that artefact instead of ignoring unknown jobs.
"""

from __future__ import annotations

import re

import asyncpg
import pytest

from tests.integrations.airflow.conftest import DAG_ID, AirflowRun

pytestmark = [pytest.mark.airflow, pytest.mark.db, pytest.mark.slow, pytest.mark.xdist_group("airflow")]

LOAD = f"{DAG_ID}.load_customer_totals"
REPORT = f"{DAG_ID}.report"
LEAKED_QUERY = re.compile(rf"^{re.escape(REPORT)}\.query\.\d+$")


def node(graph: dict, node_id: str) -> dict:
    found = [n for n in graph["graph"] if n["id"] == node_id]
    assert found, f"{node_id} not in {[n['id'] for n in graph['graph']]}"
    return found[0]


def edges(graph: dict) -> set[tuple[str, str]]:
    return {
        (e["origin"], e["destination"]) for n in graph["graph"] for e in n["inEdges"] + n["outEdges"]
    }


def is_dags_test_leak(run: AirflowRun, job: dict) -> bool:
    """A child job the Python task sends under `dags test` only, carrying the SQL task's query."""
    data = job["data"]
    return (
        bool(LEAKED_QUERY.match(data["name"]))
        and data["jobType"] == "QUERY"
        and data["parentJob"] == {"namespace": run.namespace, "name": REPORT}
    )


async def test_every_event_airflow_sent_is_stored(airflow_run: AirflowRun, pool: asyncpg.Pool) -> None:
    """The transport config of the README works: API key accepted, gzip bodies read, nothing lost."""
    text = airflow_run.log.read_text(errors="replace")
    assert "Failed to emit" not in text
    assert airflow_run.events_emitted >= 5  # DAG COMPLETE, START + COMPLETE of each of the two tasks
    async with pool.acquire() as conn:
        stored = await conn.fetchval("SELECT count(*) FROM raw_events")
        warnings = await conn.fetch("SELECT warnings FROM runs WHERE warnings <> '[]'::jsonb")
    assert stored == airflow_run.events_emitted
    assert warnings == [], "the provider's facets should all follow their schemas"


async def test_dag_job_is_the_parent_of_its_task_jobs(
    airflow_run: AirflowRun, pool: asyncpg.Pool
) -> None:
    run = airflow_run
    dag = node(run.lineage(run.job_id(DAG_ID), depth=0), run.job_id(DAG_ID))["data"]
    assert dag["jobType"] == "DAG"
    assert dag["parentJob"] is None
    assert dag["latestRun"]["state"] == "COMPLETED"

    for task, simple_name in ((LOAD, "load_customer_totals"), (REPORT, "report")):
        data = node(run.lineage(run.job_id(task), depth=0), run.job_id(task))["data"]
        assert data["jobType"] == "TASK"
        assert data["simpleName"] == simple_name
        assert data["parentJob"] == {"namespace": run.namespace, "name": DAG_ID}
        assert data["latestRun"]["state"] == "COMPLETED"

    async with pool.acquire() as conn:
        rows = await conn.fetch(
            """
            SELECT j.name, p.name AS parent, r.run_uuid, r.parent_run_uuid, r.root_run_uuid, r.current_state
            FROM jobs j LEFT JOIN jobs p ON p.job_uuid = j.parent_job_uuid JOIN runs r ON r.job_uuid = j.job_uuid
            WHERE j.namespace = $1 AND j.name = ANY($2::text[])
            """,
            run.namespace,
            [DAG_ID, LOAD, REPORT],
        )
    by_job = {r["name"]: r for r in rows}
    assert len(rows) == 3, "one run each of the DAG and its two tasks"
    dag_run = by_job[DAG_ID]
    assert dag_run["parent"] is None
    assert str(dag_run["run_uuid"]) == dag["latestRun"]["id"]
    for task in (LOAD, REPORT):
        assert by_job[task]["parent"] == DAG_ID
        assert by_job[task]["parent_run_uuid"] == dag_run["run_uuid"]
        assert by_job[task]["root_run_uuid"] == dag_run["run_uuid"]
        assert by_job[task]["current_state"] == "COMPLETE"


def test_tables_have_their_schema(airflow_run: AirflowRun) -> None:
    run = airflow_run
    expected = {
        "orders": [
            ("id", "int4"),
            ("customer_id", "int4"),
            ("amount", "numeric"),
            ("ordered_at", "timestamptz"),
        ],
        "customers": [("id", "int4"), ("name", "text")],
        "customer_totals": [("customer_id", "int4"), ("name", "text"), ("total", "numeric")],
    }
    for table, fields in expected.items():
        data = node(run.lineage(run.dataset_id(table), depth=0), run.dataset_id(table))["data"]
        assert data["namespace"] == run.shop.namespace
        assert data["name"] == run.shop.table(table)
        assert [(f["name"], f["type"]) for f in data["fields"]] == fields


def test_table_lineage_is_orders_and_customers_through_the_sql_task(airflow_run: AirflowRun) -> None:
    run = airflow_run
    orders, customers, totals = (run.dataset_id(t) for t in ("orders", "customers", "customer_totals"))
    load = run.job_id(LOAD)

    graph = run.lineage(load, depth=0, direction="BOTH")
    assert {n["id"] for n in graph["graph"]} == {orders, customers, load, totals}
    assert edges(graph) == {(orders, load), (customers, load), (load, totals)}

    # The Python task reads and writes nothing.
    report = run.job_id(REPORT)
    graph = run.lineage(report, depth=1, direction="BOTH")
    assert [n["id"] for n in graph["graph"]] == [report]

    # From the tables: the SQL task is the only writer of customer_totals and the only reader of
    # orders and customers, apart from the `dags test` re-sent query.
    upstream = run.lineage(totals, depth=1, direction="UPSTREAM")
    writers = [n for n in upstream["graph"] if n["type"] == "JOB"]
    assert [n["id"] for n in writers if not is_dags_test_leak(run, n)] == [load]
    assert {n["id"] for n in upstream["graph"] if n["type"] == "DATASET"} == {orders, customers, totals}
    for source in (orders, customers):
        downstream = run.lineage(source, depth=1, direction="DOWNSTREAM")
        readers = [n for n in downstream["graph"] if n["type"] == "JOB"]
        assert [n["id"] for n in readers if not is_dags_test_leak(run, n)] == [load]
        assert {n["id"] for n in downstream["graph"] if n["type"] == "DATASET"} == {source, totals}

    # The DAG job itself has no datasets.
    dag = run.job_id(DAG_ID)
    assert [n["id"] for n in run.lineage(dag, depth=1)["graph"]] == [dag]


async def test_column_lineage_follows_the_insert_column_list(
    airflow_run: AirflowRun, pool: asyncpg.Pool
) -> None:
    """customer_totals.customer_id <- customers.id, .name <- customers.name, .total <- orders.amount.

    The provider's own columnLineage names the outputs after the SELECT expressions (id, name, _0);
    Headwater derives the edges from the sql job facet (derived) and prefers those when the
    reported ones name fields customer_totals does not have (the reported ones are superseded).
    The query `dags test` re-sends under the Python task has no schema facet on its output: the
    schema the SQL task reported decides for it too.
    """
    run = airflow_run
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            """
            SELECT j.name AS job, c.output_field, i.name AS input_dataset, c.input_field, c.derived,
                   c.superseded
            FROM column_lineage c
            JOIN datasets o ON o.dataset_uuid = c.output_dataset_uuid
            JOIN datasets i ON i.dataset_uuid = c.input_dataset_uuid
            JOIN jobs j ON j.job_uuid = c.job_uuid
            WHERE c.valid_to IS NULL AND coalesce(c.transformation_type, '') <> 'INDIRECT'
              AND o.namespace = $1 AND o.name = $2 AND j.namespace = $3
            """,
            run.shop.namespace,
            run.shop.table("customer_totals"),
            run.namespace,
        )
    expected = {
        ("customer_id", run.shop.table("customers"), "id"),
        ("name", run.shop.table("customers"), "name"),
        ("total", run.shop.table("orders"), "amount"),
    }
    jobs = {r["job"] for r in rows}
    assert LOAD in jobs
    assert all(job == LOAD or LEAKED_QUERY.match(job) for job in jobs), jobs
    for job in jobs:
        edges = [r for r in rows if r["job"] == job]
        derived = {
            (r["output_field"], r["input_dataset"], r["input_field"]) for r in edges if r["derived"]
        }
        preferred = {
            (r["output_field"], r["input_dataset"], r["input_field"])
            for r in edges
            if not r["superseded"]
        }
        assert derived == expected, job
        assert preferred == expected, job

    # Through the column lineage API the table's columns have these inputs, with the transformation
    # derived from the SQL (DIRECT; the provider reports none), name <- name too, which both sources
    # name; and nothing else: the superseded edges into _0 and id are not lineage.
    response = run.get(
        "/api/v1/column-lineage",
        nodeId=run.dataset_id("customer_totals"),
        depth=1,
        direction="UPSTREAM",
    )
    assert response.status_code == 200, response.text
    graph = response.json()["graph"]
    answered = {
        (n["data"]["field"], i["dataset"], i["field"], tuple(t["type"] for t in i["transformations"]))
        for n in graph
        if n["data"]["dataset"] == run.shop.table("customer_totals")
        for i in n["data"]["inputFields"]
    }
    assert answered == {(*edge, ("DIRECT",)) for edge in expected}
