"""`headwater consume` writes with the garbage collector set as for ingest, like serve and the import."""

from __future__ import annotations

import asyncio
import gc

import pytest

from headwater.cli import _build_parser
from headwater.consume import command
from headwater.ingest.service import COLLECTOR_THRESHOLDS

pytestmark = pytest.mark.db


async def test_the_consumer_runs_with_rare_collections_and_restores_them(fresh_database, monkeypatch):
    seen: list[tuple[int, ...]] = []
    frozen: list[bool] = []

    async def consume(*_args: object) -> None:  # stands for the consumer's whole run
        seen.append(gc.get_threshold())

    monkeypatch.setattr(command, "_consume", consume)
    # Freezing this test process's objects would outlive the test: counted, not done.
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    monkeypatch.setenv("HEADWATER_DATABASE_URL", fresh_database)
    args = _build_parser().parse_args(
        ["consume", "--bootstrap-servers", "127.0.0.1:9", "--topic", "events"]
    )
    original = gc.get_threshold()
    before = (700, 10, 10)  # Python's defaults, whatever an earlier test of this process left
    gc.set_threshold(*before)
    try:
        assert await asyncio.to_thread(command.run_consume, args) == 0
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*original)

    assert seen == [COLLECTOR_THRESHOLDS]
    assert frozen == [True]
    assert after == before
