"""A real `headwater serve` and a real Chromium for the browser tests; skipped without either."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server import HeadwaterServer, running_headwater

CHROMIUM = Path(os.environ.get("HEADWATER_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "Playwright for Python is not installed (pip install -e '.[dev,e2e]')"
    if not CHROMIUM.is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set HEADWATER_TEST_CHROMIUM)"
    return None


@pytest.fixture(scope="module")
def server(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HeadwaterServer]:
    """`headwater serve` on the session's database."""
    log = tmp_path_factory.mktemp("headwater-server") / "server.log"
    with running_headwater(database_url, log, secured=False) as running:
        yield running
