"""The GraphiQL page at GET /graphql names only this server: its bundle is served from the package
under /graphql/static, versioned by content; JSON clients of /graphql still get GraphQL."""

from __future__ import annotations

import hashlib
import re
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import pytest

from headwater.api.graphql.graphiql import STATIC_DIR

pytestmark = pytest.mark.db

ABSOLUTE_URL = re.compile(r"\b(?:https?|wss?):|//[a-z0-9.-]+", re.IGNORECASE)


class References(HTMLParser):
    """The src and href attributes of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value or "" for name, value in attrs if name in {"src", "href"}]


async def graphiql_page(client) -> str:
    response = await client.get("/graphql", headers={"accept": "text/html"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    return response.text


async def test_graphiql_page_references_nothing_outside_the_server(client):
    html = await graphiql_page(client)

    assert ABSOLUTE_URL.findall(html) == []
    references = References()
    references.feed(html)
    assets = [u for u in references.urls if not u.startswith("data:")]
    assert sorted(urlsplit(u).path for u in assets) == [
        "/graphql/static/graphiql.css",
        "/graphql/static/graphiql.js",
    ]
    assert all(u.startswith("/") and not u.startswith("//") for u in assets), assets
    assert 'data-endpoint="/graphql"' in html


async def test_graphiql_assets_come_from_the_package_versioned_by_content(client):
    references = References()
    references.feed(await graphiql_page(client))
    types = {".js": "text/javascript", ".css": "text/css"}
    for url in (u for u in references.urls if u.startswith("/")):
        path = urlsplit(url).path
        name = path.rsplit("/", 1)[-1]
        response = await client.get(url)
        assert response.status_code == 200, url
        assert response.headers["content-type"].startswith(types[name[name.rindex(".") :]]), url
        assert response.content == (STATIC_DIR / name).read_bytes()
        version = parse_qs(urlsplit(url).query)["v"][0]
        assert hashlib.sha256(response.content).hexdigest().startswith(version)


def test_graphiql_stylesheet_loads_nothing_more():
    css = (STATIC_DIR / "graphiql.css").read_text(encoding="utf-8")
    assert "@import" not in css
    urls = re.findall(r"url\(\s*['\"]?([^'\")]*)", css)
    assert urls, "the fonts are inlined as data: URLs"
    assert [u for u in urls if not u.startswith(("data:", "#"))] == []


async def test_graphql_endpoint_still_answers_json_clients(client):
    by_get = await client.get(
        "/graphql", params={"query": "{ __typename }"}, headers={"accept": "application/json"}
    )
    assert by_get.status_code == 200
    assert by_get.json() == {"data": {"__typename": "Query"}}
    by_post = await client.post("/graphql", json={"query": "{ namespaces { name } }"})
    assert by_post.status_code == 200
    assert by_post.json() == {"data": {"namespaces": []}}


async def test_only_the_bundle_is_served_under_static(client):
    assert (await client.get("/graphql/static/graphiql.py")).status_code == 404
    assert (await client.get("/graphql/static/../graphiql.py")).status_code == 404
    assert (await client.get("/graphql/static/graphiql.licenses.txt")).status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/graphql/static/graphiql.js/x",  # a path under a file
        "/graphql/static/" + "a" * 300,  # a name too long for the file system
        "/graphql/static/.",
        "/graphql/static/%2e%2e%2fgraphiql.py",
    ],
)
async def test_a_name_the_bundle_does_not_hold_is_a_404_naming_no_directory(client, path):
    response = await client.get(path)
    assert response.status_code == 404, response.text
    assert "/headwater/" not in response.text


async def test_a_bundle_file_already_held_is_a_304(client):
    first = await client.get("/graphql/static/graphiql.css")
    etag = first.headers["etag"]
    again = await client.get("/graphql/static/graphiql.css", headers={"if-none-match": etag})
    weak = await client.get("/graphql/static/graphiql.css", headers={"if-none-match": f"W/{etag}"})
    other = await client.get("/graphql/static/graphiql.css", headers={"if-none-match": '"0"'})
    assert first.headers["cache-control"] == "max-age=86400"
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag)
    assert weak.status_code == 304
    assert (other.status_code, other.content) == (200, first.content)
