"""Quiet progress: one plain line per phase off a terminal, a live bar (erased into that same
line) on one; dbt's log lines go to the state dir's log file, not stdout."""

from __future__ import annotations

import io
import re

import pytest

from lakewarden.runtime import progress
from lakewarden.runtime.progress import Phase, PhaseClock, human_bytes, interactive, phase


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_each_phase_is_one_line_with_count_bytes_and_time(monkeypatch) -> None:
    monkeypatch.delenv("LAKEWARDEN_PROGRESS", raising=False)
    stream = io.StringIO()
    with phase("sweep", total=3, unit="objects", stream=stream) as bar:
        bar.advance(2, nbytes=2_000_000)
        bar.advance(1, nbytes=500_000)
    with phase("dbt build", unit="nodes", stream=stream) as bar:
        bar.set_total(5)
        bar.advance(5)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"lakewarden: sweep: 3 objects, 2\.5 MB in \d+\.\ds", lines[0])
    assert lines[1].startswith("lakewarden: dbt build: 5 nodes in ")


def test_a_failed_phase_prints_nothing_and_the_error_propagates(monkeypatch) -> None:
    """Errors stay one line on stderr: the command line's, not a phase line before it."""
    monkeypatch.delenv("LAKEWARDEN_PROGRESS", raising=False)
    stream = io.StringIO()
    with pytest.raises(RuntimeError):
        with phase("extract", total=10, unit="ranges", stream=stream) as bar:
            bar.advance(4)
            raise RuntimeError("boom")
    assert stream.getvalue() == ""


def test_on_a_terminal_a_rich_bar_is_drawn_then_replaced_by_the_line(monkeypatch) -> None:
    monkeypatch.delenv("LAKEWARDEN_PROGRESS", raising=False)
    stream = Terminal()
    assert interactive(stream)
    with phase("sweep", total=4, unit="objects", stream=stream) as bar:
        assert bar._bar is not None  # a rich Progress is live
        for _ in range(4):
            bar.advance(1, nbytes=1000)
    text = stream.getvalue()
    assert "\x1b[" in text  # the bar drew with terminal control sequences
    assert re.search(r"lakewarden: sweep: 4 objects, 4\.0 KB in \d+\.\ds", text)
    monkeypatch.setenv("LAKEWARDEN_PROGRESS", "plain")
    assert not interactive(stream)


def test_rate_and_units() -> None:
    done = Phase("x", total=None, unit="objects", count=120, started=0.0)
    assert "objects/s" in done.line()
    assert human_bytes(999) == "999 B" and human_bytes(1_500) == "1.5 KB" and human_bytes(3_200_000_000) == "3.2 GB"


def test_progress_off_prints_nothing_even_on_success(monkeypatch) -> None:
    """LAKEWARDEN_PROGRESS=off: for scripts and cron, stderr holds errors only."""
    monkeypatch.setenv("LAKEWARDEN_PROGRESS", "off")
    stream = Terminal()
    with phase("sweep", total=2, unit="objects", stream=stream) as bar:
        bar.advance(2)
    assert bar.count == 2 and stream.getvalue() == ""


def test_a_phase_clock_gives_each_lap_its_seconds_in_order_and_adds_a_name_lapped_again(monkeypatch) -> None:
    moments = iter([10.0, 10.5, 12.0, 12.25, 15.0, 15.5, 20.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(moments))
    clock = PhaseClock()  # 10.0
    clock.lap("load")  # 0.5
    clock.lap("models")  # 1.5
    clock.lap("load")  # 0.25 more
    clock.lap("outputs")  # 2.75
    assert clock.seconds == {"load": 0.75, "models": 1.5, "outputs": 2.75}
    assert clock.pairs() == [["load", 0.75], ["models", 1.5], ["outputs", 2.75]]  # the order they first ran
    assert clock.elapsed() == 5.5  # since the clock was made, the time after the last lap too
    assert PhaseClock().seconds == {}  # a phase that never ran is absent, not zero
