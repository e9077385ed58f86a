"""What a sweep returns (and writes to ``sweep/summary.json``)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class SweepResult:
    """Outcome of a sweep, counted over every sweep of the report (re-runs included).

    ``seconds`` is the whole sweep; ``delete_seconds`` the deleting phase alone (reading,
    checking, deleting, recording), which ``deletes_per_second`` is measured over.
    """

    report_dir: str
    run_id: str | None
    sweep_id: str
    storage_namespace: str
    num_marked: int
    num_deleted: int
    num_failed: int
    num_attempted: int
    num_previously_deleted: int
    success: bool
    started_at: str
    finished_at: str
    seconds: float
    delete_seconds: float
    deletes_per_second: float
    outcomes_csv: str
    engine: str = "process"
    error: str | None = None


def new_sweep_id() -> str:
    """A sortable, unique id: UTC start second plus a random suffix."""
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
