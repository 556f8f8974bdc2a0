"""create_app: routes, error handlers and the pool's lifespan, wired in one place."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from litestar import Litestar
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.enums import ScopeType
from litestar.exceptions import HTTPException
from litestar.handlers import BaseRouteHandler
from litestar.openapi import OpenAPIConfig
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from headwater import __version__
from headwater.access.keys import KeyRing
from headwater.api.auth import refuse_cross_site, require_key
from headwater.api.console.routes import BUNDLE as CONSOLE_BUNDLE
from headwater.api.console.routes import console_page
from headwater.api.graphql.graphiql import BUNDLE as GRAPHIQL_BUNDLE
from headwater.api.graphql.schema import GraphQLController
from headwater.api.graphql.stalled import guard_websockets
from headwater.api.methods import allowed_methods
from headwater.api.metrics import MetricsController, request_metrics
from headwater.api.parameters import refuse_nul_parameters, refuse_undecodable_url
from headwater.api.problems import app_error_handler, http_error_handler, unexpected_error_handler
from headwater.api.read_turns import ReadTurns
from headwater.api.rest.catalog import catalog_handlers, keep_encoded_slashes
from headwater.api.rest.column_lineage import get_column_lineage
from headwater.api.rest.governance import governance_handlers
from headwater.api.rest.health import healthz, readyz
from headwater.api.rest.ingest import post_lineage, post_lineage_batch
from headwater.api.rest.lineage import get_lineage, get_lineage_path
from headwater.api.rest.trino import post_trino_event
from headwater.consume.lifespan import kafka_consumer
from headwater.db.pool import create_pool
from headwater.errors import AppError
from headwater.feed.lifespan import change_feed
from headwater.governance.policy import load_policy
from headwater.governance.worker import governance_worker
from headwater.ingest.aliases import load_alias_rules
from headwater.ingest.queue import IngestQueue
from headwater.ingest.service import rare_collections
from headwater.operations.lifespan import periodic_upkeep
from headwater.settings import Settings, get_settings


def retry_after(seconds: int) -> Callable[[ASGIApp], ASGIApp]:
    """Every 503 says when to retry (OpenLineage clients retry a 503): overload, database down."""
    value = str(seconds).encode()

    def middleware(app: ASGIApp) -> ASGIApp:
        async def with_retry_after(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP:
                await app(scope, receive, send)
                return

            async def send_with_retry_after(message: Message) -> None:
                if message["type"] == "http.response.start" and message["status"] == 503:
                    headers = list(message.get("headers", []))
                    if not any(name.lower() == b"retry-after" for name, _ in headers):
                        headers.append((b"retry-after", value))
                    message = {**message, "headers": headers}
                await send(message)

            await app(scope, receive, send_with_retry_after)

        return with_retry_after

    return middleware


def answer_head_and_options(app: Litestar) -> Litestar:
    """HEAD is answered as GET is, without the body, on every route that takes GET (RFC 9110 asks
    it of a server; monitors and link checkers send it): the routes declare GET only. An OPTIONS
    answer names every method of its path, HEAD included (``api.methods``)."""
    inner: ASGIApp = app.asgi_handler

    async def answer_head(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or scope["method"] not in ("HEAD", "OPTIONS"):
            await inner(scope, receive, send)
            return
        if scope["method"] == "OPTIONS":
            allow = allowed_methods(app, scope["path"])

            async def send_allowed(message: Message) -> None:
                if message["type"] == "http.response.start" and allow and message["status"] == 204:
                    headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"allow"]
                    message = {**message, "headers": [*headers, (b"allow", allow.encode())]}
                await send(message)

            await inner(scope, receive, send_allowed)
            return

        async def send_without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await inner({**scope, "method": "GET"}, receive, send_without_body)

    app.asgi_handler = answer_head
    return app


async def check_request(
    connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
) -> None:
    """The app's one guard: a write from another site, the API key, then a URL that is not UTF-8
    and parameters holding U+0000. One guard, not several: Litestar copies the route handler for
    each guard of each request."""
    refuse_cross_site(connection)
    await require_key(connection, handler)
    refuse_undecodable_url(connection)
    await refuse_nul_parameters(connection, handler)


def create_app(settings: Settings | None = None) -> Litestar:
    """The Headwater ASGI app; needs settings.database_url (serve resolves the embedded default)."""
    settings = settings or get_settings()
    if not settings.database_url:
        raise ValueError("create_app needs a database URL (HEADWATER_DATABASE_URL)")
    mcp_routes, mcp_lifespans = [], []
    if settings.mcp:  # imported only when served: the SDK takes about a second to import
        from headwater.mcp.server import HttpEndpoint

        mcp = HttpEndpoint()
        mcp_routes, mcp_lifespans = [mcp.route], [mcp.lifespan]

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        app.state.pool = await create_pool(settings, settings.database_url or "")
        app.state.read_turns = ReadTurns(
            settings.lineage_reads_at_once, settings.pool_acquire_timeout_ms / 1000
        )
        # Quick statements that gate or describe the server: API key lookups (every request once
        # its key's cache runs out), readiness and /metrics. On the shared pool they queued behind
        # long lineage reads, so a server busy reading refused posts and reported itself unready.
        app.state.control_pool = await create_pool(settings, settings.database_url or "", size=2)
        app.state.key_ring = KeyRing(app.state.control_pool, settings.api_key)
        # Ingest writes through connections of its own: fifty readers of large lineage answers
        # holding every connection of the shared pool left posts waiting seconds for one, and some
        # answered 503. Its writers, and one to train the payload dictionary beside them.
        ingest_pool = await create_pool(
            settings, settings.database_url or "", size=settings.ingest_writers + 1
        )
        app.state.ingest_queue = IngestQueue(ingest_pool, app.state.alias_rules, settings)
        await app.state.ingest_queue.start()
        # What start-up allocated lives as long as the process: keep it out of the collector's
        # full passes, which otherwise add tens of milliseconds to large lineage answers. And
        # collect less often: requests and ingest groups allocate hundreds of thousands of small
        # objects that live for a request; with the default thresholds the collector kept passing
        # over them.
        gc.freeze()
        try:
            with rare_collections():
                yield
        finally:
            await app.state.ingest_queue.stop()
            await ingest_pool.close()
            await app.state.control_pool.close()
            await app.state.pool.close()

    app = answer_head_and_options(
        keep_encoded_slashes(
            Litestar(
                route_handlers=[
                    post_lineage,
                    post_lineage_batch,
                    get_lineage,
                    get_lineage_path,
                    get_column_lineage,
                    post_trino_event,
                    healthz,
                    readyz,
                    MetricsController,
                    GraphQLController,
                    GRAPHIQL_BUNDLE.router(),
                    console_page,
                    CONSOLE_BUNDLE.router(),
                    *catalog_handlers,
                    *governance_handlers,
                    *mcp_routes,
                ],
                middleware=[retry_after(settings.retry_after_s), request_metrics],
                guards=[check_request],
                lifespan=[
                    lifespan,
                    kafka_consumer,
                    change_feed,
                    governance_worker,
                    periodic_upkeep,
                    *mcp_lifespans,
                ],
                state=State(
                    {
                        "settings": settings,
                        "alias_rules": load_alias_rules(settings.alias_rules_file),
                        "policy": load_policy(settings.policies_file),
                    }
                ),
                exception_handlers={
                    AppError: app_error_handler,
                    HTTPException: http_error_handler,
                    Exception: unexpected_error_handler,
                },
                request_max_body_size=settings.max_body_bytes,
                openapi_config=OpenAPIConfig(title="Headwater", version=__version__, path="/docs"),
            )
        )
    )
    return guard_websockets(
        app,
        settings.subscriber_stall_s,
        settings.max_websockets,
        settings.retry_after_s,
        settings.websocket_messages_per_s,
        # A client may open all the subscriptions it may hold at once.
        settings.max_subscriptions_per_connection + 100,
    )
