"""Names in catalog paths, and the paging parameters of catalog lists.

Namespaces are usually URIs (``postgres://host:5432``) that clients percent-encode, slashes
included. Routing splits on decoded slashes, so ``keep_encoded_slashes`` re-encodes ``/`` and
``%`` inside path segments under /api/v1/namespaces before routing, and handlers decode their
parameters once with ``name``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated
from urllib.parse import unquote

import msgspec
from litestar.enums import ScopeType
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Parameter

from headwater.api.problems import PROBLEM_JSON

if TYPE_CHECKING:
    from litestar import Litestar
    from litestar.types import ASGIApp, Receive, Scope, Send

NAMESPACES_PREFIX = "/api/v1/namespaces/"
# Paths whose segments are names, which may hold a "/" (sent encoded, as %2F).
_NAMED_PREFIXES = (NAMESPACES_PREFIX, "/api/v1/tags/")
MAX_LIMIT = 1000

Limit = Annotated[
    int, Parameter(ge=1, le=MAX_LIMIT, description=f"Page size (default 100, at most {MAX_LIMIT}).")
]
# The largest integer every JSON client holds exactly (and far below PostgreSQL's bigint): past it,
# a 400 naming the bound instead of a failed statement.
MAX_OFFSET = 2**53 - 1
Offset = Annotated[int, Parameter(ge=0, le=MAX_OFFSET, description="Items to skip.")]


def _reencode(segment: str) -> str:
    return unquote(segment).replace("%", "%25").replace("/", "%2F")


def keep_encoded_slashes(app: Litestar) -> Litestar:
    """Route /api/v1/namespaces/... and /api/v1/tags/... on the raw path: an encoded ``/`` stays
    inside its segment (``name`` decodes it)."""
    inner: ASGIApp = app.asgi_handler

    async def handler(scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == ScopeType.HTTP else None
        if raw and scope["path"].startswith(_NAMED_PREFIXES):
            path = raw.decode("latin-1").split("?", 1)[0]
            scope["path"] = "/".join(_reencode(s) for s in path.split("/"))
        await inner(scope, receive, send)

    app.asgi_handler = handler
    return app


def name(param: str) -> str:
    """A namespace, dataset, job, field or tag name from its (re-encoded) path segment."""
    return unquote(param)


class Problem(msgspec.Struct):
    """An error answer (RFC 9457 problem details), as every error of the API is."""

    type: str
    title: str
    status: int
    detail: str
    code: str


_PROBLEM_MEANINGS = {
    400: "A parameter is invalid",
    401: "No valid API key (once keys exist)",
    403: "The key lacks the scope",
    404: "No such namespace, dataset, job, run, field or version",
    413: "The body is too large",
    415: "The body's encoding is not supported",
    422: "The database refused the event for what it holds; sending it again gives the same answer",
    503: "The database or the ingest queue cannot take it now; retry after Retry-After",
}


def problems(*statuses: int) -> dict[int, ResponseSpec]:
    """The error answers of an operation, for the OpenAPI document."""
    return {
        s: ResponseSpec(
            Problem, description=_PROBLEM_MEANINGS[s], media_type=PROBLEM_JSON, generate_examples=False
        )
        for s in statuses
    }


# What any catalog operation may answer besides its result; writes with a body add 413 and 415.
PROBLEMS = problems(400, 401, 403, 404)
BODY_PROBLEMS = problems(400, 401, 403, 413, 415)
