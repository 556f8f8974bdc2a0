"""The MCP server over Headwater: one set of read-only tools, served on stdio or at /mcp.

Over HTTP it is the SDK's streamable-HTTP transport, mounted in the Litestar app as an ASGI route,
so the app's key guard covers it (the ``read`` scope; see api/auth.py). It runs stateless, with
JSON answers: a tool call needs no session, and any server process of `serve --workers N` can
answer any request.
"""

from __future__ import annotations

import functools
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from litestar.handlers import asgi
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ToolAnnotations

from headwater import __version__
from headwater.api.parameters import HOLDS_NUL, paths_with_nul
from headwater.api.problems import problem_body
from headwater.lineage.documents import cache_for
from headwater.mcp.tools import TOOLS, Reads

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from contextlib import AbstractAsyncContextManager

    from litestar import Litestar
    from litestar.handlers import ASGIRouteHandler
    from litestar.types import HTTPResponseBodyEvent, HTTPResponseStartEvent, Receive, Scope, Send

PATH = "/mcp"
INSTRUCTIONS = """Headwater holds OpenLineage lineage: datasets, the jobs that read and write them,
their runs, and column-level lineage, across engines. Start with search to turn a name into a node
id, then ask lineage, impact_of_change (what breaks if this dataset or column changes) or
root_cause (why this dataset may be wrong). Answers are paged (offset, next_offset) and graphs
are capped by max_nodes (truncated says when the cap cut them)."""

T = TypeVar("T")


def build_server(
    reads: Callable[[MCPServer[Reads]], AbstractAsyncContextManager[Reads]],
) -> MCPServer[Reads]:
    """The MCP server with every tool; ``reads`` provides the pool and settings while it runs."""
    server: MCPServer[Reads] = MCPServer(
        "headwater", instructions=INSTRUCTIONS, version=__version__, lifespan=reads
    )
    # Every tool only reads: a client may call them without asking the user first.
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    for tool in TOOLS:
        server.add_tool(refusing_nul(tool), annotations=read_only)
    return server


def refusing_nul(tool: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """The tool, answering an error that names the argument when one holds U+0000 (NUL): no text
    stored here can contain it, and it would otherwise fail in a statement. The SDK reads the
    tool's own signature through the wrapper."""

    @functools.wraps(tool)
    async def checked(**arguments: Any) -> T:
        for name, value in arguments.items():
            if any(paths_with_nul(value, name)):
                raise ToolError(f"{name} {HOLDS_NUL}.")
        return await tool(**arguments)

    return checked


# The answer to GET: the transport lets a server without a stream of its own say so with a 405. A
# stateless endpoint has nothing to send on one, and the SDK kept each open, pinging every 15 s,
# for as long as its client liked, as many as were asked for.
_NO_EVENT_STREAM = msgspec.json.encode(
    problem_body(
        405,
        "method_not_allowed",
        "Method not allowed",
        f"GET is not allowed on {PATH}: it answers each POST and opens no event stream.",
    )
)


async def _no_event_stream(send: Send) -> None:
    headers = [
        (b"content-type", b"application/problem+json"),
        (b"allow", b"POST"),
        (b"content-length", str(len(_NO_EVENT_STREAM)).encode()),
    ]
    start: HTTPResponseStartEvent = {"type": "http.response.start", "status": 405, "headers": headers}
    body: HTTPResponseBodyEvent = {
        "type": "http.response.body",
        "body": _NO_EVENT_STREAM,
        "more_body": False,
    }
    await send(start)
    await send(body)


class HttpEndpoint:
    """/mcp in the Litestar app: the route and the lifespan that runs the SDK's session manager."""

    def __init__(self) -> None:
        self._reads: Reads | None = None
        self.server = build_server(self._provide_reads)
        # DNS-rebinding checks of Host and Origin are off: REST and GraphQL answer the same data
        # without them, and access is decided by API keys for every path alike.
        self.server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager = self.server.session_manager
        manager = self.manager

        @asgi(PATH, is_mount=True, copy_scope=True)
        async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
            if scope.get("method") == "GET":
                await _no_event_stream(send)
                return
            await manager.handle_request(scope, receive, send)  # type: ignore[arg-type]

        self.route: ASGIRouteHandler = mcp_endpoint

    @asynccontextmanager
    async def _provide_reads(self, _: MCPServer[Reads]) -> AsyncIterator[Reads]:
        assert self._reads is not None, "the app's lifespan sets the pool before the MCP server runs"
        yield self._reads

    @asynccontextmanager
    async def lifespan(self, app: Litestar) -> AsyncIterator[None]:
        """Run the session manager while the app runs; after the lifespan that opens the pool."""
        self._reads = Reads(
            app.state.pool, app.state.settings, cache_for(app.state), app.state.read_turns
        )
        async with self.manager.run():
            yield
