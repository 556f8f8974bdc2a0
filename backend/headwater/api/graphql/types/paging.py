"""Cursor paging: opaque cursors over a keyset, the orders of dataset and job lists, and the page
size bounds.

A cursor of a list in NAME order holds the last row's (namespace, name); in the other orders it
also holds the order and the last row's sort value, so a page follows on from exactly where the
previous one ended, and a cursor made for one order is refused by another.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import math
import uuid
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, cast

import strawberry

from headwater import times
from headwater.errors import InvalidRequestError, shown
from headwater.ingest.validate import UNSTORABLE_TEXT
from headwater.store import catalog
from headwater.store.catalog import DatasetRecord, JobRecord, NodeFilter, NodeKey, NodeShape, page_key

if TYPE_CHECKING:
    from collections.abc import Callable

    from headwater.api.graphql.context import Info

R = TypeVar("R", DatasetRecord, JobRecord)
T = TypeVar("T")

MAX_PAGE = 500


class InvalidCursorError(InvalidRequestError):
    code = "invalid_cursor"

    def __init__(self, cursor: str) -> None:
        super().__init__(f"Invalid cursor '{shown(cursor)}': pass back a cursor this API returned.")


@strawberry.enum(description="How a list of datasets or jobs is ordered.")
class CatalogOrder(Enum):
    NAME = strawberry.enum_value("NAME", description="By namespace, then name.")
    HEAT = strawberry.enum_value(
        "HEAT",
        description="Hottest first (see `heat`), those without heat last; ties by namespace and name.",
    )
    UPDATED_AT = strawberry.enum_value(
        "UPDATED_AT", description="Most recently updated first; ties by namespace and name."
    )


OrderBy = Annotated[
    CatalogOrder,
    strawberry.argument(
        description="NAME by default; a cursor only continues the order it was made in."
    ),
]


@strawberry.type(description="Where a page ends and whether another follows.")
class PageInfo:
    has_next_page: bool
    end_cursor: str | None = strawberry.field(description="Pass as `after` to get the next page.")


def encode_cursor(*values: Any) -> str:
    """An opaque cursor for a keyset."""
    return base64.urlsafe_b64encode(json.dumps(list(values), separators=(",", ":")).encode()).decode()


def decode_cursor(cursor: str, size: int) -> list[Any]:
    """The keyset of a cursor made by ``encode_cursor`` with ``size`` values."""
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError):
        raise InvalidCursorError(cursor) from None
    if not isinstance(values, list) or len(values) != size:
        raise InvalidCursorError(cursor)
    return values


def cursor_time(cursor: str, raw: Any) -> dt.datetime:
    """A time a cursor holds, in UTC, or InvalidCursorError: a cursor is the client's text, and a
    made-up one must not reach the database with a time it cannot read."""
    return _cursor_value(cursor, raw, times.parse_instant)


def cursor_uuid(cursor: str, raw: Any) -> uuid.UUID:
    """A uuid a cursor holds, or InvalidCursorError."""
    return _cursor_value(cursor, raw, uuid.UUID)


def _cursor_value(cursor: str, raw: Any, parse: Callable[[str], T]) -> T:
    if isinstance(raw, str):
        try:
            return parse(raw)
        except ValueError:
            pass
    raise InvalidCursorError(cursor)


def check_page_size(first: int, maximum: int = MAX_PAGE, name: str = "first") -> int:
    """A page size in [1, maximum]."""
    if not 1 <= first <= maximum:
        raise InvalidRequestError(f"`{name}` must be between 1 and {maximum}, got {first}.")
    return first


def order_key(order: CatalogOrder) -> Literal["NAME", "HEAT", "UPDATED_AT"]:
    """The store's name of an order: strawberry types enum values as their definitions, but at run
    time each is its name."""
    return cast('Literal["NAME", "HEAT", "UPDATED_AT"]', order.name)


def encode_node_cursor(r: DatasetRecord | JobRecord, order: CatalogOrder) -> str:
    """The cursor after dataset or job ``r`` in a list in ``order``."""
    key = page_key(r, order_key(order))
    if order is CatalogOrder.NAME:
        return encode_cursor(key.namespace, key.name)
    value = key.value.isoformat() if isinstance(key.value, dt.datetime) else key.value
    return encode_cursor(order.value, value, key.namespace, key.name)


def decode_node_cursor(cursor: str, order: CatalogOrder) -> NodeKey:
    """The keyset of a cursor made by ``encode_node_cursor`` for the same order."""
    if order is CatalogOrder.NAME:
        namespace, name = decode_cursor(cursor, 2)
        value: float | dt.datetime | None = None
    else:
        tag, raw, namespace, name = decode_cursor(cursor, 4)
        if tag != order.value:
            raise InvalidCursorError(cursor)
        value = _sort_value(cursor, order, raw)
    if not _is_stored_text(namespace) or not _is_stored_text(name):
        raise InvalidCursorError(cursor)
    return NodeKey(namespace, name, value)


def _is_stored_text(raw: Any) -> bool:
    """Whether a cursor's value is text a name can be (JSON's escapes make what none can)."""
    return isinstance(raw, str) and not UNSTORABLE_TEXT.search(raw)


def _sort_value(cursor: str, order: CatalogOrder, raw: Any) -> float | dt.datetime | None:
    if order is CatalogOrder.HEAT:
        if raw is None:
            return None
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            try:
                heat = float(raw)
            except OverflowError:
                pass
            else:
                if math.isfinite(heat):  # JSON's NaN and Infinity are no heat
                    return heat
    else:
        return cursor_time(cursor, raw)
    raise InvalidCursorError(cursor)


async def page_of_nodes(
    info: Info,
    shape: NodeShape[R, Any],
    f: NodeFilter,
    first: int,
    after: str | None,
    order: CatalogOrder,
) -> tuple[list[R], PageInfo]:
    """One page of datasets or jobs in ``order`` after the cursor ``after`` (made for that order)."""
    check_page_size(first)
    keyset = decode_node_cursor(after, order) if after else None
    async with info.context.pool.acquire() as conn:
        rows = await catalog.page_nodes(
            shape, conn, f, order=order_key(order), after=keyset, limit=first + 1
        )
    page = rows[:first]
    end = encode_node_cursor(page[-1], order) if page else None
    return page, PageInfo(has_next_page=len(rows) > first, end_cursor=end)
