"""What no path or query parameter may hold, refused before any handler runs.

PostgreSQL text cannot hold U+0000: a name, filter or id carrying one (``%00`` in a URL) would reach
a statement and fail there. One guard on the whole app answers 400 naming the parameter instead, so
that no route can be forgotten.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from headwater.errors import FieldError, InvalidRequestError

if TYPE_CHECKING:
    from litestar.connection import ASGIConnection
    from litestar.handlers import BaseRouteHandler


def refuse_nul_parameters(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """400 for a path or query parameter holding U+0000."""
    found = [
        FieldError(f"path.{name}", "holds U+0000 (NUL), which no text stored here can contain")
        for name, value in connection.path_params.items()
        if isinstance(value, str) and "\x00" in value
    ]
    found += [
        FieldError(f"query.{name}", "holds U+0000 (NUL), which no text stored here can contain")
        for name, value in connection.query_params.multi_items()
        if "\x00" in value or "\x00" in name
    ]
    if found:
        names = ", ".join(sorted({e.path for e in found}))
        raise InvalidRequestError(f"A parameter holds U+0000 (NUL): {names}.", found)
