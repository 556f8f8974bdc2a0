"""The SparkSession the commands run on: quiet, UTC, and executors on this very Python."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time
from typing import TYPE_CHECKING

from headwater.command_base import raise_stop_if_lost

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def build_session(master: str, app_name: str, conf: dict[str, str] | None = None) -> SparkSession:
    """Start (or join) a session on ``master``; executors run the interpreter running this command."""
    from pyspark.sql import SparkSession

    # Executors must import headwater: run them on this interpreter unless told otherwise. The
    # driver reads PYSPARK_PYTHON when the context starts (spark.pyspark.python is spark-submit's).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.structuredLogging.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if master.startswith("local"):
        # Few, larger shuffle partitions on one machine: 200 tiny tasks per shuffle cost more.
        builder = builder.config("spark.sql.shuffle.partitions", "8")
        # Executors live in the driver's JVM: Spark's 1 GiB default is too little for the sorts of
        # a large backfill (it spills, but its buffers alone can exhaust 1 GiB).
        builder = builder.config("spark.driver.memory", "3g")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    logging.getLogger().addFilter(drop_interrupted_py4j_calls)  # once: a filter is added only once
    before = _children()
    try:
        spark = builder.getOrCreate()
        raise_stop_if_lost()  # spark-submit was forked meanwhile
    except BaseException:
        # Interrupted while the JVM starts (Ctrl-C, SIGTERM): the JVM spark-submit launched would go
        # on starting, with its 3 GB and this command's output streams, until it noticed that its
        # driver is gone. It ends with the command instead.
        _end(_children() - before)
        raise
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def drop_interrupted_py4j_calls(record: logging.LogRecord) -> bool:
    """Whether to keep a log record: not py4j's traceback of a JVM call that Ctrl-C or SIGTERM
    interrupted, which it logs on the root logger. The command says it was interrupted itself."""
    interrupted = record.exc_info is not None and record.exc_info[0] is KeyboardInterrupt
    return not (interrupted and f"{os.sep}py4j{os.sep}" in record.pathname)


def _children() -> set[int]:
    """The processes this one started and that are still running (read from /proc; none elsewhere)."""
    found: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{os.getpid()}/task"):
            with open(f"/proc/{os.getpid()}/task/{task}/children") as listed:
                found.update(int(pid) for pid in listed.read().split())
    except OSError:
        pass
    return found


def _end(pids: set[int], grace_s: float = 5.0) -> None:
    """SIGTERM to each child, SIGKILL to those still there after ``grace_s``; each is reaped."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    left = set(pids)
    while left and time.monotonic() < deadline:
        for pid in list(left):
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    continue
            left.discard(pid)
        time.sleep(0.05)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
