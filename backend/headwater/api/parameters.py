"""What no path or query parameter, or text in a request body, may hold.

PostgreSQL text cannot hold U+0000: a name, filter or id carrying one (``%00`` in a URL) would reach
a statement and fail there. One guard on the whole app answers 400 naming the parameter instead, so
that no route can be forgotten; request bodies check their own fields as they are decoded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

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


def refuse_nul_fields(body: msgspec.Struct) -> None:
    """For a request body's ``__post_init__``: a ValueError (a 400 naming the field, as msgspec
    reports it) when a text field, or a text in a list field, holds U+0000."""
    for name in body.__struct_fields__:
        value = getattr(body, name)
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and "\x00" in v for v in values):
            raise ValueError(f"{name} holds U+0000 (NUL), which no text stored here can contain")
