"""GET /api/v1/column-lineage: fields followed through several jobs, sources preferred, point in time."""

from __future__ import annotations

import pytest

from tests.client import post_all
from tests.factories import at, dataset, job_run

pytestmark = pytest.mark.db


async def column_lineage(client, *node_ids, **params):
    response = await client.get("/api/v1/column-lineage", params={"nodeId": list(node_ids), **params})
    assert response.status_code == 200, response.text
    return response.json()


def f(dataset_name, field):
    return f"datasetField:warehouse:{dataset_name}:{field}"


def src(name, field):
    return ("warehouse", name, field)


async def three_jobs(client, start=0):
    """raw -> clean -> stg -> aggregate -> mart -> publish -> report, with column lineage facets."""
    await post_all(
        client,
        job_run(
            "clean",
            inputs=[dataset("raw", fields=["id", "amount", "country"])],
            outputs=[
                dataset(
                    "stg",
                    fields=["id", "amount"],
                    column_lineage={"id": [src("raw", "id")], "amount": [src("raw", "amount")]},
                )
            ],
            start=start,
            end=start + 1,
        ),
    )
    await post_all(
        client,
        job_run(
            "aggregate",
            inputs=["stg"],
            outputs=[
                dataset("mart", fields=["total"], column_lineage={"total": [src("stg", "amount")]})
            ],
            start=start + 2,
            end=start + 3,
        ),
    )
    await post_all(
        client,
        job_run(
            "publish",
            inputs=["mart"],
            outputs=[
                dataset(
                    "report",
                    fields=[("total", "decimal")],
                    column_lineage={"total": [src("mart", "total")]},
                )
            ],
            start=start + 4,
            end=start + 5,
        ),
    )


async def versions(conn):
    rows = await conn.fetch("SELECT name, current_version_uuid FROM datasets")
    return {
        r["name"]: str(r["current_version_uuid"]) if r["current_version_uuid"] else None for r in rows
    }


def identity(*inputs):
    return (
        [{"type": "DIRECT", "subtype": "IDENTITY", "description": None, "masking": None}]
        if inputs
        else []
    )


def node(dataset_name, field, version, field_type="string", inputs=(), outputs=()):
    input_fields = [
        {
            "namespace": "warehouse",
            "dataset": ds,
            "datasetVersion": v,
            "field": name,
            "transformationDescription": None,
            "transformationType": "DIRECT",
            "transformations": identity(ds),
        }
        for ds, name, v in inputs
    ]
    own = f(dataset_name, field)
    return {
        "id": own,
        "type": "DATASET_FIELD",
        "data": {
            "namespace": "warehouse",
            "dataset": dataset_name,
            "datasetVersion": version,
            "field": field,
            "fieldType": field_type,
            "transformationDescription": None,
            "transformationType": "DIRECT" if inputs else None,
            "inputFields": input_fields,
        },
        "inEdges": [{"origin": f(ds, name), "destination": own} for ds, name, _ in inputs],
        "outEdges": [{"origin": own, "destination": f(ds, name)} for ds, name in outputs],
    }


async def test_field_followed_upstream_through_three_jobs(client, conn):
    await three_jobs(client)
    v = await versions(conn)
    graph = await column_lineage(client, f("report", "total"), direction="UPSTREAM")
    assert graph == {
        "graph": [
            node("report", "total", v["report"], "decimal", inputs=[("mart", "total", v["mart"])]),
            node(
                "mart",
                "total",
                v["mart"],
                inputs=[("stg", "amount", v["stg"])],
                outputs=[("report", "total")],
            ),
            node(
                "stg", "amount", v["stg"], inputs=[("raw", "amount", None)], outputs=[("mart", "total")]
            ),
            node("raw", "amount", None, outputs=[("stg", "amount")]),
        ],
        "truncated": False,
    }


