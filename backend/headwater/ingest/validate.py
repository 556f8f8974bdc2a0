"""Typed models of the OpenLineage core (2-0-x), decoded with msgspec for clear, located errors.

The core of an event (kind, eventType, eventTime, run, job, datasets) is strict: a violation is a
400 naming the JSON path of every error (up to ``MAX_ERRORS``, the rest counted). Facets stay
free-form here; the ones Headwater interprets are checked in
``facets.py``, where a malformed facet becomes a warning instead of a rejected event.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import re
import sys
import types
import typing
import unicodedata
import uuid
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from headwater import times
from headwater.errors import AppError, FieldError, InvalidEventError
from headwater.lineage.node_ids import MAX_NAME_BYTES, MAX_NAMESPACE_BYTES, utf8_length

# Errors listed in one answer, over all the events of a request; the others are only counted.
MAX_ERRORS = 100
# Events in one request: every one of them gets a result, so this bounds the answer and its memory.
MAX_EVENTS = 10_000
# Nesting of objects and arrays in one event. Python code (and PostgreSQL's jsonb) recurses over it.
MAX_DEPTH = 256
# Longest names are those of headwater.lineage.node_ids; a column edge's transformation shares an
# index entry with its two field names.
MAX_TRANSFORMATION_BYTES = 128
# Datasets one event names (inputs and outputs together). An event is written in one transaction,
# and every writer waits for it: 8,000 datasets took 3.6 s to write here, 20,000 over 10 s, during
# which every other event waited too. 5,000 is about 2 s.
MAX_EVENT_DATASETS = 5_000

EventType = Literal["START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"]
Facets = dict[str, Any]


class DatasetModel(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    namespace: str
    name: str
    facets: Facets | None = None
    input_facets: Facets | None = None
    output_facets: Facets | None = None


class JobModel(msgspec.Struct, forbid_unknown_fields=False):
    namespace: str
    name: str
    facets: Facets | None = None


class RunModel(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    reported_run_id: str = msgspec.field(name="runId")
    facets: Facets | None = None

    @property
    def run_id(self) -> uuid.UUID:
        return run_uuid(self.reported_run_id)

    @property
    def non_uuid_run_id(self) -> str | None:
        """The runId as reported when it is not a UUID (the run's id is then derived from it)."""
        return None if _java_uuid(self.reported_run_id) else self.reported_run_id


class RunEventModel(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    event_time: dt.datetime
    event_type: EventType
    run: RunModel
    job: JobModel
    producer: str = ""
    schema_url: str = msgspec.field(default="", name="schemaURL")
    inputs: list[DatasetModel] | None = None
    outputs: list[DatasetModel] | None = None


class DatasetEventModel(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    event_time: dt.datetime
    dataset: DatasetModel
    producer: str = ""
    schema_url: str = msgspec.field(default="", name="schemaURL")


class JobEventModel(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    event_time: dt.datetime
    job: JobModel
    producer: str = ""
    schema_url: str = msgspec.field(default="", name="schemaURL")
    inputs: list[DatasetModel] | None = None
    outputs: list[DatasetModel] | None = None


AnyEvent = RunEventModel | DatasetEventModel | JobEventModel


@dataclass(frozen=True)
class ValidEvent:
    """A core-valid event, with its kind, its content hash and the object as received."""

    kind: Literal["RUN", "DATASET", "JOB"]
    model: AnyEvent
    raw: dict[str, Any]
    content_hash: bytes
    size: int  # bytes of its JSON: what the work of normalizing and storing it grows with


_AT_PATH = re.compile(r"^(?P<message>.*?)(?: - at `(?P<path>[^`]*)`)?$", re.DOTALL)
_sorted_encoder = msgspec.json.Encoder(order="sorted")


_CANONICAL_UUID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


@functools.lru_cache(maxsize=4096)
def run_uuid(run_id: str) -> uuid.UUID:
    """The UUID of a reported runId, as Marquez computes it so that a run keeps its id across both.

    A runId Java's ``UUID.fromString`` accepts is that UUID; any other string is
    ``UUID.nameUUIDFromBytes`` of its UTF-8 bytes: the MD5 digest with version 3 and the IETF variant.
    """
    return _java_uuid(run_id) or uuid.UUID(
        bytes=hashlib.md5(run_id.encode(), usedforsecurity=False).digest(), version=3
    )


def _java_uuid(text: str) -> uuid.UUID | None:
    """What Java's ``UUID.fromString`` makes of `text`, None where it throws.

    It is lenient: five groups of 1 to 16 hex digits (an optional ``+``, Unicode digits and
    full-width letters as ``Character.digit`` reads them), each cut to its width.
    """
    if len(text) > 36:
        return None
    if _CANONICAL_UUID.fullmatch(text):
        return uuid.UUID(text)  # the form nearly every client sends, read as Java reads it
    groups = text.split("-")
    if len(groups) != 5:
        return None
    values = [_java_hex_long(g) for g in groups]
    if any(v is None for v in values):
        return None
    a, b, c, d, e = typing.cast("list[int]", values)
    most = (a & 0xFFFFFFFF) << 32 | (b & 0xFFFF) << 16 | (c & 0xFFFF)
    least = (d & 0xFFFF) << 48 | (e & 0xFFFFFFFFFFFF)
    return uuid.UUID(int=most << 64 | least)


def _java_hex_long(text: str) -> int | None:
    """``Long.parseLong(text, 16)``, None where it throws (empty, a bad digit, out of range)."""
    digits = text[1:] if text[:1] == "+" else text
    if not digits:
        return None
    value = 0
    for ch in digits:
        digit = _java_hex_digit(ch)
        if digit < 0:
            return None
        value = value * 16 + digit
    return value if value <= 2**63 - 1 else None


def _java_hex_digit(ch: str) -> int:
    """``Character.digit(ch, 16)``."""
    lower = ch.lower()
    if "a" <= lower <= "f":
        return ord(lower) - ord("a") + 10
    if "\uff41" <= lower <= "\uff46":  # full-width a-f (and A-F, lowered)
        return ord(lower) - 0xFF41 + 10
    return unicodedata.decimal(ch, -1)


def event_kind(raw: dict[str, Any]) -> Literal["RUN", "DATASET", "JOB"]:
    """Which of the three event types this object is: schemaURL first, then its shape."""
    schema_url = raw.get("schemaURL")
    if isinstance(schema_url, str):
        if schema_url.endswith("/DatasetEvent"):
            return "DATASET"
        if schema_url.endswith("/JobEvent"):
            return "JOB"
    if "dataset" in raw and "run" not in raw and "job" not in raw:
        return "DATASET"
    return "RUN"


def _field_error(exc: msgspec.ValidationError, prefix: str) -> FieldError:
    match = _AT_PATH.match(str(exc))
    assert match is not None  # the pattern matches any string
    path = match.group("path") or "$"
    return FieldError(path=prefix + path[1:], message=match.group("message"))


_MODELS: dict[str, type[AnyEvent]] = {
    "RUN": RunEventModel,
    "DATASET": DatasetEventModel,
    "JOB": JobEventModel,
}


class UndecodableError(ValueError):
    """JSON text that could not be decoded; ``reason`` says why, as what follows "the body is"."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_json_decoder = msgspec.json.Decoder()
# A \uD800-\uDBFF escape not followed by a \uDC00-\uDFFF one, or the latter alone; the backslash
# before it must not be escaped itself (an even number of backslashes before it).
LONE_SURROGATE_ESCAPE = re.compile(
    r"(?<!\\)(?:\\\\)*(?P<escape>\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)


def decode_json(data: bytes | str, what: str = "body") -> Any:
    """JSON decoded strictly, or UndecodableError saying what is wrong with the ``what`` and where:
    not UTF-8 (which byte), a lone UTF-16 surrogate escape (``"\\ud800"``, which no stored text can
    hold), NaN, a number too large to read, nesting too deep for the decoder. Python's json module
    accepts the surrogate and NaN; msgspec raises RecursionError for the nesting, which would
    otherwise end whatever decodes (a request, a Kafka consumer, a backfill task). A leading byte
    order mark is skipped (``without_bom``)."""
    data = without_bom(data)  # positions in errors are then those of the JSON text
    try:
        return _json_decoder.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise UndecodableError(_undecodable(exc, data, what)) from None
    except RecursionError:
        raise UndecodableError(
            f"not valid JSON: nested too deeply to decode (events may nest {MAX_DEPTH} levels)"
        ) from None


@typing.overload
def without_bom(data: bytes) -> bytes: ...
@typing.overload
def without_bom(data: str) -> str: ...
def without_bom(data: bytes | str) -> bytes | str:
    """``data`` without a leading UTF-8 byte order mark, which JSON forbids senders to add and lets
    readers ignore (RFC 8259, 8.1): some editors and shells put one before what they save or send."""
    if isinstance(data, bytes):
        return data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    return data[1:] if data.startswith("\ufeff") else data


def _undecodable(exc: Exception, data: bytes | str, what: str) -> str:
    # Depending on its version, msgspec reports bad UTF-8 as a UnicodeDecodeError or as a
    # DecodeError naming no position: Python's own decoding says which byte, either way.
    if isinstance(data, bytes):
        try:
            text = data.decode()
        except UnicodeDecodeError as utf8:
            return f"not valid JSON: not valid UTF-8: byte {utf8.start} of the {what} (0x{data[utf8.start]:02x})"
    else:
        text = data
    if str(exc).startswith(("Integer value out of range", "Number out of range")):
        # Valid JSON: an integer longer than Python reads (sys.get_int_max_str_digits), another
        # number beyond a 64-bit float. That is said, not that the JSON is broken.
        return (
            "valid JSON with a number too large to read (an integer may have "
            f"{sys.get_int_max_str_digits():,} digits with its sign, another number must be within "
            "±1.8e308): send such a number as a string"
        )
    lone = LONE_SURROGATE_ESCAPE.search(text)
    if lone is not None:
        # msgspec reports some of these as "Input data was truncated", which they are not.
        where = (
            len(text[: lone.start("escape")].encode())
            if isinstance(data, bytes)
            else lone.start("escape")
        )
        unit = "byte" if isinstance(data, bytes) else "character"
        return (
            f"not valid JSON: {lone.group('escape')} at {unit} {where} of the {what} is half of a "
            "UTF-16 surrogate pair, which is not a character"
        )
    return f"not valid JSON: {exc}"


def validate_event(raw: Any, prefix: str = "$", max_errors: int = MAX_ERRORS) -> ValidEvent:
    """Check one decoded JSON value against the core model.

    Raises InvalidEventError listing every error with its JSON path, the first `max_errors` of
    them: the others are counted in its `omitted`.
    """
    found = _Errors(max_errors)
    if not isinstance(raw, dict):
        found.add(FieldError(prefix, f"Expected `object`, got `{json_type(raw)}`"))
        raise found.error("An OpenLineage event must be a JSON object")
    # Checked first and always: what PostgreSQL cannot store is an error wherever it is, facets too.
    sorted_json = _check_storable(raw, prefix, found)
    kind = event_kind(raw)
    what = f"Invalid {kind.title()}Event"
    try:
        model = msgspec.convert(raw, _MODELS[kind])
    except msgspec.ValidationError as exc:
        # msgspec stops at the first error; only then is the event walked for all the others,
        # so a valid event costs no more than one conversion.
        before = found.count
        _walk(raw, _MODELS[kind], prefix, found)
        if found.count == before:
            found.add(_field_error(exc, prefix))
        raise found.error(what) from None
    # Some clients (the Python client's own serde fixtures) omit the offset: read as UTC. Held in
    # UTC from here on (see headwater.times); the raw event keeps the offset as sent.
    try:
        model.event_time = times.instant(model.event_time)
    except ValueError as exc:
        found.add(FieldError(f"{prefix}.eventTime", str(exc)))
    _check_names(model, prefix, found)
    if found.count:
        raise found.error(what)
    assert sorted_json is not None  # None only for nesting too deep, an error raised above
    # The content hash is of the event with its keys sorted, so that re-serialized retries match.
    return ValidEvent(
        kind=kind,
        model=model,
        raw=raw,
        content_hash=hashlib.sha256(sorted_json).digest(),
        size=len(sorted_json),
    )


T = typing.TypeVar("T")


def all_or_none(
    items: list[Any],
    check: typing.Callable[[int, Any, int], T],
    refusal: type[AppError],
    noun: str,
) -> list[T]:
    """``check(index, item, errors it may still list)`` of every item, or, when any is refused
    (``refusal`` or InvalidEventError), ``refusal`` listing what is wrong in all of them: at most
    ``MAX_ERRORS``, the items after that unchecked, since nothing will be stored."""
    checked: list[T] = []
    errors: list[FieldError] = []
    omitted, invalid, unchecked = 0, 0, 0
    for i, item in enumerate(items):
        if len(errors) >= MAX_ERRORS:
            unchecked = len(items) - i
            break
        try:
            checked.append(check(i, item, MAX_ERRORS - len(errors)))
        except (refusal, InvalidEventError) as exc:
            errors.extend(exc.errors)
            omitted += exc.omitted
            invalid += 1
    if invalid:
        rest = f", {unchecked} more not checked" if unchecked else ""
        raise refusal(
            f"{invalid} of {len(items)} {noun} are invalid{rest}; none was stored.", errors, omitted
        )
    return checked


def too_long(value: str, limit: int) -> str | None:
    """Why a name cannot be stored, or None: it must fit in `limit` bytes of UTF-8."""
    size = utf8_length(value)
    return f"must be at most {limit} bytes in UTF-8, not {size}" if size > limit else None


def _check_storable(raw: dict[str, Any], prefix: str, found: _Errors) -> bytes | None:
    """Add an error for each string PostgreSQL cannot store (U+0000: text and jsonb refuse it) and
    for nesting deeper than ``MAX_DEPTH``; keys are strings too. Returns the event's JSON with its
    keys sorted (what its content hash is of), or None when it is nested too deeply.

    A U+0000 anywhere is escaped as ``\\u0000`` in that JSON, so an event without it is told
    storable without building a path; only an event with something to report (or a string holding
    a backslash and ``u0000``, which the walk then clears) pays for the paths.
    """
    sorted_json = _sorted_json_within_depth(raw)
    if sorted_json is not None and b"\\u0000" not in sorted_json:
        return sorted_json
    stack: list[tuple[Any, str, int]] = [(raw, prefix, 1)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            found.add(FieldError(path, f"nested deeper than {MAX_DEPTH} levels"))
            continue
        entries = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in entries:
            if isinstance(key, str) and _unstorable(key):
                found.add(FieldError(_child(path, key), f"the key {_unstorable(key)}"))
            if isinstance(item, str):
                if _unstorable(item):
                    found.add(FieldError(_child(path, key), f"the value {_unstorable(item)}"))
            elif isinstance(item, dict | list):
                stack.append((item, _child(path, key), depth + 1))
    return sorted_json


def _sorted_json_within_depth(raw: dict[str, Any]) -> bytes | None:
    """The event's JSON with its keys sorted, or None when it nests deeper than ``MAX_DEPTH``
    (found by a walk over its containers alone, before the encoder recurses into them)."""
    level: list[Any] = [raw]
    for _ in range(MAX_DEPTH):
        deeper: list[Any] = []
        for value in level:
            for item in value.values() if type(value) is dict else value:
                if type(item) is dict or type(item) is list:
                    deeper.append(item)
        if not deeper:
            return _sorted_encoder.encode(raw)
        level = deeper
    return None


def _child(path: str, key: str | int) -> str:
    """The path of a member (``.key``, control characters escaped) or an element (``[3]``)."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if not key.isprintable() or _unstorable(key):
        key = key.encode("unicode_escape").decode("ascii")
    return f"{path}.{key}"


# What PostgreSQL's text cannot hold: U+0000, and half of a UTF-16 surrogate pair (no UTF-8 has it).
# Decoded JSON escapes make both (`\u0000`, `\ud800`), and so do SQL's.
UNSTORABLE_TEXT = re.compile("[\x00\ud800-\udfff]")


def _unstorable(text: str) -> str | None:
    # Lone surrogates need no check: the JSON decoder refuses them.
    return "contains U+0000, which PostgreSQL cannot store" if "\x00" in text else None


class _Errors:
    """The errors of one event: the first `limit` kept, all counted."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.listed: list[FieldError] = []
        self.count = 0

    def add(self, error: FieldError) -> None:
        self.count += 1
        if len(self.listed) < self.limit:
            self.listed.append(error)

    def error(self, what: str) -> InvalidEventError:
        omitted = self.count - len(self.listed)
        if self.count == 1 and self.listed:
            first = self.listed[0]
            return InvalidEventError(f"{what}: {first.message} at {first.path}", self.listed)
        errors = f"{self.count} error" + ("s" if self.count > 1 else "")
        return InvalidEventError(f"{what}: {errors}", self.listed, omitted=omitted)


# Fields whose value names a job or dataset: empty, it could not be found again.
_NAMES = {JobModel: ("namespace", "name"), DatasetModel: ("namespace", "name")}


def _walk(value: Any, kind: Any, path: str, found: _Errors) -> None:
    """Add every error of `value` as `kind` (a model, a list of models or a leaf type)."""
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        if not isinstance(value, dict):
            _convert(value, kind, path, found)
            return
        names = _NAMES.get(kind, ())
        for f in _fields(kind):
            if f.encode_name not in value:
                if f.required:
                    found.add(FieldError(path, f"Object missing required field `{f.encode_name}`"))
                continue
            item = value[f.encode_name]
            _walk(item, f.type, f"{path}.{f.encode_name}", found)
            if f.name in names and isinstance(item, str) and not item.strip():
                found.add(FieldError(f"{path}.{f.encode_name}", "must not be empty"))
        return
    model = _listed_model(kind)
    if model is not None and isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, model, f"{path}[{i}]", found)
        return
    _convert(value, kind, path, found)


@functools.cache
def _fields(kind: type[msgspec.Struct]) -> tuple[msgspec.structs.FieldInfo, ...]:
    # msgspec evaluates the annotations anew on every call.
    return msgspec.structs.fields(kind)


def _listed_model(kind: Any) -> type[msgspec.Struct] | None:
    """M for a field typed `list[M]` or `list[M] | None`."""
    for option in typing.get_args(kind) if isinstance(kind, types.UnionType) else (kind,):
        if typing.get_origin(option) is list:
            (item,) = typing.get_args(option)
            if isinstance(item, type) and issubclass(item, msgspec.Struct):
                return item
    return None


def _convert(value: Any, kind: Any, path: str, found: _Errors) -> None:
    try:
        msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        error = _field_error(exc, path)
        if isinstance(value, str) and times.is_leap_second(value):
            error = FieldError(
                error.path, f"{error.message}: a leap second (second 60) cannot be stored"
            )
        found.add(error)


def _check_names(model: AnyEvent, prefix: str, found: _Errors) -> None:
    """Identities must be findable again and storable: not empty, not longer than an index allows."""
    parts: list[tuple[str, Any]] = []
    job = getattr(model, "job", None)
    if job is not None:
        parts.append((f"{prefix}.job", job))
    if isinstance(model, DatasetEventModel):
        parts.append((f"{prefix}.dataset", model.dataset))
    else:
        inputs, outputs = model.inputs or [], model.outputs or []
        if len(inputs) + len(outputs) > MAX_EVENT_DATASETS:
            found.add(
                FieldError(
                    prefix,
                    f"names {len(inputs):,} inputs and {len(outputs):,} outputs; one event may name "
                    f"at most {MAX_EVENT_DATASETS:,} datasets (send the rest in more events of the "
                    "same run)",
                )
            )
            return
        parts += [(f"{prefix}.inputs[{i}]", d) for i, d in enumerate(inputs)]
        parts += [(f"{prefix}.outputs[{i}]", d) for i, d in enumerate(outputs)]
    for path, part in parts:
        for key, limit in (("namespace", MAX_NAMESPACE_BYTES), ("name", MAX_NAME_BYTES)):
            value = getattr(part, key)
            problem = "must not be empty" if not value.strip() else too_long(value, limit)
            if problem:
                found.add(FieldError(f"{path}.{key}", problem))


def json_type(value: Any) -> str:
    """The JSON type of a decoded value, in the words msgspec's errors use."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
