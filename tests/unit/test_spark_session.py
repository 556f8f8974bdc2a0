"""A Spark command stopped by Ctrl-C or SIGTERM says so in one line: py4j's traceback of the JVM call
it interrupted is not printed (tests/cli/test_database.py stops real commands; whether a call is in
flight at that moment depends on the machine's speed)."""

from __future__ import annotations

import logging
import os
import sys

import py4j.java_gateway

from headwater.pipeline.session import drop_interrupted_py4j_calls


def _record(pathname: str, exc: BaseException | None) -> logging.LogRecord:
    exc_info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord("root", logging.ERROR, pathname, 1, "msg", None, exc_info)


def test_py4j_traceback_of_an_interrupted_call_is_dropped():
    py4j_file = py4j.java_gateway.__file__
    assert f"{os.sep}py4j{os.sep}" in py4j_file
    assert not drop_interrupted_py4j_calls(_record(py4j_file, KeyboardInterrupt()))


def test_other_records_are_kept():
    py4j_file = py4j.java_gateway.__file__
    assert drop_interrupted_py4j_calls(_record(py4j_file, ConnectionError("gone")))
    assert drop_interrupted_py4j_calls(_record(py4j_file, None))
    # An interrupt logged by anything else, ours included, is still shown.
    assert drop_interrupted_py4j_calls(_record(__file__, KeyboardInterrupt()))
    assert drop_interrupted_py4j_calls(_record(sys.executable, KeyboardInterrupt()))
