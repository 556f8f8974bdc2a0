"""Cursor paging: opaque cursors over a keyset, and the page size bounds."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import strawberry

from headwater.errors import InvalidRequestError

MAX_PAGE = 500


class InvalidCursorError(InvalidRequestError):
    code = "invalid_cursor"

    def __init__(self, cursor: str) -> None:
        super().__init__(f"Invalid cursor '{cursor}': pass back a cursor this API returned.")


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
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidCursorError(cursor) from None
    if not isinstance(values, list) or len(values) != size:
        raise InvalidCursorError(cursor)
    return values


def check_page_size(first: int, maximum: int = MAX_PAGE, name: str = "first") -> int:
    """A page size in [1, maximum]."""
    if not 1 <= first <= maximum:
        raise InvalidRequestError(f"`{name}` must be between 1 and {maximum}, got {first}.")
    return first
