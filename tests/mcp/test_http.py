"""/mcp on `headwater serve`: the key guard applies (the ``read`` scope), and it can be switched off."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import httpx
import pytest

from headwater.access.keys import new_key
from headwater.store.api_keys import insert_api_key
from tests.mcp.conftest import call, http_session
from tests.server import HeadwaterServer, running_headwater

pytestmark = [pytest.mark.db, pytest.mark.slow]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}
HEADERS = {"accept": "application/json, text/event-stream"}


async def make_key(database: str, scope: str) -> str:
    conn = await asyncpg.connect(database)
    try:
        key_id, key, secret_hash = new_key()
        await insert_api_key(conn, key_id, f"mcp-{scope}", secret_hash, [scope])
    finally:
        await conn.close()
    return key


async def test_mcp_needs_a_key_with_the_read_scope(served: HeadwaterServer, database: str) -> None:
    read_key = await make_key(database, "read")
    ingest_key = await make_key(database, "ingest")
    async with httpx.AsyncClient(base_url=served.url) as http:
        anonymous = await http.post("/mcp", json=INITIALIZE, headers=HEADERS)
        wrong = await http.post(
            "/mcp", json=INITIALIZE, headers={**HEADERS, "authorization": "Bearer nope"}
        )
        ingest_only = await http.post(
            "/mcp", json=INITIALIZE, headers={**HEADERS, "authorization": f"Bearer {ingest_key}"}
        )
    assert anonymous.status_code == wrong.status_code == 401
    assert anonymous.json()["code"] == "unauthorized"
    assert ingest_only.status_code == 403
    assert "'read' scope" in ingest_only.json()["detail"]
    async with http_session(served.url, read_key) as session:
        answer = await call(session, "search", text="orders", kinds=["DATASET"])
    assert answer["total"] >= 1


async def test_mcp_is_off_when_the_setting_says_so(database: str, tmp_path: Path) -> None:
    with running_headwater(database, tmp_path / "serve.log", env={"HEADWATER_MCP": "0"}) as server:
        async with httpx.AsyncClient(
            base_url=server.url, headers={"authorization": f"Bearer {server.api_key}"}
        ) as http:
            response = await http.post("/mcp", json=INITIALIZE, headers=HEADERS)
            lineage = await http.get("/api/v1/namespaces")
    assert response.status_code == 404
    assert lineage.status_code == 200


async def test_mcp_opens_no_event_stream(served: HeadwaterServer, database: str) -> None:
    # Stateless: nothing would ever be sent on one, and each stayed open for as long as its client
    # liked, pinged every 15 s.
    read_key = await make_key(database, "read")
    headers = {"accept": "text/event-stream", "authorization": f"Bearer {read_key}"}
    async with httpx.AsyncClient(base_url=served.url, timeout=5) as http:
        answer = await http.get("/mcp", headers=headers)
    assert answer.status_code == 405
    assert answer.headers["allow"] == "POST"
    assert answer.json()["detail"] == (
        "GET is not allowed on /mcp: it answers each POST and opens no event stream."
    )
