"""Where the shared OpenLineage reference corpus lives: beside the checkout, or $HEADWATER_OL_EVENTS."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

EVENTS = Path(
    os.environ.get("HEADWATER_OL_EVENTS")
    or Path(__file__).resolve().parents[2] / "shared" / "openlineage" / "events"
)


def corpus_file(relative: str) -> Path:
    """A file of the corpus; the test is skipped when the corpus is not there."""
    path = EVENTS / relative
    if not path.is_file():
        pytest.skip(f"OpenLineage event corpus not found at {EVENTS}")
    return path