async def test_depth_counts_column_hops_and_downstream_follows_data(client, conn):
    await three_jobs(client)
    up_one = await column_lineage(client, f("report", "total"), direction="UPSTREAM", depth=1)
    assert [n["id"] for n in up_one["graph"]] == [f("report", "total"), f("mart", "total")]
    down = await column_lineage(client, f("raw", "amount"), direction="DOWNSTREAM")
    assert [(n["id"], n["outEdges"]) for n in down["graph"]] == [
        (f("raw", "amount"), [{"origin": f("raw", "amount"), "destination": f("stg", "amount")}]),
        (f("stg", "amount"), [{"origin": f("stg", "amount"), "destination": f("mart", "total")}]),
        (f("mart", "total"), [{"origin": f("mart", "total"), "destination": f("report", "total")}]),
        (f("report", "total"), []),
    ]
    both = await column_lineage(client, f("stg", "amount"), depth=1)
    assert sorted(n["id"] for n in both["graph"]) == sorted(
        [f("raw", "amount"), f("stg", "amount"), f("mart", "total")]
    )


async def test_dataset_root_stands_for_all_its_fields(client, conn):
    await three_jobs(client)
    graph = await column_lineage(client, "dataset:warehouse:stg", direction="UPSTREAM")
    assert [n["id"] for n in graph["graph"]] == [
        f("stg", "amount"),
        f("stg", "id"),
        f("raw", "amount"),
        f("raw", "id"),
    ]


async def test_producer_edges_win_over_derived_ones_for_the_same_pair(client, conn):
    await three_jobs(client)
    # SQL analysis found the same pair (with another transformation) and one the producer missed.
    await conn.execute(
        """
        INSERT INTO column_lineage (output_dataset_uuid, output_field, input_dataset_uuid, input_field, job_uuid,
                                    transformation_type, transformation_subtype, derived, first_seen_at,
                                    last_seen_at, valid_from)
        SELECT o.dataset_uuid, 'amount', i.dataset_uuid, field, j.job_uuid, 'INDIRECT', subtype, true, now(), now(),
               now()
        FROM datasets o, datasets i, jobs j,
             (VALUES ('amount', 'AGGREGATION'), ('country', 'FILTER')) AS t(field, subtype)
        WHERE o.name = 'stg' AND i.name = 'raw' AND j.name = 'clean'
        """
    )
    graph = await column_lineage(client, f("stg", "amount"), direction="UPSTREAM")
    inputs = graph["graph"][0]["data"]["inputFields"]
    assert [(i["field"], i["transformations"]) for i in inputs] == [
        ("amount", [{"type": "DIRECT", "subtype": "IDENTITY", "description": None, "masking": None}]),
        ("country", [{"type": "INDIRECT", "subtype": "FILTER", "description": None, "masking": None}]),
    ]
    assert graph["graph"][0]["data"]["transformationType"] is None  # its inputs disagree


async def test_as_of_shows_the_column_lineage_of_the_time(client, conn):
    await three_jobs(client)
    # A newer run of clean computes stg.amount from amount_eur instead.
    await post_all(
        client,
        job_run(
            "clean",
            inputs=[dataset("raw", fields=["id", "amount", "amount_eur"])],
            outputs=[
                dataset(
                    "stg",
                    fields=["id", "amount"],
                    column_lineage={"id": [src("raw", "id")], "amount": [src("raw", "amount_eur")]},
                )
            ],
            start=10,
            end=11,
        ),
    )

    async def inputs_of_stg_amount(**params):
        graph = await column_lineage(client, f("stg", "amount"), direction="UPSTREAM", depth=1, **params)
        return [n["id"] for n in graph["graph"]]

    assert await inputs_of_stg_amount(asOf=at(0.5)) == [f("stg", "amount")]
    assert await inputs_of_stg_amount(asOf=at(5)) == [f("stg", "amount"), f("raw", "amount")]
    assert await inputs_of_stg_amount(asOf=at(11)) == [f("stg", "amount"), f("raw", "amount_eur")]
    assert await inputs_of_stg_amount() == [f("stg", "amount"), f("raw", "amount_eur")]


async def test_cycle_through_columns_ends(client, conn):
    await post_all(
        client,
        job_run(
            "forward",
            inputs=["a"],
            outputs=[dataset("b", fields=["x"], column_lineage={"x": [src("a", "x")]})],
        ),
    )
    await post_all(
        client,
        job_run(
            "back",
            inputs=["b"],
            outputs=[dataset("a", fields=["x"], column_lineage={"x": [src("b", "x")]})],
        ),
    )
    graph = await column_lineage(client, f("a", "x"), depth=50)
    assert [(n["id"], n["inEdges"], n["outEdges"]) for n in graph["graph"]] == [
        (
            f("a", "x"),
            [{"origin": f("b", "x"), "destination": f("a", "x")}],
            [{"origin": f("a", "x"), "destination": f("b", "x")}],
        ),
        (
            f("b", "x"),
            [{"origin": f("a", "x"), "destination": f("b", "x")}],
            [{"origin": f("b", "x"), "destination": f("a", "x")}],
        ),
    ]


