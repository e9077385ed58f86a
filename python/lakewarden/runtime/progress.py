"""Quiet progress for long phases (extract, the model builds, sweep, report writing).

On a terminal a phase is a live progress bar (rich) with its count, bytes and rate, erased
into one summary line when it ends; anywhere else (a pipe, a log file, CI) a phase prints
exactly one plain line when it ends. Both go to stderr, so stdout carries only results (what
a script or ``lakewarden demo``'s reader wants), and errors stay the one line the CLI prints.

Usage::

    with phase("sweep", total=num_marked, unit="objects") as bar:
        bar.advance(deleted, nbytes=size)
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, TextIO


def human_bytes(size: float) -> str:
    """``1234567`` -> ``1.2 MB`` (decimal units), for progress lines, the demo and report.html."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} PB"


def interactive(stream: TextIO | None = None) -> bool:
    """True when ``stream`` (default stderr) is a terminal and progress bars are not disabled
    (``LAKEWARDEN_PROGRESS=plain``)."""
    if os.environ.get("LAKEWARDEN_PROGRESS") == "plain":
        return False
    stream = stream or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


@dataclass
class Phase:
    """One phase's counters; ``advance`` updates the bar (if any)."""

    name: str
    total: int | None
    unit: str
    count: int = 0
    nbytes: int = 0
    started: float = field(default_factory=time.monotonic)
    _bar: Any = None
    _task: Any = None

    def advance(self, count: int = 1, *, nbytes: int = 0) -> None:
        self.count += count
        self.nbytes += nbytes
        if self._bar is not None:
            self._bar.update(self._task, completed=self.count, bytes=self.nbytes, total=self.total)

    def set_total(self, total: int | None) -> None:
        self.total = total
        if self._bar is not None:
            self._bar.update(self._task, total=total)

    def line(self) -> str:
        """The phase's one-line summary: count, bytes, time and rate."""
        seconds = max(time.monotonic() - self.started, 1e-6)
        parts = [f"{self.count:,}" + (f"/{self.total:,}" if self.total is not None and self.total != self.count else "") + f" {self.unit}"]
        if self.nbytes:
            parts.append(human_bytes(self.nbytes))
        per_second = self.count / seconds
        rate = (f"{per_second:,.0f}" if per_second >= 10 else f"{per_second:.2g}") + f" {self.unit}/s" if self.count and seconds >= 1 else ""
        return f"{self.name}: " + ", ".join(parts) + f" in {seconds:.1f}s" + (f" ({rate})" if rate else "")


class PhaseClock:
    """Seconds per named phase of a job's mark, for its ``summary.json`` (``phase_seconds``:
    :meth:`pairs`, in the order the phases first ran; the summary's objects are written with
    sorted keys, which would put them in alphabetical order).

    Why: a run's wall time says how long, not where; the benchmarks subtract one run's phases
    from another's (an incremental run's from a no-op's) to say which steps an incremental run
    pays for, with no profiler and no event log. ``lap(name)`` closes the phase that ran since
    the previous lap (or since the clock was made) under ``name``; a name lapped again adds up.
    A phase that did not run (a no-op run's pass over the entries) is absent, not zero."""

    def __init__(self) -> None:
        self._started = self._since = time.monotonic()
        self.seconds: dict[str, float] = {}

    def elapsed(self) -> float:
        """Seconds since the clock was made, laps or not (a mark's whole time)."""
        return round(time.monotonic() - self._started, 3)

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self._since, 3)
        self._since = now

    def pairs(self) -> list[list[object]]:
        """``[[name, seconds], ...]`` in the order the phases first ran (JSON keeps it)."""
        return [[name, seconds] for name, seconds in self.seconds.items()]


@contextmanager
def phase(name: str, *, total: int | None = None, unit: str = "items", stream: TextIO | None = None) -> Iterator[Phase]:
    """A long phase: a rich progress bar on a terminal, one plain line at the end otherwise.
    A phase that raises prints no line: errors stay one line on stderr (the command line's),
    and a transient bar leaves nothing behind."""
    stream = stream or sys.stderr
    current = Phase(name, total, unit)
    if os.environ.get("LAKEWARDEN_PROGRESS") == "off":  # scripts and cron: stderr holds errors only
        yield current
        return
    bar = None
    if interactive(stream):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            TextColumn("{task.fields[size]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            console=Console(file=stream),
            transient=True,
        )
        current._bar = _RichBar(bar, current)
        current._task = bar.add_task(name, total=total, unit=unit, size="", rate="")
        bar.start()
    ok = False
    try:
        yield current
        ok = True
    finally:
        if bar is not None:
            bar.stop()
        if ok:
            print(f"lakewarden: {current.line()}", file=stream, flush=True)


class _RichBar:
    """Keeps the bar's byte and rate columns in step with the phase's counters."""

    def __init__(self, progress: Any, owner: Phase) -> None:
        self.progress, self.owner = progress, owner

    def update(self, task: Any, *, completed: int | None = None, bytes: int | None = None, total: int | None = None) -> None:  # noqa: A002
        fields: dict[str, Any] = {}
        if bytes:
            fields["size"] = human_bytes(bytes)
        seconds = max(time.monotonic() - self.owner.started, 1e-6)
        if self.owner.count:
            fields["rate"] = f"{self.owner.count / seconds:,.0f}/s"
        kwargs: dict[str, Any] = dict(fields)
        if completed is not None:
            kwargs["completed"] = completed
        kwargs["total"] = total if total is not None else self.owner.total
        self.progress.update(task, **kwargs)
