"""A job's SQL facet that is not valid SQL: the event is stored, the run warned of what is wrong."""

from __future__ import annotations

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
        {"path": "$.job.facets.sql.query", "message": f"SQL lineage not derived: {message}"}
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
            "message": "SQL lineage not derived: 1 file paths are not URIs and were left out: "
            "'s3://[bucket/x'",
        }
    ]
    assert await conn.fetchval("SELECT count(*) FROM datasets") == 2
