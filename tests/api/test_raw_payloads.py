"""A raw event is stored as the JSON text ingest encoded, byte for byte (compressed with zstd, not
parsed into jsonb), and what reads it by field or as a whole still does: a run's code, the export's
namespace filter, Marquez's event list."""

from __future__ import annotations

import json
import uuid
from typing import Any

import msgspec
import pytest

from headwater.ingest.service import prepare_events
from headwater.ingest.validate import validate_event
from headwater.store.job_code import RunCode, fetch_code_of_runs
from headwater.store.pipeline import fetch_id_range
from tests.client import all_stored_events
from tests.factories import PRODUCER, at, dataset, run_event, sql_facet
from tests.snapshot import stored_payloads

pytestmark = pytest.mark.db


def encoded(body: bytes) -> str:
    """The payload ingest stores for a request body: decoded and encoded as the server does."""
    [prepared] = prepare_events([validate_event(msgspec.json.decode(body))], [])
    return prepared.payload


async def payloads(conn: Any) -> list[str]:
    return await stored_payloads(conn)


async def test_the_stored_payload_is_the_text_ingest_encoded(client, conn):
    event = run_event(
        "load_café",
        inputs=["raw_orders"],
        outputs=["orders"],
        job_facets=sql_facet("SELECT 'naïve ☃ \U0001f600' AS x, 1.50 AS y"),
        run_facets={"custom": {"_producer": PRODUCER, "_schemaURL": "x", "zeta": 1, "a": [1.25, None]}},
    )
    # Keys in an order jsonb would not keep (it sorts them by length), with spaces and newlines.
    body = json.dumps(dict(reversed(event.items())), indent=2, ensure_ascii=False).encode()
    response = await client.post(
        "/api/v1/lineage", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 201, response.text
    assert await conn.fetchval("SELECT payload IS NULL AND payload_zstd IS NOT NULL FROM raw_events")
    [stored] = await payloads(conn)
    assert stored.encode() == encoded(body).encode()
    # The request's key order, compact: nothing jsonb's text form would give.
    assert stored.startswith('{"outputs":[{"namespace":"warehouse"')
    assert json.loads(stored) == event


async def test_a_batch_stores_each_event_as_encoded(client, conn):
    events = [
        run_event("a", "START", run_id=uuid.uuid4(), outputs=["x"], time=1),
        {
            "eventTime": at(2),
            "producer": PRODUCER,
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
            "dataset": dataset("daily", fields=[("day", "date")]),
        },
    ]
    response = await client.post("/api/v1/lineage/batch", json=events)
    assert response.status_code in (200, 201), response.text
    assert await payloads(conn) == [encoded(json.dumps(e).encode()) for e in events]


async def test_a_runs_code_is_read_from_its_stored_payload(client, conn):
    with_sql, with_source, without = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    source = {
        "sourceCode": {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/SourceCodeJobFacet.json",
            "language": "python",
            "sourceCode": "print('hi')",
        }
    }
    events = [
        run_event("q", "START", run_id=with_sql, time=1, job_facets=sql_facet("SELECT 1")),
        run_event("q", "COMPLETE", run_id=with_sql, time=2, job_facets=sql_facet("SELECT 2")),
        run_event("p", "COMPLETE", run_id=with_source, time=3, job_facets=source),
        run_event("n", "COMPLETE", run_id=without, time=4),
    ]
    for event in events:
        assert (await client.post("/api/v1/lineage", json=event)).status_code == 201
    assert await fetch_code_of_runs(conn, [with_sql, with_source, without]) == {
        with_sql: RunCode("SELECT 2", "SQL"),
        with_source: RunCode("print('hi')", "python"),
    }


async def test_the_export_query_filters_by_namespace_and_returns_the_payload(client, conn):
    events = [
        run_event("by_job", namespace="ns_a", time=1),
        run_event("by_input", inputs=[{"namespace": "ns_a", "name": "t"}], time=2),
        run_event("by_output", outputs=[{"namespace": "ns_a", "name": "u"}], time=3),
        {
            "eventTime": at(4),
            "producer": PRODUCER,
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
            "dataset": {"namespace": "ns_a", "name": "v"},
        },
        run_event("other", inputs=[{"namespace": "ns_b", "name": "t"}], time=5),
    ]
    for event in events:
        assert (await client.post("/api/v1/lineage", json=event)).status_code == 201
    stored = await payloads(conn)

    async def export(namespace: str | None) -> list[str]:
        rows = await fetch_id_range(
            conn, "fetch_raw_events_for_export", 0, 2**62, (None, None, namespace)
        )
        return [payload for _, _, payload in sorted(rows, key=lambda r: r[0])]

    assert await export(None) == stored
    assert await export("ns_a") == stored[:4]
    assert await export("ns_b") == stored[4:]
    assert await export("ns_c") == []


async def test_marquez_event_list_joins_the_stored_payloads(client, conn):
    events = [run_event("m", "START", time=1, outputs=["o"]), run_event("m", time=2, outputs=["o"])]
    for event in events:
        assert (await client.post("/api/v1/lineage", json=event)).status_code == 201
    stored = await payloads(conn)
    response = await all_stored_events(client)
    assert response.status_code == 200, response.text
    assert response.content == b'{"events":[' + ",".join(stored).encode() + b'],"totalCount":2}'
    assert response.json()["events"] == events
