"""A dry run followed by a complete sweep counts as a deleting run.

Lifecycle's incremental chain starts from "the last run that was not a dry run and whose sweep
deleted every marked address" (``models/lifecycle/lifecycle_runs.sql``). The recommended
workflow — dry run, review, ``lakewarden sweep --report DIR`` — deletes exactly what that dry
run marked, so once its sweep has deleted every marked address the dry run is as good a base as
a run that swept itself. The sweep runs without Spark, so it cannot write the ledger table; it
appends one line per successful sweep to ``STATE/sweeps.jsonl`` instead (append only), and the
next lifecycle run on that state dir folds those lines into its ledger as ``swept`` events
(:func:`import_lifecycle_sweeps`) before it reads the ledger.

Uncommitted GC needs nothing from here: its run history counts every successful mark, dry runs
included (what a dry run observed stays valid whether or not it was swept).
"""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from lakewarden.sweep.result import SweepResult

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

SWEEPS_FILE = "sweeps.jsonl"
LIFECYCLE_JOB = "lifecycle"


def sweeps_file(state: Path) -> Path:
    return Path(state) / SWEEPS_FILE


def record_sweep(state: Path, result: SweepResult) -> bool:
    """Append a sweep that deleted every marked address to ``STATE/sweeps.jsonl``; True if so."""
    if not result.success:
        return False
    summary = json.loads((Path(result.report_dir) / "summary.json").read_text(encoding="utf-8"))
    entry = {
        "run_id": result.run_id,
        "job": summary.get("job"),
        "dry_run": summary.get("dry_run"),
        "repository_id": summary.get("repository_id"),
        "storage_namespace": result.storage_namespace,
        "report_dir": result.report_dir,
        "sweep_id": result.sweep_id,
        "num_marked": result.num_marked,
        "num_deleted": result.num_deleted,
        "num_failed": result.num_failed,
        "finished_at": result.finished_at,
    }
    path = sweeps_file(state)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(entry, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)  # one write of one line with O_APPEND: appends never interleave
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


def read_sweeps(state: Path) -> list[dict[str, Any]]:
    """Every recorded complete sweep (torn or foreign lines skipped)."""
    path = sweeps_file(state)
    if not path.is_file():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("run_id"):
            entries.append(value)
    return entries


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def import_lifecycle_sweeps(spark: "SparkSession", state: Path, events: str, columns: Sequence[str]) -> list[str]:
    """Fold complete sweeps of lifecycle runs into the ledger as ``swept`` events; the run ids.

    A run gets its ``swept`` event once (the ledger is append only; a run that already has one is
    left alone), and only if the ledger knows it as ``marked`` (the sweep deleted what that mark
    listed). Rows read are the events of the swept runs only: a few per sweep.
    """
    sweeps = {entry["run_id"]: entry for entry in read_sweeps(state) if entry.get("job") == LIFECYCLE_JOB}
    if not sweeps:
        return []
    from pyspark.sql import functions as F

    from lakewarden.state_tables import append_rows, qualified

    recorded = spark.table(qualified(events)).where(F.col("run_id").isin(sorted(sweeps))).collect()
    by_run: dict[str, list[Any]] = {}
    for event in recorded:
        by_run.setdefault(event["run_id"], []).append(event)
    rows = []
    for run_id, entry in sorted(sweeps.items()):
        statuses = {event["status"]: event for event in by_run.get(run_id, [])}
        marked = statuses.get("marked")
        if "swept" in statuses or marked is None:
            continue
        values = marked.asDict()
        values.update(
            status="swept",
            recorded_at=max(_parse_time(entry["finished_at"]), _aware(values["recorded_at"])),
            num_marked=entry.get("num_marked"),
            num_deleted=entry.get("num_deleted"),
            num_failed=entry.get("num_failed"),
            error=None,
        )
        rows.append(tuple(values[name] for name in columns))
    if rows:
        append_rows(spark, state, events, rows)
        log.info("run ledger: %d lifecycle run(s) swept by 'lakewarden sweep' recorded as deleting runs", len(rows))
    return [row[list(columns).index("run_id")] for row in rows]


def _aware(moment: datetime) -> datetime:
    # Spark hands session-zone (UTC) timestamps back as naive datetimes
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
