"""GraphiQL at /graphql in a real Chromium against a real server, with every request to another host
aborted and recorded: the page renders, runs a query over HTTP and a subscription over
graphql-transport-ws, and never tries to reach the internet."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx
import pytest

from tests.factories import run_event
from tests.server import HeadwaterServer
from tests.web.conftest import CHROMIUM, CHROMIUM_ARGS, browser_missing

_missing = browser_missing()
pytestmark = [
    pytest.mark.db,
    pytest.mark.slow,
    pytest.mark.skipif(_missing is not None, reason=_missing or ""),
]
playwright_api = pytest.importorskip(
    "playwright.async_api", reason="Playwright for Python is not installed (pip install -e '.[dev,e2e]')"
)
expect = playwright_api.expect

QUERY_EDITOR = ".graphiql-query-editor .CodeMirror"
RUN_BUTTON = ".graphiql-execute-button"
RESPONSE = ".graphiql-response"


@dataclass
class OfflinePage:
    """A GraphiQL page whose requests to anything but the server were aborted and recorded."""

    page: object
    server: HeadwaterServer
    external: list[str] = field(default_factory=list)
    websockets: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@pytest.fixture
async def graphiql(server: HeadwaterServer) -> AsyncIterator[OfflinePage]:
    own = urlsplit(server.url).netloc
    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context()
            page = await context.new_page()
            offline = OfflinePage(page=page, server=server)

            async def only_the_server(route: playwright_api.Route) -> None:
                url = urlsplit(route.request.url)
                if url.scheme in {"data", "blob"} or url.netloc == own:
                    await route.continue_()
                else:
                    offline.external.append(route.request.url)
                    await route.abort()

            await context.route("**/*", only_the_server)
            page.on("websocket", lambda ws: offline.websockets.append(ws.url))
            page.on("pageerror", lambda error: offline.errors.append(str(error)))
            await page.goto(f"{server.url}/graphql")
            yield offline
        finally:
            await browser.close()
    assert offline.external == [], f"the page tried to reach other hosts: {offline.external}"
    assert all(urlsplit(u).netloc == own for u in offline.websockets), offline.websockets
    assert offline.errors == [], offline.errors


async def run_in_graphiql(page: playwright_api.Page, operation: str) -> None:
    """Replace the editor's text by typing ``operation``, then press the run button."""
    editor = page.locator(QUERY_EDITOR)
    await editor.click()
    await page.keyboard.press("Control+A")
    await page.keyboard.press("Delete")
    await page.keyboard.type(operation)
    await page.keyboard.press("Escape")  # closes an autocompletion list, if one is open
    # GraphiQL parses the editor 100 ms after the last key (and then stores the text): running
    # before that would send the previous document's kind (query, not subscription).
    await page.wait_for_function(
        "text => window.localStorage.getItem('graphiql:query') === text", arg=operation
    )
    await page.locator(RUN_BUTTON).click()


def post_event(server: HeadwaterServer, namespace: str) -> None:
    response = httpx.post(
        f"{server.url}/api/v1/lineage",
        json=run_event(f"job_{uuid.uuid4().hex[:6]}", namespace=namespace),
        timeout=10,
    )
    assert response.status_code in {200, 201}, response.text


async def test_graphiql_renders_and_runs_a_query_without_the_internet(graphiql: OfflinePage) -> None:
    page = graphiql.page
    namespace = f"graphiql_{uuid.uuid4().hex[:8]}"
    post_event(graphiql.server, namespace)

    await expect(page.locator(QUERY_EDITOR)).to_be_visible(timeout=20_000)
    await expect(page.locator(RUN_BUTTON)).to_be_visible()
    await run_in_graphiql(page, "{ namespaces { name } }")

    await expect(page.locator(RESPONSE)).to_contain_text(namespace, timeout=20_000)
    await expect(page.locator(RESPONSE)).to_contain_text('"namespaces"')


async def test_graphiql_subscription_receives_changes_over_graphql_ws(graphiql: OfflinePage) -> None:
    page = graphiql.page
    namespace = f"graphiql_ws_{uuid.uuid4().hex[:8]}"

    await expect(page.locator(QUERY_EDITOR)).to_be_visible(timeout=20_000)
    await run_in_graphiql(page, "subscription { lineageChanges { kind namespace } }")

    # The subscription starts "from now" once the server has it: post until a change arrives.
    response = page.locator(RESPONSE)
    deadline = time.monotonic() + 30
    while True:
        await asyncio.to_thread(post_event, graphiql.server, namespace)
        try:
            await expect(response).to_contain_text(namespace, timeout=2_000)
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
    await expect(response).to_contain_text('"lineageChanges"')
    assert any(urlsplit(u).path == "/graphql" and u.startswith("ws://") for u in graphiql.websockets), (
        graphiql.websockets
    )
