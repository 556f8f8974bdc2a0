"""The OpenLineage reference (spec and event corpus): beside the checkout, or where
$HEADWATER_OPENLINEAGE_REFERENCE points."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

OPENLINEAGE = Path(
    os.environ.get("HEADWATER_OPENLINEAGE_REFERENCE")
    or Path(__file__).resolve().parents[2] / "shared" / "openlineage"
)
EVENTS = OPENLINEAGE / "events"
SPEC = OPENLINEAGE / "spec"


def corpus_file(relative: str) -> Path:
    """A file of the event corpus; the test is skipped when the corpus is not there."""
    path = EVENTS / relative
    if not path.is_file():
        pytest.skip(f"OpenLineage event corpus not found at {EVENTS}")
    return path
