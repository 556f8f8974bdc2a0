"""Progress of a long command on stderr: the phase, done / total, rate, elapsed and remaining time.

On a terminal, one line redrawn in place, with a bar when the total is known. Elsewhere (a log, a
pipe, CI) a line when a phase starts, then each time another tenth of its known total is done and
every ``interval`` seconds, so that a log shows the sequence of phases, how far a long one has come
and that it is moving::

    [00:21] writing events in eventTime order
    [00:31] writing events in eventTime order: 4,000/10,000 events (40%), 400 events/s, 10 s so far,
            ~15 s left

What counts: what a phase reports (``set_count``, or a function polled in a ``counting`` block),
else the tasks of Spark's running stages once a SparkContext is attached. The rate is taken from
the first count on, so that the set-up of a phase does not make it look slow.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import TracebackType

    from pyspark import SparkContext

BAR_WIDTH = 20
REDRAW_S = 0.5  # how often a terminal line is redrawn
# How often a ``counting`` function is called at most. It may query a database whose tables grow:
# it is also called no more often than every POLL_SHARE-th of the time its last call took, so that
# counting never takes more than a small share of the machine.
POLL_S = 2.0
POLL_SHARE = 20


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}:{seconds:02d} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d} h"


class Progress:
    """The display of one command; a context manager that runs it in a thread of its own."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        enabled: bool = True,
        interval: float = 10.0,
        sc: SparkContext | None = None,
    ) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.interval = interval
        self.tty = self.stream.isatty()
        self.sc = sc
        self.started = time.monotonic()
        self.phase = ""
        self.detail = ""
        self.unit = ""
        self.done: int | None = None
        self.total: int | None = None
        self.phase_started = self.started
        self._poll: Callable[[], int] | None = None
        self._poll_mutex = threading.Lock()  # held while the poll runs: its block cannot end then
        self._first_count: tuple[float, int] | None = None  # (when, count) of the first count > 0
        self._counted_at = 0.0  # when the count last grew
        self._poll_due = 0.0
        self._mutex = threading.Lock()
        self._write_mutex = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="headwater-progress", daemon=True)
        self._last_line = ""
        self._last_print = 0.0
        self._tenths_shown = 0  # tenths of the phase's total that a line has shown done

    def __enter__(self) -> Progress:
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self.enabled:
            self._thread.join(timeout=5)
            if not self.tty and self.phase and self._passed_a_tenth():  # e.g. the last, 100%
                self._emit(self.status(), force=True)
            if self.tty and self._last_line:
                self.stream.write("\r" + " " * len(self._last_line) + "\r")
                self.stream.flush()

    def attach(self, sc: SparkContext) -> None:
        """Spark has started: phases name its jobs, and its running tasks count where nothing else does."""
        self.sc = sc
        if self.phase:
            sc.setJobDescription(self.phase)

    def set_phase(
        self, phase: str, detail: str = "", *, total: int | None = None, unit: str = ""
    ) -> None:
        """Start a phase: what runs now, and how many ``unit`` it has to do, when that is known."""
        with self._mutex:
            self.phase, self.detail, self.unit = phase, detail, unit
            self.done, self.total = (0 if total is not None else None), total
            self.phase_started = time.monotonic()
            self._first_count = None
            self._tenths_shown = 0
        if self.sc is not None:
            self.sc.setJobDescription(phase)
        if self.enabled:
            self._emit(
                f"{self._clock()} {phase}{' ' + detail if detail else ''}", force=True, newline=True
            )

    def set_count(self, done: int, total: int | None = None) -> None:
        """How much of the phase is done (and its total, if it became known); counts never go back."""
        with self._mutex:
            self._count(done)
            if total is not None:
                self.total = total

    def _count(self, done: int) -> None:
        if self.done is not None and done <= self.done:
            return
        self.done, self._counted_at = done, time.monotonic()
        if self._first_count is None and done > 0:
            self._first_count = (self._counted_at, done)

    @contextlib.contextmanager
    def counting(self, poll: Callable[[], int]) -> Iterator[None]:
        """Within the block, ``poll`` says how much is done; called every POLL_S or less often."""
        with self._poll_mutex:
            self._poll = poll
        try:
            yield
        finally:
            with self._poll_mutex:
                self._poll = None

    def set_detail(self, detail: str) -> None:
        """Replace the words shown after the phase's name (e.g. the last convergence figure)."""
        with self._mutex:
            self.detail = detail

    def status(self, *, bar: bool = False) -> str:
        """The current line: as printed where the output is not a terminal, or with a bar."""
        self._refresh()
        with self._mutex:
            phase, detail, unit = self.phase, self.detail, self.unit
            done, total, first, counted_at = self.done, self.total, self._first_count, self._counted_at
            elapsed = time.monotonic() - self.phase_started
        head = f"{self._clock()} {phase}" + (f" {detail}" if detail else "")
        if done is None:
            tasks = self._tasks()
            return f"{head}: " + ", ".join([*([tasks] if tasks else []), f"{_duration(elapsed)} so far"])
        unit = f" {unit}" if unit else ""
        rate = None
        if first is not None and done > first[1] and counted_at > first[0]:
            rate = (done - first[1]) / (counted_at - first[0])
        share = min(done / total, 1.0) if total else None
        if bar and share is not None:
            filled = round(BAR_WIDTH * share)
            head += " [" + "#" * filled + "." * (BAR_WIDTH - filled) + "]"
        counts = [f"{done:,}/{total:,}{unit} ({share:.0%})" if share is not None else f"{done:,}{unit}"]
        if rate is not None:
            counts.append(f"{rate:,.1f}{unit}/s" if rate < 10 else f"{rate:,.0f}{unit}/s")
        counts.append(f"{_duration(elapsed)} so far")
        if rate and total and done < total:
            counts.append(f"~{_duration((total - done) / rate)} left")
        return f"{head}: " + ", ".join(counts)

    def _passed_a_tenth(self) -> bool:
        """Whether the count has passed another tenth of a known total since a line last said so."""
        with self._mutex:
            if not self.total or not self.done:
                return False
            tenths = min(10, 10 * self.done // self.total)
            if tenths <= self._tenths_shown:
                return False
            self._tenths_shown = tenths
            return True

    def _clock(self) -> str:
        elapsed = int(time.monotonic() - self.started)
        return f"[{elapsed // 60:02d}:{elapsed % 60:02d}]"

    def _tasks(self) -> str:
        if self.sc is None:
            return ""
        try:
            tracker = self.sc.statusTracker()
            done = total = 0
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
        except Exception:  # the context may be stopping; the display is best effort
            return ""
        return f"tasks {done}/{total}" if total else ""

    def _refresh(self) -> None:
        """Call the ``counting`` function, if there is one and it is due."""
        with self._poll_mutex:
            started = time.monotonic()
            if self._poll is None or started < self._poll_due:
                return
            try:
                done = self._poll()
            except Exception:  # e.g. the database is busy: keep the last count
                return
            finally:
                took = time.monotonic() - started
                self._poll_due = started + max(POLL_S, POLL_SHARE * took)
        with self._mutex:
            self._count(done)

    def _run(self) -> None:
        tick = min(REDRAW_S, self.interval)
        while not self._stop.wait(tick):
            # Asked first, so that a line printed for the interval marks its tenth shown too.
            tenth = self._passed_a_tenth()
            due = self.tty or tenth or time.monotonic() - self._last_print >= self.interval
            if self.phase and due:
                self._emit(self.status(bar=self.tty), force=tenth)

    def _emit(self, line: str, *, force: bool = False, newline: bool = False) -> None:
        with self._write_mutex:  # phase lines come from the command's thread, the rest from ours
            self._write(line, force=force, newline=newline)

    def _write(self, line: str, *, force: bool, newline: bool) -> None:
        now = time.monotonic()
        if self.tty:
            width = shutil.get_terminal_size().columns - 1
            line = line[:width]
            pad = " " * max(0, len(self._last_line) - len(line))
            self.stream.write("\r" + line + pad + ("\n" if newline else ""))
            self._last_line = "" if newline else line
        elif force or now - self._last_print >= self.interval:
            self.stream.write(line + "\n")
        else:
            return
        self._last_print = now
        self.stream.flush()
