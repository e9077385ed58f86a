"""The timeout reaper: a background thread that moves timed-out executions to LOST.

An executor that dies never calls back; without the timeout reaper its check would stay EXECUTING and
block merges forever. Timeouts are per check and may be days, so the timeout reaper simply compares each
execution's stored deadline with the clock at a fixed interval; the transition is a
compare-and-set, so a callback arriving at the same moment either wins or is told the check is LOST.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from lakewarden.checks.store import Execution, Store

log = logging.getLogger(__name__)


class TimeoutReaper:
    def __init__(self, store: Store, interval: timedelta):
        self.store = store
        self.interval = interval.total_seconds()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sweep_once(self) -> list[Execution]:
        lost = self.store.sweep()
        for e in lost:
            log.warning(
                "check %s/%s@%s attempt %d: no callback by %s, now LOST",
                e.repository,
                e.check_id,
                e.commit_id[:12],
                e.attempt,
                e.deadline_at.isoformat(),
            )
        return lost

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sweep_once()
            except Exception:  # a database hiccup must not kill the thread for good
                log.exception("sweep failed; trying again in %.0fs", self.interval)

    def start(self) -> "TimeoutReaper":
        self._thread = threading.Thread(target=self._run, name="checks-timeout-reaper", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
