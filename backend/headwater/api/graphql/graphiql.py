"""GraphiQL at GET /graphql from files inside the package: a page of ours, no CDN.

The bundle (graphiql.js, graphiql.css) is built from backend/web/graphiql (npm ci && npm run build)
and served under /graphql/static; the page names each file with a hash of its content, so a new
build is never mixed with a cached old one.
"""

from __future__ import annotations

import hashlib
from functools import cache
from html import escape
from pathlib import Path

from litestar import Router
from litestar.datastructures import CacheControlHeader
from litestar.static_files import create_static_files_router

ENDPOINT = "/graphql"
STATIC_PATH = "/graphql/static"
STATIC_DIR = Path(__file__).parent / "static"
TEMPLATE = Path(__file__).parent / "graphiql.html"


def _versioned(name: str) -> str:
    digest = hashlib.sha256((STATIC_DIR / name).read_bytes()).hexdigest()[:12]
    return f"{STATIC_PATH}/{name}?v={digest}"


@cache
def graphiql_html() -> str:
    """The GraphiQL page, its assets on this server only."""
    return TEMPLATE.read_text(encoding="utf-8").format(
        css=escape(_versioned("graphiql.css")),
        js=escape(_versioned("graphiql.js")),
        endpoint=escape(ENDPOINT),
    )


def graphiql_static_router() -> Router:
    """GET /graphql/static/<file>: the built GraphiQL bundle."""
    return create_static_files_router(
        path=STATIC_PATH,
        directories=[STATIC_DIR],
        name="graphiql-static",
        cache_control=CacheControlHeader(max_age=86400),
        include_in_schema=False,
    )
