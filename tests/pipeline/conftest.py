"""Spark on local[1], one session per test module."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

if importlib.util.find_spec("pyspark") is None or shutil.which("java") is None:
    pytest.skip("pyspark and a Java runtime are needed", allow_module_level=True)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A local[1] session for the module's tests, stopped after them."""
    from headwater.pipeline.session import build_session

    session = build_session("local[1]", "headwater-tests", {"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


@pytest.fixture
def progress(spark: Any) -> Any:
    from headwater.pipeline.progress import Progress

    return Progress(enabled=False, sc=spark.sparkContext)
