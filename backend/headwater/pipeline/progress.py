"""A one-line progress display on stderr: the current phase and the tasks of its running stages."""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from types import TracebackType

    from pyspark import SparkContext


class Progress:
    """Polls Spark's status tracker; redraws in place on a terminal, prints every 10 s otherwise."""

    def __init__(self, sc: SparkContext, stream: TextIO | None = None, *, enabled: bool = True) -> None:
        self.sc = sc
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.phase = ""
        self.detail = ""
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="headwater-progress", daemon=True)
        self._last_line = ""
        self._last_print = 0.0

    def __enter__(self) -> Progress:
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self.enabled:
            self._thread.join(timeout=2)
            if self.tty and self._last_line:
                self.stream.write("\r" + " " * len(self._last_line) + "\r")
                self.stream.flush()

    def set_phase(self, phase: str, detail: str = "") -> None:
        """Name what runs now; also printed as its own line so logs keep the sequence."""
        self.phase, self.detail = phase, detail
        self.sc.setJobDescription(phase)
        if self.enabled:
            self._emit(
                f"{self._clock()} {phase}{' ' + detail if detail else ''}", force=True, newline=True
            )

    def set_detail(self, detail: str) -> None:
        """Update the counters shown after the phase (e.g. events written so far)."""
        self.detail = detail

    def _clock(self) -> str:
        elapsed = int(time.monotonic() - self.started)
        return f"[{elapsed // 60:02d}:{elapsed % 60:02d}]"

    def _tasks(self) -> str:
        tracker = self.sc.statusTracker()
        done = total = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        return f"tasks {done}/{total}" if total else ""

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                tasks = self._tasks()
            except Exception:  # noqa: S112 - the context may be stopping; the display is best effort
                continue
            parts = [self._clock(), self.phase, self.detail, tasks]
            self._emit(" ".join(p for p in parts if p))

    def _emit(self, line: str, *, force: bool = False, newline: bool = False) -> None:
        now = time.monotonic()
        if self.tty:
            pad = " " * max(0, len(self._last_line) - len(line))
            self.stream.write("\r" + line + pad + ("\n" if newline else ""))
            self._last_line = "" if newline else line
        elif force or now - self._last_print >= 10:
            self.stream.write(line + "\n")
            self._last_print = now
        else:
            return
        self.stream.flush()
