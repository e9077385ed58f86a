"""Keeps the report's ``summary.json`` (and ``sweep/summary.json``) true while a sweep runs.

docs/contract.md §4: from a sweep's start until it finishes the summary says ``status:
sweeping``, ``success: false``, with the counts recorded so far; a killed sweep leaves it so.
Counts only ever come from outcomes already fsynced to ``sweep/outcomes/`` (the callers count a
batch after recording it), so the summary never claims more than the record holds. Writes go
through the project's one atomic JSON writer (:func:`lakewarden.reports.directory.write_json_atomic`):
a reader sees the old or the new summary, never half of one.
"""

from __future__ import annotations

import threading
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Callable

from lakewarden.reports.directory import Report, SUMMARY, write_json_atomic
from lakewarden.sweep.report_dir import read_json

if TYPE_CHECKING:  # pragma: no cover
    from lakewarden.sweep.result import SweepResult

SWEEPING = "sweeping"
SWEPT = "swept"
SWEEP_FAILED = "sweep_failed"


class SweepStatus:
    """The summaries of one sweep: ``start``, ``progress`` as batches land, ``finish``."""

    def __init__(self, report: Report, *, sweep_id: str, started_at: str, engine: str):
        self.report = report
        self.sweep_id = sweep_id
        self.started_at = started_at
        self.engine = engine
        # the summary as it is on disk now (a killed sweep may have rewritten it since load)
        self.summary: dict[str, Any] = read_json(report.summary_path) or dict(report.summary)
        self.num_marked: int | None = None
        self.previously_deleted = 0
        self.deleted = 0
        self.failed = 0
        self._lock = threading.Lock()
        #: fields this sweep adds to both summaries (e.g. the store's recoverability)
        self.extra: dict[str, Any] = {}

    def start(self, *, num_marked: int | None, previously_deleted: int, lock_taken_over: dict[str, Any] | None) -> None:
        """Say a sweep started: before the first delete, after the lock is held."""
        before = self.summary
        self.num_marked = num_marked
        self.previously_deleted = previously_deleted
        resumed = before.get("sweep_id") if before.get("status") in (SWEEPING, SWEEP_FAILED) else None
        fields: dict[str, Any] = {
            "status": SWEEPING,
            "success": False,
            "error": None,
            "sweep_id": self.sweep_id,
            "sweep_started_at": self.started_at,
            "sweep_engine": self.engine,
            "sweep_count": int(before.get("sweep_count") or 0) + 1,
            "resumed_from": resumed,
            "num_deleted": previously_deleted,
            "num_failed": 0,
        }
        if "marked_finished_at" not in before:  # what the job said before any sweep
            fields["marked_status"] = before.get("status")
            fields["marked_finished_at"] = before.get("finished_at")
        fields["finished_at"] = None  # the run is not finished while its sweep runs
        if lock_taken_over:
            fields["lock_taken_over"] = {**lock_taken_over, "by_sweep_id": self.sweep_id}
        fields.update(self.extra)
        self.summary.update(fields)
        self._write_sweep_summary(
            {
                "sweep_id": self.sweep_id,
                "status": SWEEPING,
                "success": False,
                "started_at": self.started_at,
                "engine": self.engine,
                "report_dir": str(self.report.directory),
                "run_id": self.summary.get("run_id"),
                "storage_namespace": self.report.storage_namespace,
                "num_marked": num_marked,
                "num_previously_deleted": previously_deleted,
                "resumed_from": resumed,
                "lock_taken_over": fields.get("lock_taken_over"),
                **self.extra,
            }
        )
        self._write_report_summary()
        self._refresh_page()

    #: called with the number of addresses a recorded batch settled (the progress bar)
    on_progress: Callable[[int], None] | None = None

    def progress(self, deleted: int, failed: int) -> None:
        """Add what a recorded batch did and rewrite the summary (a batch is up to 1,000
        addresses, so this is one small atomic write per thousand deletes)."""
        with self._lock:
            self.deleted += deleted
            self.failed += failed
            self._write_report_summary()
        if self.on_progress is not None:
            self.on_progress(deleted + failed)

    def set_counts(self, deleted: int, failed: int) -> None:
        """Replace this sweep's counts (the distributed path polls totals); rewrite if changed."""
        if self.on_progress is not None and deleted + failed > self.deleted + self.failed:
            self.on_progress(deleted + failed - self.deleted - self.failed)
        with self._lock:
            if (deleted, failed) != (self.deleted, self.failed):
                self.deleted, self.failed = deleted, failed
                self._write_report_summary()

    def flush(self) -> None:
        with self._lock:
            self._write_report_summary()

    def finish(self, result: "SweepResult", extra: dict[str, Any] | None = None) -> None:
        """The last word: ``swept`` or ``sweep_failed`` with the merged counts."""
        status = SWEPT if result.success else SWEEP_FAILED
        document = {**asdict(result), "status": status, "engine": self.engine, **self.extra, **(extra or {})}
        document["lock_taken_over"] = self.summary.get("lock_taken_over")
        document["resumed_from"] = self.summary.get("resumed_from")
        self._write_sweep_summary(document)
        with self._lock:
            self.summary.update(
                status=status,
                success=result.success,
                num_deleted=result.num_deleted,
                num_failed=result.num_failed,
                finished_at=result.finished_at,
                swept_at=result.finished_at,
                error=f"sweep: {result.error}" if result.error else (
                    None if result.success else f"sweep: {result.num_failed} addresses not deleted (see {result.outcomes_csv})"
                ),
            )
            write_json_atomic(self.report.summary_path, self.summary)
        self._refresh_page()

    def _refresh_page(self) -> None:
        """report.html says what summary.json says (at the start and the end of a sweep; not per
        batch: drawing the page costs more than a batch). Never fails the sweep."""
        if self.report.page_path.exists():
            from lakewarden.reports.page import write_report_html

            write_report_html(self.report.directory)

    def _write_report_summary(self) -> None:
        self.summary["num_deleted"] = self.previously_deleted + self.deleted
        self.summary["num_failed"] = self.failed
        write_json_atomic(self.report.summary_path, self.summary)

    def _write_sweep_summary(self, document: dict[str, Any]) -> None:
        write_json_atomic(self.report.sweep_dir / SUMMARY, document)
