"""Dataset facets an earlier ingest transaction of this process left are not sent again
(store.datasets.StoredFacets): the upsert checks the row's count of facet writes, and a report whose
held facets were written since by anyone else is sent again whole, so the model stays what
event-by-event ingest builds."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from headwater.db.queries import QUERIES
from headwater.ingest.service import ingest_turn, prepare_events, write_prepared
from headwater.ingest.validate import validate_event
from headwater.store.datasets import STORED_FACETS
from tests.factories import PRODUCER, dataset, run_event
from tests.writes import ingest_events

pytestmark = pytest.mark.db

KEY = ("warehouse", "orders")


@pytest.fixture(autouse=True)
def _nothing_known(conn: asyncpg.Connection) -> None:
    """What earlier tests on this database left this process knowing is forgotten."""
    STORED_FACETS.of(conn).clear()


def owner(name: str) -> dict[str, Any]:
    return {
        "ownership": {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/OwnershipDatasetFacet.json",
            "owners": [{"name": name}],
        }
    }


def reading(time: int, team: str) -> dict[str, Any]:
    """A run of a job reading the orders table, which it reports with its schema and an owner."""
    return run_event(
        f"report_{time}",
        inputs=[dataset("orders", fields=["id", "total"], **owner(team))],
        time=time,
    )


async def stored(conn: asyncpg.Connection) -> tuple[dict[str, Any], int]:
    row = await conn.fetchrow(
        "SELECT facets, facets_writes FROM datasets WHERE namespace = $1 AND name = $2", *KEY
    )
    assert row is not None
    return row["facets"], row["facets_writes"]


async def test_a_report_of_held_facets_leaves_them_out_and_rewrites_nothing(conn):
    sent: list[str] = []
    conn.add_query_logger(
        lambda q: sent.append(q.args[0]) if q.query == QUERIES["upsert_datasets"] else None
    )
    await ingest_events(conn, [validate_event(reading(1, "sales"))])
    facets, writes = await stored(conn)
    assert STORED_FACETS.of(conn)[KEY][:2] == (
        await conn.fetchval("SELECT dataset_uuid FROM datasets"),
        writes,
    )

    # A later transaction reports the same facets: left out, and the row is not rewritten.
    await ingest_events(conn, [validate_event(reading(2, "sales"))])
    assert '"ownership"' in sent[0]
    assert '"schema"' in sent[0]
    assert '"ownership"' not in sent[1]
    assert '"schema"' not in sent[1]
    assert await stored(conn) == (facets, writes)


async def test_facets_written_since_by_another_writer_are_sent_again_whole(conn):
    await ingest_events(conn, [validate_event(reading(1, "sales"))])
    _, writes = await stored(conn)

    # Another process's ingest (its own facet knowledge, none of this one's) changes the owner.
    async with conn.transaction():
        await write_prepared(conn, prepare_events([validate_event(reading(2, "finance"))], []), [])
    facets, after = await stored(conn)
    assert after == writes + 1
    assert facets["ownership"]["owners"] == [{"name": "finance"}]

    # This process still knows the row as holding owner "sales"; reported again later, that owner
    # wins as it would event by event, and not as a leftover the upsert took for held.
    await ingest_events(conn, [validate_event(reading(3, "sales"))])
    facets, _ = await stored(conn)
    assert facets["ownership"]["owners"] == [{"name": "sales"}]


async def _abandoned_write(conn: asyncpg.Connection) -> None:
    """An ingest transaction that learns the orders table's facets, then rolls back."""
    async with ingest_turn(conn):
        await write_prepared(conn, prepare_events([validate_event(reading(1, "sales"))], []), [])
        raise AbandonedError


class AbandonedError(Exception):
    pass


async def test_what_a_rolled_back_transaction_learned_is_not_handed_on(conn):
    with pytest.raises(AbandonedError):
        await _abandoned_write(conn)
    assert KEY not in STORED_FACETS.of(conn)
