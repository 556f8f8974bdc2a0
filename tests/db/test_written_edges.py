"""WrittenEdges: an edge or column edge set a transaction already wrote is left out of a later upsert
exactly when the upsert (edges.sql) would have left it unchanged."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from headwater.store import edges as edge_store
from headwater.store.edges import ColumnEdgeRow, ColumnEdgeSet, EventEdges, WrittenEdges
from tests.client import post_all
from tests.factories import T0, job_run

pytestmark = pytest.mark.db

R1, R2 = uuid.uuid4(), uuid.uuid4()

# What a later event of the same job differs in: (its time in minutes, run, derived, description,
# masking, superseded). The first write is at minute 10 by run R1, "copied", unmasked, preferred.
LATER = {
    "the same run later": (20, R1, False, "copied", False, False),
    "the same run at the same time": (10, R1, False, "copied", False, False),
    "no description, no masking": (20, R1, False, None, None, False),
    "a new run later": (20, R2, False, "copied", False, False),
    "a new run at the same time": (10, R2, False, "copied", False, False),
    "a run without id later": (20, None, False, "copied", False, False),
    "the same run earlier": (5, R1, False, "copied", False, False),
    "a new run earlier": (5, R2, False, "copied", False, False),
    "a new description": (20, R1, False, "renamed", False, False),
    "masking": (20, R1, False, "copied", True, False),
    "superseded": (20, R1, False, "copied", False, True),
    "derived": (20, R1, True, "copied", False, False),
}

OPEN_ROWS = """
SELECT (SELECT ctid::text FROM lineage_edges WHERE src_node_id = $1 AND dst_node_id = $2 AND valid_to IS NULL),
       (SELECT ctid::text FROM column_lineage
        WHERE job_uuid = $3 AND output_field = 'total' AND derived = $4 AND valid_to IS NULL),
       (SELECT ctid::text FROM column_edge_sets WHERE job_uuid = $3 AND derived = $4)
"""


def minutes(m: float) -> dt.datetime:
    return T0 + dt.timedelta(minutes=m)


@pytest.mark.parametrize("first_derived", [False, True], ids=["reported first", "derived first"])
@pytest.mark.parametrize("later", LATER.values(), ids=LATER.keys())
async def test_an_edge_is_left_out_exactly_when_the_upsert_would_change_nothing(
    client, conn, later, first_derived
):
    await post_all(client, job_run("load", inputs=["orders"], outputs=["totals"]))
    job = await conn.fetchrow("SELECT job_uuid, node_id FROM jobs WHERE name = 'load'")
    find = "SELECT dataset_uuid, node_id FROM datasets WHERE name = $1"
    orders, totals = await conn.fetchrow(find, "orders"), await conn.fetchrow(find, "totals")
    # A read edge from another node than the event's (whose edge is open already).
    src, dst = orders["node_id"] + 1000, job["node_id"]

    def request(at, run, derived, description, masking, superseded, written):
        column = ColumnEdgeRow(
            totals["dataset_uuid"],
            "total",
            orders["dataset_uuid"],
            "amount",
            "DIRECT",
            "IDENTITY",
            description,
            masking,
        )
        edge = (src, dst, orders["dataset_uuid"], "READ", derived)
        return EventEdges(
            job["job_uuid"], minutes(at), run, [edge], [(column, derived, superseded)], written
        )

    at, run, derived, description, masking, superseded = later
    async with conn.transaction():
        written = WrittenEdges()
        await edge_store.upsert_edges(
            conn, [request(10, R1, first_derived, "copied", False, False, written)]
        )
        second = request(at, run, derived, description, masking, superseded, written)
        [(column, _, _)] = second.column_edges
        column_set = ColumnEdgeSet.of(column.output_dataset_uuid, derived, [(column, superseded)])
        left_out = (
            not written.changes_edge(second.job_uuid, second.edges[0], second.at, second.run_uuid),
            not written.changes_column_set(second.job_uuid, column_set, second.at, second.run_uuid),
        )
        # The same event upserted with nothing known of the first write: does any row change?
        before = await conn.fetchrow(OPEN_ROWS, src, dst, job["job_uuid"], derived)
        told_nothing = request(at, run, derived, description, masking, superseded, WrittenEdges())
        await edge_store.upsert_edges(conn, [told_nothing])
        after = await conn.fetchrow(OPEN_ROWS, src, dst, job["job_uuid"], derived)
        unchanged = (before[0] == after[0], before[1:] == after[1:])
    assert left_out == unchanged
