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
