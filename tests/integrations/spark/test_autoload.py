"""Switching lineage on without code changes, and never failing the job (no JVM)."""

from __future__ import annotations

import logging
import subprocess
import sys
import types
from typing import Any

import pytest
from headwater_spark import autoload, enable_lineage
from headwater_spark.listener import SparkLineage

from tests.integrations.spark.conftest import spark_missing

pytestmark = pytest.mark.spark

PROBE = "import sys; print('headwater_spark.autoload' in sys.modules, 'pyspark' in sys.modules)"


@pytest.mark.skipif(spark_missing() is not None, reason=str(spark_missing()))
@pytest.mark.parametrize(
    ("value", "loaded"), [(None, "False"), ("0", "False"), ("1", "True"), ("true", "True")]
)
def test_pth_hook_loads_only_when_switched_on(value: str | None, loaded: str) -> None:
    env = {"PATH": "/usr/bin:/bin"}
    if value is not None:
        env["HEADWATER_SPARK_LINEAGE"] = value
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    # Never imports PySpark by itself, whether on or off.
    assert out.stdout.split() == [loaded, "False"]


def fake_session_module(sessions: list[Any]) -> types.ModuleType:
    module = types.ModuleType("fake_session")

    class Builder:
        def getOrCreate(self) -> Any:  # noqa: N802
            session = object()
            sessions.append(session)
            return session

    module.SparkSession = type("SparkSession", (), {"Builder": Builder})  # type: ignore[attr-defined]
    return module


def test_get_or_create_enables_lineage_and_survives_its_failure(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import headwater_spark.listener as listener

    enabled: list[Any] = []
    monkeypatch.setattr(listener, "enable_lineage", lambda session: enabled.append(session))
    sessions: list[Any] = []
    module = fake_session_module(sessions)
    autoload.patch_session_module(module)
    autoload.patch_session_module(module)  # idempotent
    session = module.SparkSession.Builder().getOrCreate()
    assert enabled == sessions == [session]

    def broken(session: Any) -> None:
        raise RuntimeError("lineage bug")

    monkeypatch.setattr(listener, "enable_lineage", broken)
    with caplog.at_level(logging.WARNING, logger="headwater_spark"):
        assert module.SparkSession.Builder().getOrCreate() is sessions[-1]
    assert "automatic enabling failed" in caplog.text


def test_switch_values() -> None:
    assert autoload.switched_on({"HEADWATER_SPARK_LINEAGE": " Yes "})
    assert not autoload.switched_on({"HEADWATER_SPARK_LINEAGE": "no"})
    assert not autoload.switched_on({})


def test_enable_lineage_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="headwater_spark"):
        assert enable_lineage(object()) is None  # not a classic SparkSession
    assert "not a classic SparkSession" in caplog.text


def test_an_extraction_error_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def extract(self, *args: Any) -> None:
            raise ValueError("unexpected plan")

    class Emitter:
        def busy(self) -> Any:
            import contextlib

            return contextlib.nullcontext()

    lineage = SparkLineage.__new__(SparkLineage)
    lineage.extractor = Broken()  # type: ignore[assignment]
    lineage.emitter = Emitter()  # type: ignore[assignment]
    lineage._finished = False
    lineage._warned = 0
    with caplog.at_level(logging.WARNING, logger="headwater_spark"):
        lineage._on_action("command", object(), None, 1)
    assert "could not extract lineage of 'command'" in caplog.text
