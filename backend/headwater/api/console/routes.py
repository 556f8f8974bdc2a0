"""The console at `/` and at each of its pages' URLs, from files inside the package: no CDN.

The bundle (console.js, console.css) is built from backend/web/console (npm ci && npm run build)
and served under /console/static; the page names each file with a hash of its content, so a new
build is never mixed with a cached old one. Every client-side route answers the same page, so a
shared or reloaded URL opens where it points; the console reads its data only over /graphql.
"""

from __future__ import annotations

import hashlib
from functools import cache
from html import escape
from pathlib import Path

from litestar import Router, get
from litestar.datastructures import CacheControlHeader
from litestar.static_files import create_static_files_router

STATIC_PATH = "/console/static"
STATIC_DIR = Path(__file__).parent / "static"
TEMPLATE = Path(__file__).parent / "console.html"
# The console's own routes (see src/main.jsx); none of them is an API path.
PAGES = ("/", "/datasets", "/jobs", "/lineage", "/impact", "/root-cause")


def _versioned(name: str) -> str:
    digest = hashlib.sha256((STATIC_DIR / name).read_bytes()).hexdigest()[:12]
    return f"{STATIC_PATH}/{name}?v={digest}"


@cache
def console_html() -> str:
    """The console's page, its assets on this server only."""
    return TEMPLATE.read_text(encoding="utf-8").format(
        css=escape(_versioned("console.css")), js=escape(_versioned("console.js"))
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


def console_static_router() -> Router:
    """GET /console/static/<file>: the built console bundle."""
    return create_static_files_router(
        path=STATIC_PATH,
        directories=[STATIC_DIR],
        name="console-static",
        cache_control=CacheControlHeader(max_age=86400),
        include_in_schema=False,
    )
