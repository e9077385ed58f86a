"""Completing ``wait_for_dag`` Airflow checks from the DAG run's state, as lakeFS's Airflow hook does.

A DAG written for lakeFS does not call back: lakeFS waits for the run. The watcher polls each such
run every ``interval`` and, once the run is ``success`` or ``failed``, completes the execution with a
compare-and-set (so a DAG that does call back simply wins first). Pending runs live in memory: after
a restart they are not polled again and the timeout reaper moves them to LOST at their deadline.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from lakewarden.checks.executors import ExecutorError
from lakewarden.checks.executors.airflow import FINAL_STATES, AirflowExecutor
from lakewarden.checks.masking import SecretMask
from lakewarden.checks.states import ACTIVE, Status
from lakewarden.checks.store import Execution, Store

log = logging.getLogger(__name__)


@dataclass
class _Pending:
    execution: Execution
    properties: dict[str, Any]
    run_id: str
    next_poll: float


class DagRunWatcher:
    def __init__(self, store: Store, interval: float, secrets: SecretMask):
        self.store = store
        self.interval = interval
        self.secrets = secrets
        self._executor = AirflowExecutor()
        self._pending: list[_Pending] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="checks-dag-watch", daemon=True)
        self._thread.start()

    def watch(self, execution: Execution, properties: dict[str, Any], run_id: str) -> None:
        with self._lock:
            self._pending.append(_Pending(execution, properties, run_id, time.monotonic() + self.interval))

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def _still_active(self, e: Execution) -> bool:
        current = self.store.get(e.repository, e.commit_id, e.check_id)
        return current is not None and current.execution_id == e.execution_id and current.status in ACTIVE

    def _poll(self, item: _Pending) -> bool:
        """One poll; True when the item is done (completed, or no longer ours to complete)."""
        e = item.execution
        if not self._still_active(e):
            return True
        try:
            state = self._executor.run_state(item.properties, item.run_id, self.secrets)
        except ExecutorError as exc:
            log.warning("check %s@%s: polling DAG run failed: %s", e.check_id, e.commit_id[:12],
                        self.secrets.mask_cut(str(exc), 2000))
            return False
        if state not in FINAL_STATES:
            return False
        status = Status(FINAL_STATES[state])
        if self.store.complete(e.row_id, e.execution_id, status, {"dag_run_id": item.run_id, "dag_run_state": state}):
            log.info("check %s@%s: DAG run %s ended %s", e.check_id, e.commit_id[:12], item.run_id, state)
        return True

    def _run(self) -> None:
        while not self._stop.wait(min(self.interval, 0.5)):
            now = time.monotonic()
            with self._lock:
                due = [p for p in self._pending if p.next_poll <= now]
            for item in due:
                try:
                    done = self._poll(item)
                except Exception:  # a database hiccup: try again at the next interval
                    log.exception("polling DAG run %s failed", item.run_id)
                    done = False
                with self._lock:
                    if done:
                        self._pending.remove(item)
                    else:
                        item.next_poll = time.monotonic() + self.interval

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
