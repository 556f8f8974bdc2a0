"""Request bodies: gzip decoding with a size bound, and JSON decoding with a located error.

A body that is not UTF-8, nests too deeply, holds more than ``MAX_EVENTS`` events or more JSON
values than the server's bound is refused before any event is looked at. The last two are found
without building the decoded objects: decoded, a JSON value costs 30 to 70 bytes of memory for
as little as 1.5 bytes of body (``[{},{},…]``), so a 64 MB body could take gigabytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from litestar.openapi.spec import (
    OpenAPIMediaType,
    OpenAPIType,
    Operation,
    Reference,
    RequestBody,
    Schema,
)

from headwater.errors import (
    FieldError,
    InvalidRequestError,
    PayloadTooLargeError,
    UnsupportedMediaTypeError,
)
from headwater.ingest.validate import MAX_EVENTS, UndecodableError, without_bom
from headwater.ingest.validate import decode_json as decode_strictly

if TYPE_CHECKING:
    from litestar import Request

# Bodies larger than this are decoded off the event loop (see read_json_body); a single event is
# rarely larger, and handing it to a thread would cost more than decoding it.
OFF_LOOP_BYTES = 256 * 1024
_GZIP = ("gzip", "x-gzip")  # a small gzip body may hold a large one
# The bytes counted at a time, so that a count costs 64 KB of memory and not a body's size, and
# holds the GIL (each bytes operation does) for well under a millisecond at a time.
_CHUNK = 1 << 16
_BACKSLASH = 0x5C
_STARTS_ARRAY = re.compile(rb"[ \t\r\n]*\[")
_decoder = msgspec.json.Decoder()
_elements = msgspec.json.Decoder(list[msgspec.Raw])

# A JSON array decoded into this stops at its (MAX_EVENTS + 1)th element: each element is kept as
# a slice of the body (msgspec.Raw), not decoded, and a longer array fails at once instead of being
# read to its end. msgspec checks a list's length only once the whole list is built.
_AtMostMaxEvents = msgspec.defstruct(
    "_AtMostMaxEvents",
    [(f"e{i}", msgspec.Raw, msgspec.Raw(b"null")) for i in range(MAX_EVENTS)],
    array_like=True,
    forbid_unknown_fields=True,
    gc=False,
)


async def read_json_body(request: Request[Any, Any, Any], max_bytes: int, max_values: int) -> Any:
    """The decoded JSON body; gzip (Content-Encoding) is undone, never past ``max_bytes``, and a
    body of more than ``max_values`` JSON values (see `count_json_values`) is refused undecoded.

    A large body is checked and decoded in a worker thread: a batch of hundreds of events takes tens
    of milliseconds to decode, during which the event loop must go on serving other requests (and
    ingest's writer, whose every statement waits for the loop to resume it)."""
    body = await request.body()
    encoding = content_encoding(request)
    if len(body) > OFF_LOOP_BYTES or encoding in _GZIP:
        return await asyncio.to_thread(decode_json_body, body, encoding, max_bytes, max_values)
    return decode_json_body(body, encoding, max_bytes, max_values)


def content_encoding(request: Request[Any, Any, Any]) -> str:
    """The request's Content-Encoding, lower case (identity when it names none)."""
    return request.headers.get("content-encoding", "identity").strip().lower()


def decode_json_body(body: bytes, encoding: str, max_bytes: int, max_values: int) -> Any:
    """``read_json_body`` once the body is read: undo its encoding, check its bounds, decode it."""
    body = undo_content_encoding(body, encoding, max_bytes)
    if len(body) > max_bytes:
        raise PayloadTooLargeError(f"The request body is larger than {max_bytes} bytes.")
    body = without_bom(body)
    if not body.strip():
        raise InvalidRequestError(
            "The request body is empty; expected an OpenLineage event as JSON.",
            [FieldError("$", "empty body")],
        )
    _check_event_count(body)
    check_json_values(
        body,
        max_values,
        "that is the most one request may hold (HEADWATER_MAX_BODY_VALUES): send fewer or smaller "
        "events per request",
    )
    if len(body) > OFF_LOOP_BYTES and _STARTS_ARRAY.match(body):
        with contextlib.suppress(msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            # An array element by element: decoding is one C call that holds the GIL throughout,
            # and a batch of megabytes in one call would stop the server's event loop for as long
            # however it is threaded. Anything wrong is found and reported as for the whole body.
            return [_decoder.decode(element) for element in _elements.decode(body)]
    return decode_json(body)


def decode_json(body: bytes | str) -> Any:
    """The decoded JSON, or a 400 saying what is wrong with the body and where (see
    ``headwater.ingest.validate.decode_json``)."""
    try:
        return decode_strictly(body)
    except UndecodableError as exc:
        raise InvalidRequestError(
            f"The request body is {exc.reason}", [FieldError("$", exc.reason)]
        ) from None


def _check_event_count(body: bytes) -> None:
    """A 413 for an array of more than MAX_EVENTS elements, found by skipping MAX_EVENTS of them."""
    # Fewer commas than MAX_EVENTS (inside strings or not): fewer elements than that, nothing to do.
    if body.count(b",") < MAX_EVENTS or not _STARTS_ARRAY.match(body):
        return
    try:
        msgspec.json.decode(body, type=_AtMostMaxEvents)
    except msgspec.ValidationError:
        # The only way a JSON array fails this type: an element past MAX_EVENTS.
        raise PayloadTooLargeError(
            f"The request holds more than {MAX_EVENTS} events; send at most {MAX_EVENTS} per request."
        ) from None
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        pass  # not valid JSON before the limit: the full decoding says where, as for any body


def check_json_values(body: bytes, max_values: int, limit: str) -> None:
    """A 413 for a body of more than ``max_values`` JSON values; ``limit`` says whose limit it is."""
    # Every , : [ { of the body, in strings too, bounds its values from above, found in one pass in
    # C; the exact count, which must tell strings apart, is needed only for a body near the limit.
    if 1 + _value_starts(body) <= max_values:
        return
    if count_json_values(body, stop_after=max_values) > max_values:
        raise PayloadTooLargeError(
            f"The request body holds more than {max_values} JSON values (an object's member names "
            f"count too); {limit}."
        )


def count_json_values(body: bytes, stop_after: int) -> int:
    """The JSON values in ``body``, each member name counted as one too; counting stops once past
    ``stop_after``. Every value but a document's first follows a ``,`` ``:`` ``[`` or ``{`` outside
    strings, so counting those bytes counts values, or a few more where a container is empty.

    The body is read 64 KB at a time, with C-speed bytes operations only: escapes removed,
    then split at quotes, whose every other piece is outside strings. It is exact for valid JSON;
    for invalid JSON it is some number, and the decoding that follows says what is wrong.
    """
    values = 1
    in_string = False
    start, size = 0, len(body)
    while start < size and values <= stop_after:
        end = min(start + _CHUNK, size)
        # A chunk never ends on a backslash, so that no escape sequence is cut in two.
        while end < size and body[end - 1] == _BACKSLASH:
            end += 1
        chunk = body[start:end]
        if b"\\" in chunk:
            # \\ first: in \\" the quote ends the string; then \" is a quote inside one.
            chunk = chunk.replace(b"\\\\", b"").replace(b'\\"', b"")
        pieces = chunk.split(b'"')
        outside = b"".join(pieces[1::2] if in_string else pieces[0::2])
        values += _value_starts(outside)
        if len(pieces) % 2 == 0:  # an odd number of quotes: a string goes on into the next chunk
            in_string = not in_string
        start = end
    return values


def _value_starts(data: bytes) -> int:
    """How many of ``data``'s bytes are , : [ or { (deleting them is one pass; counting each of the
    four would be four)."""
    return len(data) - len(data.translate(None, b",:[{"))


def undo_content_encoding(body: bytes, encoding: str, max_bytes: int) -> bytes:
    """The body as sent before its Content-Encoding (``encoding``, lower case): gzip is undone, never
    past ``max_bytes``; any other encoding but identity is a 415."""
    if encoding in _GZIP:
        return _gunzip(body, max_bytes)
    if encoding not in ("identity", ""):
        raise UnsupportedMediaTypeError(
            f"Content-Encoding '{encoding}' is not supported; send gzip or identity."
        )
    return body


def _gunzip(body: bytes, max_bytes: int) -> bytes:
    """The body, gunzipped: every member of it (RFC 1952: ``cat a.gz b.gz`` and pigz write several),
    each a whole gzip stream; anything else after a member is an error, not dropped."""
    out = bytearray()
    rest, at = body, 0
    while True:
        decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            out += decompressor.decompress(rest, max_bytes + 1 - len(out))
        except zlib.error as exc:
            where = f" at byte {at}, after a whole member" if at else ""
            raise InvalidRequestError(
                f"The body says Content-Encoding: gzip but is not valid gzip{where}: {exc}",
                [FieldError("$", "invalid gzip data")],
            ) from None
        if len(out) > max_bytes or decompressor.unconsumed_tail:
            raise PayloadTooLargeError(
                f"The decompressed request body is larger than {max_bytes} bytes."
            )
        if not decompressor.eof:
            raise InvalidRequestError(
                "The gzip body is truncated.", [FieldError("$", "truncated gzip data")]
            )
        at += len(rest) - len(decompressor.unused_data)
        rest = decompressor.unused_data
        if not rest:
            return bytes(out)


# OpenLineage's own schema of the events the ingest operations take, referred to from the OpenAPI
# document rather than copied into it.
OPENLINEAGE_SPEC = "https://openlineage.io/spec/2-0-2/OpenLineage.json"


def _event_schema() -> Schema:
    return Schema(
        one_of=[
            Reference(ref=f"{OPENLINEAGE_SPEC}#/$defs/{kind}")
            for kind in ("RunEvent", "DatasetEvent", "JobEvent")
        ]
    )


def _json_body_operation(description: str, schema: Schema) -> type[Operation]:
    """An Operation whose request body is described, for handlers that read the body themselves
    (bounded before decoding, see ``read_json_body``) and so declare no ``data`` parameter."""

    @dataclass
    class JsonBodyOperation(Operation):
        def __post_init__(self) -> None:
            self.request_body = RequestBody(
                content={"application/json": OpenAPIMediaType(schema=schema)},
                description=description,
                required=True,
            )

    return JsonBodyOperation


# POST /api/v1/lineage: one event, or an array of them stored all or none.
EVENT_OR_EVENTS_BODY = _json_body_operation(
    "One OpenLineage event (RunEvent, DatasetEvent or JobEvent), or a JSON array of them "
    "(at most 10,000), stored all or none.",
    Schema(
        one_of=[
            _event_schema(),
            Schema(type=OpenAPIType.ARRAY, items=_event_schema(), max_items=MAX_EVENTS),
        ]
    ),
)
# POST /api/v1/lineage/batch: an array, each element stored or refused on its own.
EVENT_BATCH_BODY = _json_body_operation(
    "A JSON array of OpenLineage events (at most 10,000); each element is stored or refused on its own.",
    Schema(type=OpenAPIType.ARRAY, items=_event_schema(), max_items=MAX_EVENTS),
)
# POST /api/v1/integrations/trino: one event of Trino's HTTP event listener.
TRINO_EVENT_BODY = _json_body_operation(
    "One event of Trino's HTTP event listener (QueryCreatedEvent or QueryCompletedEvent, as Trino's "
    "SPI serializes it); a SplitCompletedEvent is accepted and ignored.",
    Schema(type=OpenAPIType.OBJECT, additional_properties=True),
)
