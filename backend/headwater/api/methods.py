"""The methods a path takes, as ``Allow`` lists them (405 answers and OPTIONS).

Every route answers HEAD as GET (``app.answer_head_and_options``), so a path that takes GET takes HEAD. And a
path served by handlers declared apart (POST /api/v1/lineage ingests, GET reads lineage) takes the
methods of them all: Litestar's own OPTIONS answer names only those of the handler registered
first, its routing knows them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from litestar.exceptions import HTTPException, MethodNotAllowedException
from litestar.utils import normalize_path

if TYPE_CHECKING:
    from litestar import Litestar

# A method no route takes: asked for it, routing names the methods the path does take.
_UNROUTED = "HEADWATER-UNROUTED"


def listed(allow: str) -> str:
    """An ``Allow`` value as routing gives it ("POST, OPTIONS, GET, websocket"): its HTTP methods,
    with HEAD beside GET, sorted. (A websocket on the same path is no HTTP method.)"""
    methods = {m.strip() for m in allow.split(",") if m.strip().isupper()}
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods))


def allowed_methods(app: Litestar, path: str) -> str | None:
    """The ``Allow`` value of an HTTP path; None when no HTTP route serves it (unknown, a websocket,
    or a mounted app that answers every method itself)."""
    try:
        app.asgi_router.handle_routing(path=normalize_path(path), method=_UNROUTED)
    except MethodNotAllowedException as exc:
        return listed((exc.headers or {}).get("allow", ""))
    except HTTPException:  # not found, or no HTTP route: Litestar answers it as usual
        return None
    return None
