"""Deterministic pause points, so tests can SIGKILL a sweep at an exact moment.

``LAKEWARDEN_SWEEP_HOLD=POINT[:N]`` makes the sweep stop the N-th time (default 1st) it reaches
``POINT`` (``started``: lock held and summary says ``sweeping``; ``batch``: a batch's outcomes are
recorded and counted; ``merging``: every delete is done, outcomes are being merged). It then
writes its pid to ``LAKEWARDEN_SWEEP_HOLD_FILE`` and waits there (at most 10 minutes, then goes
on) for the test to kill it. Unset, a hold point costs one dictionary lookup. Holding only ever
delays the sweep: it cannot change what is deleted.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter

HOLD_ENV = "LAKEWARDEN_SWEEP_HOLD"
HOLD_FILE_ENV = "LAKEWARDEN_SWEEP_HOLD_FILE"
MAX_HOLD_SECONDS = 600.0

_seen: Counter[str] = Counter()
_lock = threading.Lock()


def hold(point: str) -> None:
    """Pause here if the environment asks for ``point`` (see the module docstring)."""
    wanted = os.environ.get(HOLD_ENV)
    if not wanted:
        return
    name, _, nth = wanted.partition(":")
    if name != point:
        return
    with _lock:
        _seen[point] += 1
        if _seen[point] != (int(nth) if nth else 1):
            return
    target = os.environ.get(HOLD_FILE_ENV)
    if target:
        temporary = f"{target}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
        os.replace(temporary, target)
    deadline = time.monotonic() + MAX_HOLD_SECONDS
    while time.monotonic() < deadline:
        time.sleep(0.05)