@pytest.mark.parametrize(
    ("node_id", "status", "code"),
    [
        (f("stg", "nope"), 404, "node_not_found"),
        ("datasetField:warehouse:nothing:x", 404, "node_not_found"),
        ("dataset:warehouse:nothing", 404, "node_not_found"),
        ("datasetField:warehouse:stg", 400, "invalid_node_id"),
        ("job:pipelines:clean", 400, "invalid_node_id"),
    ],
)
async def test_bad_column_lineage_requests(client, node_id, status, code):
    await three_jobs(client)
    response = await client.get("/api/v1/column-lineage", params={"nodeId": node_id})
    assert (response.status_code, response.json()["code"]) == (status, code), response.text


async def test_column_node_cap_keeps_the_nearest_fields(client, conn):
    await three_jobs(client)
    graph = await column_lineage(client, "dataset:warehouse:stg", direction="UPSTREAM", maxNodes=3)
    assert ([n["id"] for n in graph["graph"]], graph["truncated"]) == (
        [f("stg", "amount"), f("stg", "id"), f("raw", "amount")],
        True,
    )
    both = await column_lineage(client, f("stg", "amount"), maxNodes=2)
    assert ([n["id"] for n in both["graph"]], both["truncated"]) == (
        [f("stg", "amount"), f("mart", "total")],
        True,
    )


async def test_column_edges_a_job_gains_are_one_change_and_confirming_them_is_none(client, conn):
    def run(start, columns):
        return job_run(
            "enrich",
            inputs=[dataset("orders", fields=["id", "amount"])],
            outputs=[
                dataset(
                    "orders_enriched",
                    fields=list(columns),
                    column_lineage={c: [src("orders", c)] for c in columns},
                )
            ],
            start=start,
            end=start + 1,
        )

    async def column_changes():
        rows = await conn.fetch(
            "SELECT node_id, details FROM change_log WHERE kind = 'COLUMN_EDGES_ADDED' ORDER BY change_id"
        )
        return [(r["node_id"], r["details"]["columnEdges"]) for r in rows]

    await post_all(client, run(0, ["id"]))
    assert await column_changes() == [
        (
            "job:pipelines:enrich",
            [
                {
                    "origin": "dataset:warehouse:orders",
                    "originField": "id",
                    "destination": "dataset:warehouse:orders_enriched",
                    "destinationField": "id",
                    "derived": False,
                }
            ],
        )
    ]
    await post_all(client, run(10, ["id"]))  # the next run confirms what is known: no change
    assert len(await column_changes()) == 1
    await post_all(client, run(20, ["id", "amount"]))  # one more column edge: one more change
    changes = await column_changes()
    assert len(changes) == 2
    assert [e["destinationField"] for e in changes[1][1]] == ["amount"]


async def test_a_dataset_wider_than_the_cap_keeps_its_fields_with_lineage(client, conn):
    # A dataset root stood for all its fields, whatever the cap: maxNodes=1 on 3,000 fields gave
    # 3,000 nodes and no edge, and the console said "No lineage". Now its fields with lineage come
    # first, at most half the cap of them, and the answer is cut.
    wide = [f"c{i:04d}" for i in range(3_000)]
    await post_all(
        client,
        job_run(
            "widen",
            inputs=[dataset("narrow", fields=["a"])],
            outputs=[dataset("wide", fields=wide, column_lineage={"c2999": [src("narrow", "a")]})],
        ),
    )
    graph = await column_lineage(client, "dataset:warehouse:wide", direction="UPSTREAM", maxNodes=10)
    assert ([n["id"] for n in graph["graph"]], graph["truncated"]) == (
        [f("wide", "c2999"), f("narrow", "a")],
        True,
    )
    graph = await column_lineage(client, "dataset:warehouse:wide", maxNodes=1)
    assert ([n["id"] for n in graph["graph"]], graph["truncated"]) == ([f("wide", "c2999")], True)
