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
import types
import typing
import uuid
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from headwater.errors import FieldError, InvalidEventError

# Errors listed in one answer, over all the events of a request; the others are only counted.
MAX_ERRORS = 100

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
    run_id: uuid.UUID
    facets: Facets | None = None


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


_AT_PATH = re.compile(r"^(?P<message>.*?)(?: - at `(?P<path>[^`]*)`)?$", re.DOTALL)
_sorted_encoder = msgspec.json.Encoder(order="sorted")


def content_hash(raw: Any) -> bytes:
    """SHA-256 of the event with keys sorted, so re-serialized retries hash the same."""
    return hashlib.sha256(_sorted_encoder.encode(raw)).digest()


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


def validate_event(raw: Any, prefix: str = "$", max_errors: int = MAX_ERRORS) -> ValidEvent:
    """Check one decoded JSON value against the core model.

    Raises InvalidEventError listing every error with its JSON path, the first `max_errors` of
    them: the others are counted in its `omitted`.
    """
    if not isinstance(raw, dict):
        found = _Errors(max_errors)
        found.add(FieldError(prefix, f"Expected `object`, got `{json_type(raw)}`"))
        raise found.error("An OpenLineage event must be a JSON object")
    kind = event_kind(raw)
    try:
        model = msgspec.convert(raw, _MODELS[kind])
    except msgspec.ValidationError as exc:
        # msgspec stops at the first error; only then is the event walked for all the others,
        # so a valid event costs no more than one conversion.
        found = _Errors(max_errors)
        _walk(raw, _MODELS[kind], prefix, found)
        if not found.count:
            found.add(_field_error(exc, prefix))
        raise found.error(f"Invalid {kind.title()}Event") from None
    if model.event_time.tzinfo is None:
        # Some clients (the Python client's own serde fixtures) omit the offset: read it as UTC.
        model.event_time = model.event_time.replace(tzinfo=dt.UTC)
    _check_names(model, prefix, max_errors)
    return ValidEvent(kind=kind, model=model, raw=raw, content_hash=content_hash(raw))


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
        found.add(_field_error(exc, path))


def _check_names(model: AnyEvent, prefix: str, max_errors: int) -> None:
    """Reject empty identities: a job or dataset with an empty name cannot be found again."""
    found = _Errors(max_errors)
    job = getattr(model, "job", None)
    if job is not None:
        for key in ("namespace", "name"):
            if not getattr(job, key).strip():
                found.add(FieldError(f"{prefix}.job.{key}", "must not be empty"))
    datasets: list[tuple[str, DatasetModel]] = []
    if isinstance(model, DatasetEventModel):
        datasets.append((f"{prefix}.dataset", model.dataset))
    else:
        datasets += [(f"{prefix}.inputs[{i}]", d) for i, d in enumerate(model.inputs or [])]
        datasets += [(f"{prefix}.outputs[{i}]", d) for i, d in enumerate(model.outputs or [])]
    for path, dataset in datasets:
        for key in ("namespace", "name"):
            if not getattr(dataset, key).strip():
                found.add(FieldError(f"{path}.{key}", "must not be empty"))
    if found.count:
        raise found.error("Invalid event")


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
