"""Request bodies: gzip decoding with a size bound, and JSON decoding with a located error.

A body that is not UTF-8, nests too deeply or holds more than ``MAX_EVENTS`` events is refused
before any event is looked at."""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

import msgspec

from headwater.errors import (
    FieldError,
    InvalidRequestError,
    PayloadTooLargeError,
    UnsupportedMediaTypeError,
)
from headwater.ingest.validate import MAX_DEPTH, MAX_EVENTS

if TYPE_CHECKING:
    from litestar import Request


async def read_json_body(request: Request[Any, Any, Any], max_bytes: int) -> Any:
    """The decoded JSON body; gzip (Content-Encoding) is undone, never past ``max_bytes``."""
    body = await request.body()
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("gzip", "x-gzip"):
        body = _gunzip(body, max_bytes)
    elif encoding not in ("identity", ""):
        raise UnsupportedMediaTypeError(
            f"Content-Encoding '{encoding}' is not supported; send gzip or identity."
        )
    if len(body) > max_bytes:
        raise PayloadTooLargeError(f"The request body is larger than {max_bytes} bytes.")
    if not body.strip():
        raise InvalidRequestError(
            "The request body is empty; expected an OpenLineage event as JSON.",
            [FieldError("$", "empty body")],
        )
    try:
        value = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise InvalidRequestError(
            f"The request body is not valid JSON: {exc}", [FieldError("$", f"not valid JSON: {exc}")]
        ) from None
    except UnicodeDecodeError as exc:
        message = f"not valid UTF-8: byte {exc.start} of the body (0x{body[exc.start]:02x})"
        raise InvalidRequestError(
            f"The request body is not valid JSON: {message}", [FieldError("$", message)]
        ) from None
    except RecursionError:
        # The decoder recurses per level; how deep it gets depends on the stack it starts from.
        message = f"nested too deeply (events may nest {MAX_DEPTH} levels)"
        raise InvalidRequestError(
            f"The request body is not valid JSON: {message}", [FieldError("$", message)]
        ) from None
    if isinstance(value, list) and len(value) > MAX_EVENTS:
        raise PayloadTooLargeError(
            f"The request holds {len(value)} events; send at most {MAX_EVENTS} per request."
        )
    return value


def _gunzip(body: bytes, max_bytes: int) -> bytes:
    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = decompressor.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise InvalidRequestError(
            f"The body says Content-Encoding: gzip but is not valid gzip: {exc}",
            [FieldError("$", "invalid gzip data")],
        ) from None
    if len(out) > max_bytes or decompressor.unconsumed_tail:
        raise PayloadTooLargeError(f"The decompressed request body is larger than {max_bytes} bytes.")
    if not decompressor.eof:
        raise InvalidRequestError(
            "The gzip body is truncated.", [FieldError("$", "truncated gzip data")]
        )
    return out
