"""The console at `/` and at each of its pages' URLs, from files inside the package: no CDN.

The bundle (console.js, console.css) is built from backend/web/console (npm ci && npm run build)
and served under /console/static; the page names each file with a hash of its content, so a new
build is never mixed with a cached old one. Every client-side route answers the same page, so a
shared or reloaded URL opens where it points; the console reads its data only over /graphql.
"""

from __future__ import annotations

from functools import cache
from html import escape
from pathlib import Path

from litestar import get
from litestar.datastructures import CacheControlHeader

from headwater.api.bundles import Bundle

STATIC_PATH = "/console/static"
STATIC_DIR = Path(__file__).parent / "static"
BUNDLE = Bundle(STATIC_PATH, STATIC_DIR)
TEMPLATE = Path(__file__).parent / "console.html"
# The console's own routes (see src/main.jsx); none of them is an API path.
PAGES = ("/", "/datasets", "/jobs", "/lineage", "/impact", "/root-cause")


@cache
def console_html() -> str:
    """The console's page, its assets on this server only."""
    return TEMPLATE.read_text(encoding="utf-8").format(
        css=escape(BUNDLE.versioned("console.css")), js=escape(BUNDLE.versioned("console.js"))
    )


# The page shows what producers sent (names, facets, SQL): were any of it ever rendered as markup,
# the browser would still run only this server's scripts and talk only to this server.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


@get(
    list(PAGES),
    media_type="text/html",
    include_in_schema=False,
    cache_control=CacheControlHeader(no_cache=True),
    response_headers={"content-security-policy": CONTENT_SECURITY_POLICY},
    sync_to_thread=False,
)
def console_page() -> str:
    """The console; it holds no data, so it answers without a key and asks for one when needed."""
    return console_html()
