"""A ``lakewarden`` process whose sweep stops at an exact moment, for the kill tests.

    python python/tests/sweep_holding.py POINT[:N] HOLD_FILE sweep --report DIR ...

Runs ``lakewarden`` with the remaining arguments, after registering an observer of the sweep's
points (:mod:`lakewarden.sweep.hooks`): the N-th time (default 1st) the sweep reaches ``POINT``,
the observer writes the process's pid to ``HOLD_FILE`` (whole, by a rename) and waits there, at
most :data:`MAX_HOLD_SECONDS`, for the test to kill the process. The pause lives here, in the
tests: lakewarden's delete path only names its points.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter

MAX_HOLD_SECONDS = 600.0
#: how a test starts the wrapper: ``[*COMMAND, "POINT[:N]", HOLD_FILE, "sweep", ...]``
COMMAND = (sys.executable, os.path.abspath(__file__))


def holder(spec: str, hold_file: str):
    """The observer: pause the N-th time ``POINT`` of ``POINT[:N]`` is reached."""
    from lakewarden.sweep.hooks import POINTS

    point, _, nth = spec.partition(":")
    if point not in POINTS:
        raise SystemExit(f"sweep_holding: unknown point {point!r} (points: {', '.join(POINTS)})")
    wanted = int(nth) if nth else 1
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def observe(reached: str) -> None:
        if reached != point:
            return
        with lock:
            seen[reached] += 1
            if seen[reached] != wanted:
                return
        temporary = f"{hold_file}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
        os.replace(temporary, hold_file)
        deadline = time.monotonic() + MAX_HOLD_SECONDS
        while time.monotonic() < deadline:
            time.sleep(0.05)

    return observe


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        raise SystemExit(__doc__)
    from lakewarden.cli import main as lakewarden
    from lakewarden.sweep.hooks import observe

    observe(holder(argv[0], argv[1]))
    return lakewarden(argv[2:])


if __name__ == "__main__":
    # run as a file: the tests' directory is first on sys.path; lakewarden must not see its modules
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    sys.exit(main(sys.argv[1:]))
