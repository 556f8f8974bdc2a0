"""One Kafka message as the events it carries, or the reason it cannot be ingested.

An OpenLineage topic carries one event per message, the JSON `KafkaTransport` writes. A Trino
topic carries what Trino's Kafka event listener writes: the listener's event under
``eventPayload`` (with ``eventMetadata`` beside it), or the bare event as the HTTP listener posts
it; each becomes RunEvents through the same bridge as POST /api/v1/integrations/trino.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from headwater.errors import AppError
from headwater.ingest.service import PreparedEvent, prepare_events
from headwater.ingest.validate import UndecodableError, decode_json, validate_event
from headwater.integrations.trino import BridgeOptions, convert

if TYPE_CHECKING:
    from headwater.ingest.normalize import AliasRule

Format = Literal["openlineage", "trino"]

# Errors named in a dead letter's reason; the rest are counted.
_REASON_ERRORS = 10


class PoisonMessageError(Exception):
    """A message that cannot be ingested whatever is retried; its reason goes to the dead letter."""


@dataclass
class Decoded:
    """The prepared events of one message (none when a Trino event reports no lineage)."""

    events: list[PreparedEvent] = field(default_factory=list)
    skipped: str | None = None


def _reason(exc: AppError) -> str:
    listed = [f"{e.path}: {e.message}" for e in exc.errors[:_REASON_ERRORS]]
    more = len(exc.errors) - len(listed) + exc.omitted
    if more:
        listed.append(f"{more} more error{'s' if more > 1 else ''}")
    return f"{exc.message}: {'; '.join(listed)}" if listed else exc.message


def decode(
    value: bytes | None,
    fmt: Format,
    *,
    max_bytes: int,
    rules: list[AliasRule],
    bridge: BridgeOptions | None,
) -> Decoded:
    """The events of a message, validated and prepared as HTTP ingest does; PoisonMessageError if none can be."""
    if value is None:
        raise PoisonMessageError("empty message: no value (a tombstone?)")
    if not value.strip():
        raise PoisonMessageError("empty message: its value holds no JSON")
    if len(value) > max_bytes:
        raise PoisonMessageError(
            f"message too large: {len(value)} bytes, more than {max_bytes} (HEADWATER_MAX_BODY_BYTES)"
        )
    try:
        raw: Any = decode_json(value, "message")
    except UndecodableError as exc:
        raise PoisonMessageError(exc.reason) from None
    skipped = None
    try:
        if fmt == "trino":
            if isinstance(raw, dict) and isinstance(raw.get("eventPayload"), dict):
                raw = raw["eventPayload"]
            conversion = convert(raw, bridge)
            skipped = conversion.skipped
            valid = [validate_event(e, f"$.converted[{i}]") for i, e in enumerate(conversion.events)]
        else:
            valid = [validate_event(raw)]
    except AppError as exc:
        raise PoisonMessageError(_reason(exc)) from None
    except Exception as exc:  # a defect on this message's data must not stop its partition either
        raise PoisonMessageError(f"could not be read: {type(exc).__name__}: {exc}") from exc
    try:
        return Decoded(prepare_events(valid, rules), skipped)
    except Exception as exc:  # a defect on this event's data must not stop its partition
        raise PoisonMessageError(f"could not be prepared: {type(exc).__name__}: {exc}") from exc
