"""GraphiQL at GET /graphql from files inside the package: a page of ours, no CDN.

The bundle (graphiql.js, graphiql.css) is built from backend/web/graphiql (npm ci && npm run build)
and served under /graphql/static; the page names each file with a hash of its content, so a new
build is never mixed with a cached old one.
"""

from __future__ import annotations

from functools import cache
from html import escape
from pathlib import Path

from headwater.api.bundles import Bundle

ENDPOINT = "/graphql"
STATIC_PATH = "/graphql/static"
STATIC_DIR = Path(__file__).parent / "static"
BUNDLE = Bundle(STATIC_PATH, STATIC_DIR)
TEMPLATE = Path(__file__).parent / "graphiql.html"


@cache
def graphiql_html() -> str:
    """The GraphiQL page, its assets on this server only."""
    return TEMPLATE.read_text(encoding="utf-8").format(
        css=escape(BUNDLE.versioned("graphiql.css")),
        js=escape(BUNDLE.versioned("graphiql.js")),
        endpoint=escape(ENDPOINT),
    )
