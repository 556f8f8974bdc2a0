"""Typed models of the OpenLineage core (2-0-x), decoded with msgspec for clear, located errors.

The core of an event (kind, eventType, eventTime, run, job, datasets) is strict: a violation is a
400 naming the JSON path. Facets stay free-form here; the ones Headwater interprets are checked in
``facets.py``, where a malformed facet becomes a warning instead of a rejected event.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import uuid
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from headwater.errors import FieldError, InvalidEventError

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


def validate_event(raw: Any, prefix: str = "$") -> ValidEvent:
    """Check one decoded JSON value against the core model; raise InvalidEventError with its path."""
    if not isinstance(raw, dict):
        raise InvalidEventError(
            "An OpenLineage event must be a JSON object.",
            [FieldError(prefix, f"Expected `object`, got `{json_type(raw)}`")],
        )
    kind = event_kind(raw)
    try:
        model = msgspec.convert(raw, _MODELS[kind])
    except msgspec.ValidationError as exc:
        error = _field_error(exc, prefix)
        raise InvalidEventError(
            f"Invalid {kind.title()}Event: {error.message} at {error.path}", [error]
        ) from None
    if model.event_time.tzinfo is None:
        # Some clients (the Python client's own serde fixtures) omit the offset: read it as UTC.
        model.event_time = model.event_time.replace(tzinfo=dt.UTC)
    _check_names(model, prefix)
    return ValidEvent(kind=kind, model=model, raw=raw, content_hash=content_hash(raw))


def _check_names(model: AnyEvent, prefix: str) -> None:
    """Reject empty identities: a job or dataset with an empty name cannot be found again."""
    problems: list[FieldError] = []
    job = getattr(model, "job", None)
    if job is not None:
        for key in ("namespace", "name"):
            if not getattr(job, key).strip():
                problems.append(FieldError(f"{prefix}.job.{key}", "must not be empty"))
    datasets: list[tuple[str, DatasetModel]] = []
    if isinstance(model, DatasetEventModel):
        datasets.append((f"{prefix}.dataset", model.dataset))
    else:
        datasets += [(f"{prefix}.inputs[{i}]", d) for i, d in enumerate(model.inputs or [])]
        datasets += [(f"{prefix}.outputs[{i}]", d) for i, d in enumerate(model.outputs or [])]
    for path, dataset in datasets:
        for key in ("namespace", "name"):
            if not getattr(dataset, key).strip():
                problems.append(FieldError(f"{path}.{key}", "must not be empty"))
    if problems:
        first = problems[0]
        raise InvalidEventError(f"Invalid event: {first.path} {first.message}", problems)


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
