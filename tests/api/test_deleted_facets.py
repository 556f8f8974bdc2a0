"""Facets marked `"_deleted": true` remove the stored facet of a dataset or a job, unless the stored
facets are later than the event: the latest report wins for a deletion as for a value."""

from __future__ import annotations

from typing import Any

import pytest

from tests.client import post_all
from tests.factories import PRODUCER, dataset, run_event

pytestmark = pytest.mark.db

DELETED = {"_deleted": True}


def facet(**values: Any) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": "https://example.com/Custom.json", **values}


def load(time: float, dataset_facets: dict[str, Any], job_facets: dict[str, Any]) -> dict[str, Any]:
    return run_event(
        "load",
        outputs=[dataset("orders", **dataset_facets)],
        job_facets=job_facets,
        time=time,
    )


async def stored_facets(conn: Any) -> tuple[set[str], set[str]]:
    dataset_facets = await conn.fetchval("SELECT facets FROM datasets WHERE name = 'orders'")
    job_facets = await conn.fetchval("SELECT facets FROM jobs WHERE name = 'load'")
    return set(dataset_facets), set(job_facets)


async def test_a_later_event_deletes_a_facet_and_an_earlier_one_does_not(client, conn):
    await post_all(
        client,
        [load(10, {"a": facet(x=1), "b": facet(x=2)}, {"j": facet(x=3), "k": facet(x=4)})],
    )
    assert await stored_facets(conn) == ({"a", "b"}, {"j", "k"})

    # A later event deletes a and j, and reports nothing else.
    await post_all(client, [load(20, {"a": DELETED}, {"j": DELETED})])
    assert await stored_facets(conn) == ({"b"}, {"k"})

    # An event earlier than what is stored deletes nothing.
    await post_all(client, [load(15, {"b": DELETED}, {"k": DELETED})])
    assert await stored_facets(conn) == ({"b"}, {"k"})

    # A deletion with a new value of another facet in one event: both apply.
    await post_all(client, [load(30, {"b": DELETED, "c": facet(x=5)}, {"k": DELETED, "m": facet(x=6)})])
    assert await stored_facets(conn) == ({"c"}, {"m"})


async def test_a_new_node_never_stores_a_deleted_facet(client, conn):
    await post_all(client, [load(10, {"a": DELETED, "b": facet(x=1)}, {"j": DELETED})])
    assert await stored_facets(conn) == ({"b"}, set())
