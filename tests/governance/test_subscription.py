"""The whole story on a real `headwater serve`: OpenLineage events over HTTP, the governance worker
applying them, violations announced over lineageChanges (graphql-transport-ws) within a second."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from tests.governance import pipeline as p
from tests.pg import migrated_database
from tests.server import running_headwater

pytestmark = [pytest.mark.db, pytest.mark.slow]

CHANGES = """subscription($after: String, $filter: LineageChangeFilter) {
  lineageChanges(after: $after, filter: $filter) { cursor kind nodeId namespace details }
}"""


@asynccontextmanager
async def subscribe(url: str, after: str, kinds: list[str]) -> AsyncIterator[Any]:
    ws_url = url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(ws_url, subprotocols=["graphql-transport-ws"]) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        payload = {"query": CHANGES, "variables": {"after": after, "filter": {"kinds": kinds}}}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        yield ws


async def next_change(ws: Any, timeout: float) -> dict[str, Any]:
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if message["type"] == "ping":
            await ws.send(json.dumps({"type": "pong"}))
            continue
        assert message["type"] == "next", message
        assert "errors" not in message["payload"], message
        return message["payload"]["data"]["lineageChanges"]


async def post(http: httpx.AsyncClient, events: list[dict[str, Any]]) -> float:
    """Post the events in order; returns when the last one was committed (monotonic clock)."""
    for event in events:
        response = await http.post("/api/v1/lineage", json=event)
        assert response.status_code == 201, response.text
    return time.monotonic()


async def wait_for_labels(
    http: httpx.AsyncClient, dataset: tuple[str, str], field: str, label: str
) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        response = await http.get(
            "/api/v1/governance/classifications", params={"namespace": dataset[0], "name": dataset[1]}
        )
        if response.status_code == 200 and any(
            f["field"] == field and label in f["labels"] for f in response.json()["fields"]
        ):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{dataset} {field} never got {label}")


async def test_a_violation_is_announced_within_a_second_and_cleared_by_the_next_version(
    pg_server: str, tmp_path: Path
):
    from tests.governance.conftest import POLICY

    policy = tmp_path / "policies.toml"
    policy.write_text(POLICY)
    async with migrated_database(pg_server, "headwater_governance_e2e") as url:
        env = {"HEADWATER_POLICIES": str(policy)}
        with running_headwater(url, tmp_path / "serve.log", secured=False, env=env) as server:
            async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
                await post(http, p.upstream())
                await wait_for_labels(http, p.CONTACTS, "email", "pii")
                cursor = (await http.post("/graphql", json={"query": "{ latestChangeCursor }"})).json()
                after = cursor["data"]["latestChangeCursor"]
                kinds = ["POLICY_VIOLATION", "POLICY_VIOLATION_CLEARED"]
                async with subscribe(server.url, after, kinds) as ws:
                    committed = await post(http, p.export_newsletter(1))
                    opened = await next_change(ws, timeout=5)
                    opened_after = time.monotonic() - committed
                    assert opened["kind"] == "POLICY_VIOLATION"
                    assert opened["nodeId"] == f"dataset:{p.TRINO}:hive.public.newsletter"
                    assert opened["details"]["rule"] == "no-pii-in-public"
                    assert opened["details"]["field"] == "recipient"
                    assert [h["field"] for h in opened["details"]["path"]] == [
                        "email",
                        "email_norm",
                        "contact_email",
                        "email",
                        "recipient",
                    ]
                    assert opened_after < 1.0, f"announced {opened_after:.3f}s after the event"

                    listed = (await http.get("/api/v1/governance/violations")).json()["violations"]
                    assert [(v["rule"], v["field"], v["openedCursor"]) for v in listed] == [
                        ("no-pii-in-public", "recipient", opened["cursor"])
                    ]

                    committed = await post(http, p.export_newsletter(2, minutes=40))
                    cleared = await next_change(ws, timeout=5)
                    cleared_after = time.monotonic() - committed
                    assert cleared["kind"] == "POLICY_VIOLATION_CLEARED"
                    assert cleared["details"]["field"] == "recipient"
                    assert cleared_after < 1.0, f"cleared {cleared_after:.3f}s after the event"
                open_now = (await http.get("/api/v1/governance/violations")).json()["violations"]
                assert open_now == []
