"""A Kafka message that cannot be read is a poison message whatever the cause, so that its
partition goes on (no broker needed: decoding is pure)."""

from __future__ import annotations

import json

import pytest

from headwater.consume import messages
from headwater.consume.messages import PoisonMessageError, decode
from headwater.integrations.trino import BridgeOptions
from tests.integrations.trino.events import http_example


def test_a_trino_event_whose_coordinator_uri_cannot_be_read_is_poison():
    event = http_example()
    event["metadata"]["uri"] = "http://[::1"
    with pytest.raises(PoisonMessageError, match=r"\$\.metadata\.uri.*not a URI"):
        decode(json.dumps(event).encode(), "trino", max_bytes=1 << 20, rules=[], bridge=BridgeOptions())


def test_a_defect_met_reading_a_message_is_poison_not_a_stopped_partition(monkeypatch):
    # Stands for a defect no input is known to meet yet (one such was a URI parser's ValueError).
    def defect(*args, **kwargs):
        raise ValueError("Invalid IPv6 URL")

    monkeypatch.setattr(messages, "convert", defect)
    event = json.dumps(http_example()).encode()
    with pytest.raises(PoisonMessageError, match="could not be read: ValueError: Invalid IPv6 URL"):
        decode(event, "trino", max_bytes=1 << 20, rules=[], bridge=BridgeOptions())


@pytest.mark.parametrize("value", [b"", b"  \n"])
def test_an_empty_value_is_poison_saying_so(value):
    with pytest.raises(PoisonMessageError, match="empty message: its value holds no JSON"):
        decode(value, "openlineage", max_bytes=1 << 20, rules=[], bridge=None)
