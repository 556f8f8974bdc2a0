"""The web console's page at / and at each of its routes: served from the package, naming only
this server, open without a key (it holds no data) while /graphql still needs one. (None of these
reads data: they use the app without emptying the session database first.)"""

from __future__ import annotations

import dataclasses
import hashlib
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import pytest
from litestar.testing import AsyncTestClient

from headwater.api.console.routes import PAGES, STATIC_DIR
from headwater.app import create_app

pytestmark = pytest.mark.db


class Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [
            v or "" for k, v in attrs if k in {"src", "href"} and not (v or "").startswith("data:")
        ]


@pytest.mark.parametrize("path", [*PAGES, "/lineage?node=dataset%3Aa%3Ab&asOf=2026-01-01T00%3A00%3A00Z"])
async def test_every_console_route_answers_the_page(app_client, path):
    response = await app_client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert '<div id="app">' in response.text
    # A new build must reach browsers at once: the page is revalidated, its assets are versioned.
    assert "no-cache" in response.headers["cache-control"]
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "connect-src 'self'" in policy


async def test_the_page_loads_its_bundle_from_the_package_versioned_by_content(app_client):
    assets = Assets()
    assets.feed((await app_client.get("/")).text)
    assert sorted(urlsplit(u).path for u in assets.urls) == [
        "/console/static/console.css",
        "/console/static/console.js",
    ]
    for url in assets.urls:
        name = urlsplit(url).path.rsplit("/", 1)[-1]
        body = (STATIC_DIR / name).read_bytes()
        assert parse_qs(urlsplit(url).query)["v"] == [hashlib.sha256(body).hexdigest()[:12]]
        response = await app_client.get(url)
        assert response.status_code == 200
        assert response.content == body


async def test_paths_outside_the_console_are_not_the_page(app_client):
    assert (await app_client.get("/datasets/extra")).status_code == 404
    assert (await app_client.get("/console/static/nothing.js")).status_code == 404
    assert (await app_client.get("/healthz")).json() == {"status": "ok"}


async def test_with_keys_the_page_is_open_and_graphql_asks_for_a_key(settings):
    secured = dataclasses.replace(settings, api_key="console-test-key")
    async with AsyncTestClient(app=create_app(secured)) as client:
        assert (await client.get("/")).status_code == 200
        assert (await client.get("/lineage")).status_code == 200
        assert (await client.get("/console/static/console.js")).status_code == 200
        query = {"query": "{ namespaces { name } }"}
        refused = await client.post("/graphql", json=query)
        assert refused.status_code == 401
        assert "API key" in refused.json()["detail"]
        allowed = await client.post(
            "/graphql", json=query, headers={"authorization": "Bearer console-test-key"}
        )
        assert allowed.status_code == 200
        # Other GETs are not opened by the console's: the catalog still needs the key.
        assert (await client.get("/api/v1/namespaces")).status_code == 401
