"""A command stopped by Ctrl-C or SIGTERM stops, and says so in one line: a stop that arrived while a
child process was forked is raised once the command goes on, and py4j's traceback of a JVM call it
interrupted is not printed (tests/cli/test_database.py stops real commands; what they are doing at
that moment depends on the machine's speed and load)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from types import SimpleNamespace

import py4j.java_gateway

from headwater import command_base
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


# A stop that lands where Python can only drop it: inside __del__, as inside a fork's hooks.
DROPPED_STOP = """
import os, signal
from headwater.command_base import handle_stops, raise_stop_if_lost

class Dropping:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100_000):  # the handler runs here, and its exception is dropped
            pass

handle_stops()
raise_stop_if_lost()  # nothing asked: nothing raised
Dropping()
print("went on")
try:
    raise_stop_if_lost()
except KeyboardInterrupt:
    print("stopped")
"""


def test_a_stop_dropped_by_python_is_raised_when_the_command_goes_on_without_a_traceback():
    done = subprocess.run(
        [sys.executable, "-c", DROPPED_STOP], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.split() == ["went", "on", "stopped"], done.stderr
    assert "Traceback" not in done.stderr
    assert "KeyboardInterrupt" not in done.stderr


def test_other_exceptions_python_drops_are_still_shown(monkeypatch):
    shown = []
    monkeypatch.setattr(command_base, "_stop_asked", True)
    monkeypatch.setattr(sys, "__unraisablehook__", shown.append)
    command_base._unraisable(SimpleNamespace(exc_value=KeyboardInterrupt()))
    command_base._unraisable(SimpleNamespace(exc_value=ValueError("in a __del__")))
    assert [type(u.exc_value) for u in shown] == [ValueError]
