"""A job's SQL facet that is not valid SQL: the event is stored, the run warned of what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import dataset, run_event, sql_facet

pytestmark = pytest.mark.db

PG = "postgres://db:5432"


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("selec oops", "unrecognized statement 'selec' at line 1, column 1"),
        (
            "INSERT INTO b SELECT x FROM a WHERE (",
            "the statement ends too early, after '(' at line 1, column 37",
        ),
        (
            "INSERT INTO b\nSELECT 'x FROM a",
            "no closing ' for the ' at line 2, column 8",
        ),
    ],
    ids=["misspelt keyword", "cut short", "unterminated string"],
)
async def test_invalid_sql_is_a_warning_saying_what_and_where(client, conn, sql, message):
    event = run_event(
        "dag.task", job_facets=sql_facet(sql), inputs=[dataset("a", PG)], outputs=[dataset("b", PG)]
    )
    response = await client.post("/api/v1/lineage", json=event)
    assert response.status_code == 201
    assert response.json()["warnings"] == [
        {"path": "$.job.facets.sql.query", "message": f"SQL lineage: {message}"}
    ]
    # What the producer reported is stored all the same.
    assert await conn.fetchval("SELECT count(*) FROM lineage_edges") == 2


async def test_a_file_path_that_is_no_uri_is_left_out_with_a_warning(client, conn):
    # Python's URL parser refuses an unbalanced "[" (an IPv6 literal): the path is not a dataset,
    # the rest of the SQL's lineage is still derived.
    sql = "INSERT INTO b SELECT * FROM a JOIN parquet.`s3://[bucket/x` USING (id)"
    event = run_event(
        "dag.task",
        job_facets={"sql": {**sql_facet(sql)["sql"], "dialect": "spark"}},
        inputs=[dataset("a", PG)],
        outputs=[dataset("b", PG)],
    )
    response = await client.post("/api/v1/lineage", json=event)
    assert response.status_code == 201, response.text
    assert response.json()["warnings"] == [
        {
            "path": "$.job.facets.sql.query",
            "message": "SQL lineage: 1 file paths are not URIs and were left out: 's3://[bucket/x'",
        }
    ]
    assert await conn.fetchval("SELECT count(*) FROM datasets") == 2


def sql_in(dialect: str, sql: str) -> dict:
    return {"sql": {**sql_facet(sql)["sql"], "dialect": dialect}}


@pytest.mark.parametrize(
    ("dialect", "sql", "message"),
    [
        (
            "postgres",
            "DO $$\n# don't\n$$ LANGUAGE plpython3u",
            "the body of this block is in plpython3u: its lineage is not derived at line 1, column 1",
        ),
        (
            "postgres",
            'DO $$ BEGIN INSERT INTO b SELECT "x FROM a; END $$',
            'no closing " for the " at line 1, column 34',
        ),
        ("oracle", "EXECUTE IMMEDIATE 'SELECT \"a'", 'no closing " for the " at line 1, column 27'),
        ("bigquery", "EXECUTE IMMEDIATE 'SELECT `a'", "no closing ` for the ` at line 1, column 27"),
        (
            "tsql",
            "EXEC sp_executesql N'INSERT INTO b SELECT [x FROM a'",
            "no closing ] for the ] at line 1, column 43",
        ),
    ],
    ids=["python block", "plpgsql block", "oracle dynamic SQL", "bigquery dynamic SQL", "sp_executesql"],
)
async def test_an_unreadable_body_is_a_warning_and_the_event_is_stored(
    client, conn, dialect, sql, message
):
    event = run_event(
        "dag.task",
        job_facets=sql_in(dialect, sql),
        inputs=[dataset("a", PG)],
        outputs=[dataset("b", PG)],
    )
    response = await client.post("/api/v1/lineage", json=event)
    assert response.status_code == 201, response.text
    assert response.json()["warnings"] == [
        {"path": "$.job.facets.sql.query", "message": f"SQL lineage: {message}"}
    ]
    # A batch keeps its other events too.
    other = run_event("dag.other", inputs=[dataset("a", PG)], outputs=[dataset("c", PG)])
    batch = await client.post("/api/v1/lineage/batch", json=[{**event, "eventType": "START"}, other])
    assert batch.json()["status"] == "success", batch.text
    assert await conn.fetchval("SELECT count(*) FROM raw_events") == 3


@pytest.mark.parametrize(
    ("dialect", "sql", "left_out"),
    [
        ("mysql", r"SELECT a FROM shop.orders INTO OUTFILE '/tmp/a\0b'", r"'/tmp/a\x00b'"),
        ("bigquery", r"INSERT INTO p.d.o SELECT a FROM `p.d.t\u0000`", r"'p.d.t\x00'"),
        (
            "hive",
            r"INSERT OVERWRITE DIRECTORY 'hdfs://x/a\u0000b' SELECT a FROM p.d.t",
            r"'/a\x00b'",
        ),
        ("clickhouse", r"INSERT INTO p.d.o SELECT a FROM remote('h', 'db', 't\0')", r"'p.db.t\x00'"),
        ("bigquery", r"INSERT INTO p.d.o SELECT a AS `b\u0000` FROM p.d.t", r"'b\x00'"),
    ],
    ids=["mysql outfile", "bigquery table", "hive directory", "clickhouse remote", "bigquery column"],
)
async def test_a_name_postgresql_cannot_store_is_left_out_with_a_warning(
    client, conn, dialect, sql, left_out
):
    # SQL escapes decode to U+0000, which no text PostgreSQL stores may hold: the event was refused.
    event = run_event(
        "dag.task",
        job_facets=sql_in(dialect, sql),
        inputs=[dataset("p.d.t", "bigquery")],
        outputs=[dataset("p.d.o", "bigquery")],
    )
    response = await client.post("/api/v1/lineage", json=event)
    assert response.status_code == 201, response.text
    assert response.json()["warnings"] == [
        {
            "path": "$.job.facets.sql.query",
            "message": "SQL lineage: 1 names the SQL gives hold U+0000 or half of a "
            f"UTF-16 surrogate pair, which PostgreSQL cannot store, and were left out: {left_out}",
        }
    ]
    assert await conn.fetchval("SELECT count(*) FROM datasets WHERE name LIKE 'p.d.%'") == 2


async def test_a_warning_naming_what_postgresql_cannot_store_says_it_escaped(client, conn):
    sql = r"CALL BQ.REFRESH_MATERIALIZED_VIEW('p.d.v\u0000')"
    event = run_event(
        "dag.task", job_facets=sql_in("bigquery", sql), outputs=[dataset("p.d.o", "bigquery")]
    )
    response = await client.post("/api/v1/lineage", json=event)
    assert response.status_code == 201, response.text
    assert [w["message"] for w in response.json()["warnings"]] == [
        r"SQL lineage: refresh of materialized view p.d.v\x00: its query is not in the "
        "SQL, so what it reads is not known at line 1, column 6",
        "SQL lineage: 1 names the SQL gives hold U+0000 or half of a UTF-16 surrogate "
        r"pair, which PostgreSQL cannot store, and were left out: 'p.d.v\x00'",
    ]


def orders_to_revenue(sql: str) -> dict[str, Any]:
    """A run reporting shop.public.orders read and shop.public.revenue written, by ``sql``."""
    return run_event(
        "dag.task",
        job_facets=sql_facet(sql),
        inputs=[dataset("shop.public.orders", PG)],
        outputs=[dataset("shop.public.revenue", PG)],
    )


async def test_tables_the_sql_names_count_against_the_datasets_one_event_may_name(client, conn):
    # 5,200 tables joined: the event reports 2 datasets, so the SQL adds 4,998 and 202 are left out.
    sql = "INSERT INTO shop.public.revenue SELECT 1 FROM a0 " + " ".join(
        f"JOIN a{i} ON 1=1" for i in range(1, 5_200)
    )
    response = await client.post("/api/v1/lineage", json=orders_to_revenue(sql))
    assert response.status_code == 201, response.text
    assert response.json()["warnings"] == [
        {
            "path": "$.job.facets.sql.query",
            "message": "SQL lineage: 202 of the tables the SQL names were left out, "
            "with their column edges: one event names at most 5,000 datasets",
        }
    ]
    assert await conn.fetchval("SELECT count(*) FROM datasets") == 5_000


async def test_column_edges_the_sql_derives_count_against_those_one_event_may_make(client, conn):
    sql = "INSERT INTO revenue (x) SELECT " + "+".join(f"q{i}" for i in range(20_300)) + " FROM orders"
    response = await client.post("/api/v1/lineage", json=orders_to_revenue(sql))
    assert response.status_code == 201, response.text
    assert response.json()["warnings"] == [
        {
            "path": "$.job.facets.sql.query",
            "message": "SQL lineage: 300 column edges derived from the SQL were left "
            "out: one event makes at most 20,000",
        }
    ]
    assert await conn.fetchval("SELECT count(*) FROM column_lineage") == 20_000
