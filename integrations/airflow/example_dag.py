"""Example DAG for Headwater: a SQL task on PostgreSQL, then a Python task.

With apache-airflow-providers-openlineage configured to send to Headwater (see README.md), a run
of this DAG gives Headwater:

- the DAG job ``customer_totals`` and its task jobs ``customer_totals.load_customer_totals`` and
  ``customer_totals.report``, each task job a child of the DAG job;
- the tables ``shop.public.orders``, ``shop.public.customers`` and ``shop.public.customer_totals`` in
  namespace ``postgres://HOST:PORT``, with their columns, and the table lineage
  orders, customers -> customer_totals.load_customer_totals -> customer_totals;
- column lineage customer_totals.customer_id <- customers.id, .name <- customers.name,
  .total <- orders.amount.

The connection comes from Airflow, e.g. ``AIRFLOW_CONN_SHOP_POSTGRES=postgresql://user:pass@host:5432/shop``.
"""

from __future__ import annotations

import datetime as dt

from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator
from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG

CONN_ID = "shop_postgres"

LOAD_CUSTOMER_TOTALS = (
    "INSERT INTO customer_totals (customer_id, name, total) "
    "SELECT c.id, c.name, SUM(o.amount) "
    "FROM orders o JOIN customers c ON o.customer_id = c.id "
    "GROUP BY c.id, c.name"
)


def report(**context: object) -> str:
    """A Python step after the load: no datasets of its own, so only its job and run show up."""
    message = f"customer_totals loaded by run {context.get('run_id')}"
    print(message)
    return message


with DAG(
    dag_id="customer_totals",
    description="Totals per customer, from orders and customers",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    tags=["headwater-example"],
) as dag:
    load = SQLExecuteQueryOperator(
        task_id="load_customer_totals",
        conn_id=CONN_ID,
        sql=LOAD_CUSTOMER_TOTALS,
    )
    summary = PythonOperator(task_id="report", python_callable=report)

    load >> summary
