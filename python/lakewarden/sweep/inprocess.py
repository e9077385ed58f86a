"""The in-process sweep: no JVM, for reports below the size where Spark pays.

Streams ``addresses.csv``, skips what an earlier sweep recorded deleted, deletes the rest
through the shared engine (:func:`lakewarden.sweep.engine.delete_rows`: the same checks,
batching, backend retries and outcome records as the distributed path), then merges every
sweep's outcomes into ``sweep/outcomes.csv`` sorted by address. Memory holds one key and one
winning record per marked address (about 0.57 KB each, measured), which
:data:`lakewarden.sweep.PROCESS_MAX_ADDRESSES` bounds.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Iterator, Mapping

from lakewarden.deleters.base import Deleter
from lakewarden.errors import error_line
from lakewarden.reports.directory import Report
from lakewarden.timestamps import utc_now
from lakewarden.sweep.engine import OutcomeLog, RowChecker, SweepFailed, delete_rows
from lakewarden.sweep.hooks import reached
from lakewarden.sweep.outcomes_file import load_outcomes, merge_into, write_outcomes_csv
from lakewarden.sweep.report_dir import address_rows
from lakewarden.sweep.result import OUTCOME_COUNTS, OutcomeCounts, SweepResult
from lakewarden.sweep.status import SweepStatus

log = logging.getLogger(__name__)

ENGINE = "process"


def sweep_in_process(
    report: Report,
    status: SweepStatus,
    *,
    lock_taken_over: dict[str, Any] | None,
    deleter_factory: Callable[..., Deleter],
    deleter_options: Mapping[str, Any],
    batch_size: int,
    threads: int | None,
) -> SweepResult:
    """Run the sweep in this process; the caller holds the report's lock."""
    clock = time.monotonic()
    sweep_id = status.sweep_id
    best = load_outcomes(report.outcomes_dir)
    keys: list[tuple[str, str]] = []
    previously = 0
    for address, _, physical in address_rows(report):
        key = (address, physical)
        keys.append(key)
        earlier = best.get(key)
        previously += earlier is not None and earlier.status == "deleted"
    num_todo = len(keys) - previously
    status.start(num_marked=len(keys), previously_deleted=previously, lock_taken_over=lock_taken_over)
    reached("started")
    log.info("sweep %s of %s: %d addresses to delete in-process, batches of %d", sweep_id, report.directory, num_todo, batch_size)

    def not_deleted(row: tuple[str, str, str]) -> bool:
        earlier = best.get((row[0], row[2]))
        return earlier is None or earlier.status != "deleted"

    # a second pass streams the rows to delete, so they are never all held at once
    todo = filter(not_deleted, address_rows(report))

    def landed(records: list[Any]) -> None:
        merge_into(best, records)
        deleted = sum(1 for record in records if record.status == "deleted")
        status.progress(deleted, len(records) - deleted)

    error: str | None = None
    planned = time.monotonic()
    if num_todo:
        try:
            with deleter_factory(report.storage_namespace, **dict(deleter_options)) as deleter:
                with OutcomeLog(report.outcomes_dir / f"{sweep_id}-process.jsonl", sweep_id) as sink:
                    delete_rows(
                        todo, deleter=deleter, checker=RowChecker(report.storage_namespace), log=sink,
                        batch_size=batch_size, threads=threads, on_recorded=landed,
                    )
        except Exception as exc:  # noqa: BLE001 - recorded in the summaries, then re-raised
            error = error_line(exc)
            log.error("sweep %s failed part-way: %s", sweep_id, error)
    deleting = time.monotonic() - planned
    status.flush()
    reached("merging")

    num_deleted = attempted = 0
    counts = OutcomeCounts()

    def outcome_rows() -> Iterator[tuple[str, str, str, str]]:
        """One row per marked address, in order, counted as written (never all held at once)."""
        nonlocal num_deleted, attempted
        for address, physical in keys:
            record = best.get((address, physical))
            if record is None:
                counts.add("failed", "not attempted")
                yield (address, physical, "failed", "not attempted")
                continue
            num_deleted += record.status == "deleted"
            attempted += record.sweep_id == sweep_id
            counts.add(record.status, record.reason)
            yield (address, physical, record.status, record.reason)

    keys.sort()
    write_outcomes_csv(report.outcomes_csv, outcome_rows())
    num_failed = len(keys) - num_deleted
    this_run = max(num_deleted - previously, 0)
    result = SweepResult(
        report_dir=str(report.directory),
        run_id=report.summary.get("run_id"),
        sweep_id=sweep_id,
        storage_namespace=report.storage_namespace,
        num_marked=len(keys),
        num_deleted=num_deleted,
        num_failed=num_failed,
        num_attempted=attempted,
        num_previously_deleted=previously,
        success=error is None and num_failed == 0,
        started_at=status.started_at,
        finished_at=utc_now(),
        seconds=round(time.monotonic() - clock, 3),
        delete_seconds=round(deleting, 3),
        deletes_per_second=round(this_run / deleting, 1) if deleting > 0 else 0.0,
        outcomes_csv=str(report.outcomes_csv),
        engine=ENGINE,
        error=error,
    )
    status.finish(result, {"num_to_delete": num_todo, OUTCOME_COUNTS: counts.to_json()})
    if error is not None:
        raise SweepFailed(
            f"sweep of {report.directory} failed part-way ({error}); {num_deleted} deleted so far are recorded; "
            "run the sweep again to finish"
        )
    return result
