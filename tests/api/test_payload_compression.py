"""Raw event payloads stored as zstd frames: without a dictionary at first, then against one trained
on the database's own events; every payload reads back as the text ingest encoded, whatever it was
stored with (text before migration 0095, a frame, a dictionary another process trained)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
import zstandard

from headwater.operations.lifespan import upkeep
from headwater.store import payloads
from tests.client import all_stored_events
from tests.factories import dataset, run_event
from tests.snapshot import stored_payloads

pytestmark = pytest.mark.db


def spark_like(n: int) -> dict[str, Any]:
    """Events that repeat what one integration's events repeat: facets, schemas, names."""
    return run_event(
        f"etl.job_{n % 40}",
        "START" if n % 2 else "COMPLETE",
        run_id=uuid.UUID(int=n // 2),
        inputs=[dataset(f"raw_{n % 7}", fields=["id", "amount", "currency", "created_at"])],
        outputs=[dataset(f"clean_{n % 40}", fields=["id", "amount_eur", "created_at"])],
        time=n,
        run_facets={
            "spark_properties": {
                "_producer": "https://github.com/OpenLineage/OpenLineage/tree/1.9.1/integration/spark",
                "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/SparkPropertiesFacet.json",
                "properties": {"spark.master": "yarn", "spark.app.name": f"etl_{n % 40}"},
            }
        },
    )


async def post_batches(client: Any, events: list[dict[str, Any]], size: int = 400) -> None:
    for start in range(0, len(events), size):
        response = await client.post("/api/v1/lineage/batch", json=events[start : start + size])
        assert response.status_code == 200, response.text
        assert response.json()["summary"]["failed"] == 0


async def frames(conn: Any) -> list[bytes]:
    rows = await conn.fetch("SELECT payload_zstd FROM raw_events ORDER BY raw_event_id")
    return [bytes(r["payload_zstd"]) for r in rows]


async def trained_dictionary(conn: Any) -> int:
    """The dictionary the server trains beside ingest once enough events are stored."""
    for _ in range(200):
        trained = await conn.fetchval("SELECT dictionary_id FROM payload_dictionaries")
        if trained is not None:
            return int(trained)
        await asyncio.sleep(0.05)
    raise AssertionError("no dictionary was trained")


async def test_a_dictionary_is_trained_once_enough_events_are_stored(client, conn):
    payloads._codecs.clear()  # this process has stored nothing in this database yet
    first = [spark_like(n) for n in range(payloads.TRAIN_AFTER + 200)]
    await post_batches(client, first)
    trained = await trained_dictionary(conn)
    # Trained on the events stored when it was asked for.
    samples = await conn.fetchval("SELECT samples FROM payload_dictionaries")
    assert payloads.TRAIN_AFTER <= samples <= len(first)

    later = [spark_like(n) for n in range(len(first), len(first) + 100)]
    await post_batches(client, later)
    stored = await frames(conn)
    ids = [zstandard.get_frame_parameters(f).dict_id for f in stored]
    assert set(ids[: len(first)]) == {0}
    assert set(ids[len(first) :]) == {trained}
    without = sum(map(len, stored[: len(first)])) / len(first)
    with_dictionary = sum(map(len, stored[len(first) :])) / len(later)
    assert with_dictionary < without / 2, (without, with_dictionary)

    # Read back as sent, here and by a process that has never seen the dictionary.
    expected = [json.loads(p) for p in await stored_payloads(conn)]
    assert expected == first + later
    payloads._codecs.clear()
    assert [json.loads(p) for p in await stored_payloads(conn)] == first + later


async def test_a_payload_stored_as_text_reads_as_it_is(client, conn):
    await post_batches(client, [spark_like(1)])
    legacy = json.dumps(spark_like(3))
    await conn.execute(
        "INSERT INTO raw_events (content_hash, event_kind, event_type, event_time, payload)"
        " VALUES ('\\x01', 'RUN', 'START', now(), $1)",
        legacy,
    )
    stored = await stored_payloads(conn)
    assert json.loads(stored[0]) == spark_like(1)
    assert stored[1] == legacy
    response = await all_stored_events(client)
    assert response.status_code == 200, response.text
    assert response.json()["events"] == [spark_like(1), spark_like(3)]


async def test_a_frame_whose_dictionary_is_gone_is_an_error_naming_it(conn):
    dictionary = zstandard.train_dictionary(
        4096, [json.dumps(spark_like(n)).encode() for n in range(200)], dict_id=4_000_000_000
    )
    frame = zstandard.ZstdCompressor(dict_data=dictionary).compress(b'{"eventType": "START"}')
    with pytest.raises(payloads.PayloadError, match="4000000000"):
        await payloads.decompress(conn, [frame])


async def test_ingest_writes_with_the_dictionary_the_database_has(client, conn):
    """A dictionary removed behind ingest's back (a database dropped and made again under the same
    name) is not written with: the next transaction finds none, and compresses without one."""
    payloads._codecs.clear()
    await post_batches(client, [spark_like(n) for n in range(payloads.TRAIN_AFTER)])
    trained = await trained_dictionary(conn)
    await post_batches(client, [spark_like(payloads.TRAIN_AFTER)])
    assert zstandard.get_frame_parameters((await frames(conn))[-1]).dict_id == trained

    await conn.execute("DELETE FROM raw_events WHERE payload_zstd IS NOT NULL")
    await conn.execute("DELETE FROM payload_dictionaries")
    await post_batches(client, [spark_like(n) for n in range(5)])
    assert {zstandard.get_frame_parameters(f).dict_id for f in await frames(conn)} == {0}
    payloads._codecs.clear()
    assert [json.loads(p) for p in await stored_payloads(conn)] == [spark_like(n) for n in range(5)]


async def test_upkeep_trains_a_new_dictionary_once_the_newest_is_a_week_old(client, conn, settings):
    payloads._codecs.clear()
    await post_batches(client, [spark_like(n) for n in range(payloads.TRAIN_AFTER + 100)])
    first = await trained_dictionary(conn)
    await upkeep(settings)
    assert await conn.fetchval("SELECT count(*) FROM payload_dictionaries") == 1  # not due yet

    await conn.execute("UPDATE payload_dictionaries SET created_at = now() - interval '8 days'")
    await upkeep(settings)
    newest = await conn.fetchval("SELECT max(dictionary_id) FROM payload_dictionaries")
    assert newest > first
    await post_batches(client, [spark_like(10_000)])
    assert zstandard.get_frame_parameters((await frames(conn))[-1]).dict_id == newest
    assert json.loads((await stored_payloads(conn))[-1]) == spark_like(10_000)
