"""Every request needs a key with the right scope once any key exists (see access/keys.py).

One guard on the whole app decides by method and path, so no route can be forgotten:

- open: `/healthz`, `/readyz`, the GraphiQL page and its scripts, the console's pages and scripts,
  and `/metrics` when HEADWATER_METRICS_OPEN is set;
- ``ingest``: `POST` of events (`/api/v1/lineage`, `/api/v1/lineage/batch`, the Trino bridge);
- ``read``: every other `GET`, `POST /graphql` (whose mutations also need ``write``, checked per
  operation), `/mcp`, and websockets;
- ``write``: every other `POST`, `PUT`, `PATCH` and `DELETE`.

The key comes as `Authorization: Bearer <key>`, as OpenLineage clients send it. A GraphQL websocket
may instead send it in its `connection_init` payload (`{"Authorization": "Bearer <key>"}`), since
browsers cannot set headers on websockets; such a connection is let through here and checked when
that message arrives. The scopes a request was granted are kept in its state for that check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from litestar import Request

from headwater.access.keys import ALL_SCOPES
from headwater.api.console.routes import PAGES as CONSOLE_PAGES
from headwater.api.console.routes import STATIC_PATH as CONSOLE_STATIC
from headwater.errors import ForbiddenError, UnauthorizedError

if TYPE_CHECKING:
    from litestar.connection import ASGIConnection
    from litestar.handlers.base import BaseRouteHandler

    from headwater.access.keys import KeyRing

INGEST_PATHS = frozenset({"/api/v1/lineage", "/api/v1/lineage/batch", "/api/v1/integrations/trino"})
OPEN_PATHS = frozenset({"/healthz", "/readyz"})
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SCOPES_STATE = "headwater_scopes"
PENDING_STATE = "headwater_key_pending"


def required_scope(
    method: str | None, path: str, query: bytes = b"", *, metrics_open: bool
) -> str | None:
    """The scope a request needs; None when it needs none. ``method`` is None for a websocket."""
    if path in OPEN_PATHS or (path == "/metrics" and metrics_open):
        return None
    # The GraphiQL page and its scripts hold no data, and a browser cannot send a key when it opens
    # a page: they are open; every operation GraphiQL then sends needs the key (its Headers tab).
    if method == "GET" and (path.startswith("/graphql/static/") or (path == "/graphql" and not query)):
        return None
    # Likewise the console: its pages ask for a key when /graphql answers 401, and send it there.
    if method == "GET" and (path in CONSOLE_PAGES or path.startswith(CONSOLE_STATIC + "/")):
        return None
    if method is None or method in READ_METHODS:
        return "read"
    if method == "POST" and path in INGEST_PATHS:
        return "ingest"
    if method == "POST" and (path == "/graphql" or path == "/mcp" or path.startswith("/mcp/")):
        return "read"
    return "write"


def bearer_token(value: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` value, else None."""
    scheme, _, token = (value or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


async def check_key(keys: KeyRing, token: str | None, scope: str) -> frozenset[str]:
    """The scopes granted to a key that has ``scope``; 401 without a valid key, 403 without it."""
    if token is None:
        raise UnauthorizedError("This server needs an API key: send 'Authorization: Bearer <key>'.")
    scopes = await keys.scopes_of(token)
    if scopes is None:
        raise UnauthorizedError("The API key is not valid (unknown, revoked or mistyped).")
    if scope not in scopes:
        raise ForbiddenError(f"The API key lacks the '{scope}' scope this request needs.")
    return scopes


def refuse_cross_site(connection: ASGIConnection[Any, Any, Any, Any]) -> None:
    """403 for a write, or a websocket, that a page of another site makes the browser send.

    A server without API keys takes writes from anyone who reaches it, which is its point; but a
    page on another site, open in a browser that reaches it, must not write through that browser:
    a form or a body of text/plain is a "simple" request, sent without asking the server first, and
    a websocket is not bound by the same-origin policy at all. Browsers say where a request comes
    from in Sec-Fetch-Site; clients that are not browsers do not send it, and are not concerned.
    """
    method = connection.method if isinstance(connection, Request) else None
    if method in READ_METHODS:
        return
    if connection.headers.get("sec-fetch-site", "").strip().lower() == "cross-site":
        what = "a websocket" if method is None else f"a {method}"
        raise ForbiddenError(
            f"Refused {what} from a page of another site (Sec-Fetch-Site: cross-site): Headwater "
            "takes writes and subscriptions from its clients and from its own pages."
        )


async def require_key(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """The app's guard: let the request through, or raise 401/403 naming what is missing."""
    state = connection.app.state
    method = connection.method if isinstance(connection, Request) else None
    websocket = method is None
    scope = required_scope(
        method,
        connection.scope["path"],
        connection.scope.get("query_string", b""),
        metrics_open=state.settings.metrics_open,
    )
    if scope is None:  # decided before asking the database: /healthz answers while it is down
        return
    if not await state.key_ring.closed():
        connection.state[SCOPES_STATE] = ALL_SCOPES
        return
    token = bearer_token(connection.headers.get("authorization"))
    if websocket and token is None and connection.scope["path"] == "/graphql":
        connection.state[PENDING_STATE] = True  # its connection_init payload will tell
        return
    connection.state[SCOPES_STATE] = await check_key(state.key_ring, token, scope)
