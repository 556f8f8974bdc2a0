"""Progress of long commands where stderr is not a terminal: periodic lines with counts and time."""

from __future__ import annotations

import io
import re
import time

import pytest

from headwater.pipeline import progress as progress_module
from headwater.pipeline.progress import Progress


def test_lines_name_the_phase_with_counts_rate_and_elapsed_time() -> None:
    out = io.StringIO()  # not a terminal
    with Progress(out, interval=0.1) as progress:
        progress.set_phase("writing events", total=10, unit="events")
        progress.set_count(2)
        time.sleep(0.1)
        progress.set_count(4)  # the rate is measured from the first count on
        time.sleep(0.35)
        progress.set_phase("vacuuming")
        time.sleep(0.25)
    lines = out.getvalue().splitlines()
    assert lines[0] == "[00:00] writing events"
    counted = [line for line in lines if line.startswith("[00:00] writing events: ")]
    assert len(counted) >= 2, lines  # periodic, not only at the start of the phase
    assert re.fullmatch(
        r"\[00:00\] writing events: 4/10 events \(40%\), [\d.]+ events/s, 0 s so far, ~\d+ s left",
        counted[-1],
    ), counted[-1]
    assert "[00:00] vacuuming" in lines
    assert any(re.fullmatch(r"\[00:00\] vacuuming: 0 s so far", line) for line in lines), lines


def test_a_polled_count_moves_while_the_phase_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "POLL_S", 0.05)
    out = io.StringIO()
    stored = iter(range(0, 1_000_000, 250))
    with Progress(out, interval=0.05) as progress:
        progress.set_phase("writing", total=1000, unit="rows")
        with progress.counting(lambda: next(stored)):
            time.sleep(0.5)
    counts = [
        int(n.replace(",", "")) for n in re.findall(r"writing: ([\d,]+)/1,000 rows", out.getvalue())
    ]
    assert len(counts) >= 3, out.getvalue()
    assert counts == sorted(counts), counts
    assert counts[-1] > counts[0], counts


def test_quiet_prints_nothing() -> None:
    out = io.StringIO()
    with Progress(out, enabled=False, interval=0.05) as progress:
        progress.set_phase("writing", total=3)
        time.sleep(0.15)
    assert out.getvalue() == ""


def test_a_line_for_every_tenth_of_a_known_total_between_the_interval_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(progress_module, "REDRAW_S", 0.05)
    out = io.StringIO()
    with Progress(out, interval=3600) as progress:  # no line for the interval in this test
        progress.set_phase("importing", total=1000, unit="events")
        for done in range(0, 1001, 100):
            progress.set_count(done)
            time.sleep(0.12)
    shares = re.findall(r"importing: [\d,]+/1,000 events \((\d+)%\)", out.getvalue())
    # A line as each tenth passes (a tick may see two pass at once), each tenth said once.
    assert [int(s) for s in shares] == sorted({int(s) for s in shares}), out.getvalue()
    assert len(shares) >= 8, out.getvalue()
    assert shares[-1] == "100"  # the last one too, as the display ends
