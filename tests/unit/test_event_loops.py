"""The long-running writers' event loop: uvloop's where installed, else asyncio's."""

from __future__ import annotations

import asyncio
import builtins
from typing import Any

import pytest
import uvloop

from headwater import event_loops


async def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def test_run_takes_uvloop_when_installed() -> None:
    assert isinstance(event_loops.run(_running_loop()), uvloop.Loop)


def test_run_falls_back_to_asyncio_without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def without_uvloop(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "uvloop":
            raise ImportError("No module named 'uvloop'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_uvloop)
    loop = event_loops.run(_running_loop())
    assert not isinstance(loop, uvloop.Loop)
    assert isinstance(loop, asyncio.BaseEventLoop)


def test_run_returns_the_result_and_closes_the_loop() -> None:
    async def answer() -> tuple[int, asyncio.AbstractEventLoop]:
        return 42, asyncio.get_running_loop()

    value, loop = event_loops.run(answer())
    assert value == 42
    assert loop.is_closed()
