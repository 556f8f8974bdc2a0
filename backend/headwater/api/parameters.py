"""What no parameter, request body, GraphQL argument or MCP tool argument may hold.

PostgreSQL text cannot hold U+0000: a name, filter or id carrying one (``%00`` in a URL) would reach
a statement and fail there. It is refused where a request comes in instead, naming where it is: one
guard on the whole app for path and query parameters (no route can be forgotten), request bodies as
they are decoded, GraphQL operations (``api.graphql.arguments``) and MCP tool calls
(``mcp.server``) before they run.

Ids a client passes back as text (the change id of a subscription's cursor, a violation id) are read
here too: only plain digits that fit PostgreSQL's bigint, so that neither Python's limit on integer
text nor the database sees a made-up one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes

import msgspec

from headwater.errors import FieldError, InvalidRequestError, shown

if TYPE_CHECKING:
    from litestar.connection import ASGIConnection
    from litestar.handlers import BaseRouteHandler

HOLDS_NUL = "holds U+0000 (NUL), which no text stored here can contain"
_BIGINT_DIGITS = len(str(2**63 - 1))


def violation_cursor(after: str | None) -> int:
    """The violation id a page of violations starts after (0: the first page), or a 400 quoting what
    was sent."""
    if after is None:
        return 0
    violation_id = bigint_id(after)
    if violation_id is None:
        raise InvalidRequestError(f"after must be a violation id, got '{shown(after)}'.")
    return violation_id


def bigint_id(text: str) -> int | None:
    """The id ``text`` names (ASCII digits, at most PostgreSQL's largest bigint), else None."""
    if not (text.isascii() and text.isdigit() and len(text) <= _BIGINT_DIGITS):
        return None
    value = int(text)
    return value if value < 2**63 else None


def paths_with_nul(value: Any, path: str) -> Iterator[str]:
    """Where in a decoded value (text, or lists and objects of them) a text holds U+0000: ``path``
    itself, ``path[2]``, ``path.key``."""
    if isinstance(value, str):
        if "\x00" in value:
            yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from paths_with_nul(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from paths_with_nul(item, f"{path}[{i}]")


async def refuse_nul_parameters(
    connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler
) -> None:
    """400 for a path or query parameter holding U+0000.

    Async although it never waits: Litestar runs a plain function guard in its thread pool, and
    that hand-off delayed every request by up to 250 ms while a large answer kept the loop busy.
    """
    found = [
        FieldError(f"{source}.{name}", HOLDS_NUL)
        for source, items in (
            ("path", connection.path_params.items()),
            ("query", connection.query_params.multi_items()),
        )
        for name, value in items
        if any(paths_with_nul(value, name)) or "\x00" in name
    ]
    if found:
        names = ", ".join(sorted({e.path for e in found}))
        raise InvalidRequestError(f"A parameter holds U+0000 (NUL): {names}.", found)


def refuse_undecodable_url(connection: ASGIConnection[Any, Any, Any, Any]) -> None:
    """400 when the URL's path or query, percent-decoded, is not UTF-8 (``%ff``, an encoded
    surrogate): its parameters would be read with U+FFFD in place of what was sent, and a search or
    a lookup would answer for a name nobody asked about."""
    for part, raw in (
        # Without its query: some servers (httpx's ASGI transport) leave it on raw_path.
        ("path", (connection.scope.get("raw_path") or b"").split(b"?", 1)[0]),
        ("query", connection.scope.get("query_string") or b""),
    ):
        if b"%" not in raw:
            continue
        try:
            unquote_to_bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            message = (
                f"not UTF-8 once percent-decoded (byte 0x{exc.object[exc.start]:02x} at "
                f"{exc.start} of its decoded bytes)"
            )
            raise InvalidRequestError(
                f"The URL's {part} is {message}.", [FieldError(part, message)]
            ) from None


def refuse_nul_fields(body: msgspec.Struct) -> None:
    """For a request body's ``__post_init__``: a ValueError (a 400 naming the field, as msgspec
    reports it) when a text in one of its fields holds U+0000."""
    for name in body.__struct_fields__:
        if any(paths_with_nul(getattr(body, name), name)):
            raise ValueError(f"{name} {HOLDS_NUL}")
