"""A `headwater serve` on its own database holding the OpenLineage reference events and a pipeline
with a schema change, a changed job and a failed run; MCP sessions over HTTP and over stdio."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.corpus import EVENTS
from tests.factories import mixed_history
from tests.pg import migrated_database
from tests.server import REPO, HeadwaterServer, running_headwater

SUFFIXES = (".invalid.json", ".lenient.json", ".template.json", ".example.json")


def reference_events() -> list[dict[str, Any]]:
    """Every complete event of the shared corpus, in file order; none where it is absent."""
    if not EVENTS.is_dir():
        return []
    paths = sorted(p for p in EVENTS.rglob("*.json") if not p.name.endswith(SUFFIXES))
    return [json.loads(p.read_text()) for p in paths]


@pytest.fixture(scope="module")
async def database(pg_server: str) -> AsyncIterator[str]:
    async with migrated_database(pg_server, "headwater_mcp") as url:
        yield url


@pytest.fixture(scope="module")
async def served(
    database: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[HeadwaterServer]:
    log = tmp_path_factory.mktemp("mcp") / "serve.log"
    with running_headwater(database, log) as server:
        async with httpx.AsyncClient(
            base_url=server.url, headers={"authorization": f"Bearer {server.api_key}"}, timeout=30
        ) as http:
            for event in [*reference_events(), *mixed_history()]:
                response = await http.post("/api/v1/lineage", json=event)
                assert response.status_code == 201, response.text
        yield server


@pytest.fixture(scope="module")
async def rest(served: HeadwaterServer) -> AsyncIterator[httpx.AsyncClient]:
    """The same server's REST and GraphQL API, to compare answers with."""
    async with httpx.AsyncClient(
        base_url=served.url, headers={"authorization": f"Bearer {served.api_key}"}, timeout=30
    ) as http:
        yield http


@asynccontextmanager
async def http_session(url: str, key: str | None) -> AsyncIterator[ClientSession]:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def stdio_session(database_url: str) -> AsyncIterator[ClientSession]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
    env["HEADWATER_DATABASE_URL"] = database_url
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "headwater.cli", "mcp"], env=env, cwd=REPO
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


Sessions = Callable[[], AbstractAsyncContextManager[ClientSession]]


@pytest.fixture(scope="module", params=["http", "stdio"])
def sessions(request: pytest.FixtureRequest, served: HeadwaterServer, database: str) -> Sessions:
    """Opens an MCP session over one transport or the other, on the same database."""
    if request.param == "http":
        return lambda: http_session(served.url, served.api_key)
    return lambda: stdio_session(database)


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured answer; the call must succeed and its text must carry the same JSON."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert json.loads(result.content[1].text) == result.structured_content
    return result.structured_content
