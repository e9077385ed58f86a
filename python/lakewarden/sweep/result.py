"""What a sweep returns (and writes to ``sweep/summary.json``)."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


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
    #: whether the deletes left recoverable copies that still cost storage (S3 versioning, Azure
    #: soft delete, GCS soft delete/versioning): True, False, or None when the store would not say
    recoverable: bool | None = False
    #: what is on and what to configure to free the space (empty when deletes free it)
    recoverability: str = ""

    def recoverability_note(self) -> str | None:
        """The line a sweep prints when its deletes may not free the space (lakeFS#6807):
        versioning or soft delete keeps what it deleted, or the store would not say; None when
        the deletes free it."""
        if self.recoverable is True:
            return f"note: deleted objects stay recoverable and still cost storage: {self.recoverability}"
        if self.recoverable is None and self.recoverability:
            return f"note: {self.recoverability}; if versioning or soft delete is on, deleted objects still cost storage"
        return None


def new_sweep_id() -> str:
    """A sortable, unique id: UTC start second plus a random suffix."""
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"


#: the key of :class:`OutcomeCounts` in ``sweep/summary.json``
OUTCOME_COUNTS = "outcome_counts"
#: failure reasons kept by name; the rest are summed (a reason may carry a per-object detail)
MAX_FAILURE_REASONS = 30


@dataclass
class OutcomeCounts:
    """Objects per final status and failures per reason, over the merged outcomes that
    ``sweep/outcomes.csv`` lists: a few dozen numbers the sweep writes into its summary so
    that redrawing ``report.html`` never re-reads the outcomes. Beyond
    :data:`MAX_FAILURE_REASONS` reasons, the rest are one sum (``other``, over
    ``other_reasons`` reasons)."""

    by_status: Counter = field(default_factory=Counter)
    failures_by_reason: Counter = field(default_factory=Counter)
    other_reasons: int = 0
    other: int = 0

    def add(self, status: str, reason: str | None, count: int = 1) -> None:
        self.by_status[status or "?"] += count
        if status != "deleted":
            self.failures_by_reason[reason or "(no reason recorded)"] += count

    def to_json(self) -> dict[str, Any]:
        shown = self.failures_by_reason.most_common(MAX_FAILURE_REASONS)
        return {
            "by_status": dict(sorted(self.by_status.items())),
            "failures_by_reason": dict(shown),
            "failures_other_reasons": self.other_reasons + len(self.failures_by_reason) - len(shown),
            "failures_other": self.other + sum(self.failures_by_reason.values()) - sum(n for _, n in shown),
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> "OutcomeCounts":
        return cls(
            Counter(document.get("by_status") or {}),
            Counter(document.get("failures_by_reason") or {}),
            int(document.get("failures_other_reasons") or 0),
            int(document.get("failures_other") or 0),
        )
