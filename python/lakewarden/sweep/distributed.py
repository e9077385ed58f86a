"""The distributed sweep: Spark tasks delete, for reports above the size where Spark pays.

* The address list is never collected: Spark reads the CSV, anti-joins addresses an earlier
  sweep already recorded ``deleted``, and hands partitions to tasks.
* Each task runs the shared engine (:func:`lakewarden.sweep.engine.delete_rows`: the same
  re-check of every row, batching, backend retries and records as the in-process path) and
  appends its outcomes to its own JSON Lines file under ``sweep/outcomes/``.
* The driver counts what tasks have recorded (complete lines only) and keeps the report's
  summary current; at the end the outcomes of every sweep of this report are merged (``deleted``
  wins, else the latest record), written sorted to ``sweep/outcomes.csv`` and counted.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

from lakewarden.deleters.base import Deleter, deleter_for
from lakewarden.errors import BadInput, LakewardenError
from lakewarden.reports.directory import Report
from lakewarden.timestamps import utc_now
from lakewarden.sweep.engine import (
    OUTCOME_SCHEMA,
    OutcomeLog,
    RowChecker,
    SweepFailed,
    delete_rows,
    parse_outcome_line,
)
from lakewarden.sweep.hooks import reached
from lakewarden.sweep.report_dir import OUTCOME_COLUMNS, REQUIRED_COLUMNS
from lakewarden.sweep.result import MAX_FAILURE_REASONS, OUTCOME_COUNTS, OutcomeCounts, SweepResult
from lakewarden.sweep.status import SweepStatus

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

ENGINE = "spark"
#: CSV dialect for reading reports and writing outcomes: RFC 4180 quoting (quotes doubled).
CSV_OPTIONS = {"header": "true", "quote": '"', "escape": '"', "multiLine": "true", "encoding": "UTF-8"}
ROWS_PER_PARTITION = 20_000


@dataclass(frozen=True)
class SweepTask:
    """What runs in each Spark task: the shared engine over one partition. Picklable by design."""

    storage_namespace: str
    outcomes_dir: str
    sweep_id: str
    batch_size: int
    deleter_options: Mapping[str, Any]
    deleter_factory: Callable[..., Deleter] = deleter_for
    threads: int | None = None

    def __call__(self, partition: int, rows: Iterable[Any]) -> Iterator[tuple[int, int, int]]:
        from pyspark import TaskContext

        context = TaskContext.get()
        attempt = context.attemptNumber() if context is not None else 0
        name = f"{self.sweep_id}-p{partition:05d}-a{attempt}.jsonl"
        with self.deleter_factory(self.storage_namespace, **dict(self.deleter_options)) as deleter:
            with OutcomeLog(Path(self.outcomes_dir) / name, self.sweep_id) as sink:
                deleted, failed = delete_rows(
                    rows, deleter=deleter, checker=RowChecker(self.storage_namespace), log=sink,
                    batch_size=self.batch_size, threads=self.threads,
                )
        yield (partition, deleted, failed)


class _Progress(threading.Thread):
    """Counts what this sweep's tasks have recorded (whole lines only), feeds the summary, logs."""

    def __init__(self, outcomes_dir: Path, status: SweepStatus, total: int, interval: float):
        super().__init__(name="lakewarden-sweep-progress", daemon=True)
        self.outcomes_dir, self.status, self.total, self.interval = outcomes_dir, status, total, interval
        self._stop_event = threading.Event()
        self._offsets: dict[str, int] = {}
        self.deleted = self.failed = 0
        self.started = time.monotonic()
        self._last_log = self.started

    def poll(self) -> tuple[int, int]:
        for path in self.outcomes_dir.glob(f"{self.status.sweep_id}-*.jsonl"):
            offset = self._offsets.get(path.name, 0)
            try:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    chunk = handle.read()
            except OSError:
                continue
            complete = chunk[: chunk.rfind(b"\n") + 1]
            for line in complete.splitlines():
                record = parse_outcome_line(line)
                if record is not None:
                    self.deleted += record.status == "deleted"
                    self.failed += record.status != "deleted"
            self._offsets[path.name] = offset + len(complete)
        self.status.set_counts(self.deleted, self.failed)
        return self.deleted, self.failed

    def run(self) -> None:
        while not self._stop_event.wait(min(self.interval, 1.0)):
            deleted, failed = self.poll()
            now = time.monotonic()
            if now - self._last_log < self.interval:
                continue
            self._last_log = now
            done = deleted + failed
            rate = done / max(now - self.started, 1e-9)
            eta = (self.total - done) / rate if rate > 0 else float("inf")
            log.info(
                "sweep %s: %d/%d addresses (%.1f%%), %.0f/s, ETA %s",
                self.status.sweep_id, done, self.total, 100.0 * done / max(self.total, 1), rate,
                f"{eta:.0f}s" if math.isfinite(eta) else "unknown",
            )

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join()
        self.poll()  # what the tasks recorded last


def ensure_python_workers(spark: "SparkSession") -> None:
    """Run this interpreter's Python in local Spark workers (they must import lakewarden).

    Without ``PYSPARK_PYTHON``/``spark.pyspark.python`` Spark starts ``python3`` from PATH, which
    is not the virtualenv lakewarden is installed in unless it is activated. Only for ``local``
    masters: on a cluster the executors' Python is the cluster's business.
    """
    import sys

    context = spark.sparkContext
    if os.environ.get("PYSPARK_PYTHON") or context.getConf().get("spark.pyspark.python"):
        return
    if str(context.master).startswith("local") and context.pythonExec != sys.executable:
        context.pythonExec = sys.executable


def read_addresses(spark: "SparkSession", report: Report) -> "DataFrame":
    """The report's marked addresses as a DataFrame (all columns strings), columns validated."""
    df = spark.read.options(**CSV_OPTIONS).option("mode", "FAILFAST").csv(str(report.addresses_path))
    missing = [column for column in REQUIRED_COLUMNS if column not in df.columns]
    if missing:
        raise BadInput(f"missing column(s) {', '.join(missing)} (header: {', '.join(df.columns)})", source=str(report.addresses_path), field=missing[0])
    from pyspark.sql import functions as F

    # Empty CSV fields read as null; as "" they still join with their recorded outcomes.
    return df.select(*(F.coalesce(F.col(c), F.lit("")).alias(c) for c in REQUIRED_COLUMNS))


def read_outcomes(spark: "SparkSession", outcomes_dir: Path) -> "DataFrame | None":
    """Every recorded outcome of every sweep of the report; torn lines are dropped."""
    if not any(outcomes_dir.glob("*.jsonl")):
        return None
    return spark.read.schema(OUTCOME_SCHEMA).option("mode", "DROPMALFORMED").json(str(outcomes_dir / "*.jsonl"))


def sweep_distributed(
    spark: "SparkSession",
    report: Report,
    status: SweepStatus,
    *,
    lock_taken_over: dict[str, Any] | None,
    deleter_factory: Callable[..., Deleter],
    deleter_options: Mapping[str, Any],
    batch_size: int,
    threads: int | None,
    parallelism: int | None,
    progress_interval: float,
) -> SweepResult:
    """Run the sweep in Spark tasks; the caller holds the report's lock."""
    from pyspark.sql import functions as F

    clock = time.monotonic()
    sweep_id = status.sweep_id
    ensure_python_workers(spark)
    report.outcomes_dir.mkdir(parents=True, exist_ok=True)
    addresses = read_addresses(spark, report)
    previous = read_outcomes(spark, report.outcomes_dir)
    todo = addresses
    if previous is not None:
        done = previous.where(F.col("status") == "deleted").select("address", "physical_address").distinct()
        todo = addresses.join(done, ["address", "physical_address"], "left_anti")
    num_marked = addresses.count()
    num_todo = todo.count()
    status.start(num_marked=num_marked, previously_deleted=num_marked - num_todo, lock_taken_over=lock_taken_over)
    reached("started")
    partitions = parallelism or max(spark.sparkContext.defaultParallelism, math.ceil(num_todo / ROWS_PER_PARTITION))
    partitions = max(1, min(partitions, max(1, math.ceil(num_todo / batch_size))))
    log.info("sweep %s of %s: %d addresses to delete in %d Spark task(s), batches of %d", sweep_id, report.directory, num_todo, partitions, batch_size)

    task = SweepTask(
        storage_namespace=report.storage_namespace,
        outcomes_dir=str(report.outcomes_dir),
        sweep_id=sweep_id,
        batch_size=batch_size,
        deleter_options=dict(deleter_options),
        deleter_factory=deleter_factory,
        threads=threads,
    )
    progress = _Progress(report.outcomes_dir, status, num_todo, progress_interval)
    error: str | None = None
    planned = time.monotonic()
    if num_todo:
        progress.start()
        try:
            spark.sparkContext.setJobDescription(f"lakewarden sweep {sweep_id}")
            todo.select(*REQUIRED_COLUMNS).repartition(partitions).rdd.mapPartitionsWithIndex(task).collect()
        except Exception as exc:  # noqa: BLE001 - py4j wraps task errors; recorded, then re-raised
            error = _short_error(exc)
            log.error("sweep %s failed part-way: %s", sweep_id, error)
        finally:
            progress.stop()
            spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
    deleting = time.monotonic() - planned
    status.flush()
    reached("merging")
    log.info("sweep %s: planning took %.1fs, deleting %.1fs", sweep_id, planned - clock, deleting)
    result, counts = _finalize(spark, report, addresses, sweep_id, status.started_at, clock, error, deleting)
    status.finish(result, {"num_to_delete": num_todo, OUTCOME_COUNTS: counts.to_json()})
    if error is not None:
        raise SweepFailed(
            f"sweep of {report.directory} failed part-way ({error}); {result.num_deleted} deleted so far are recorded; "
            "run the sweep again to finish"
        )
    return result


def _short_error(exc: BaseException) -> str:
    text = str(exc)
    for marker in ("SweepFailed: ", "Exception: ", "Error: "):
        if marker in text:
            tail = text.split(marker)[-1]
            return tail.strip().splitlines()[0][:500]
    return (text.strip().splitlines() or [type(exc).__name__])[0][:500]


def _finalize(
    spark: "SparkSession",
    report: Report,
    addresses: "DataFrame",
    sweep_id: str,
    started_at: str,
    clock: float,
    error: str | None,
    delete_seconds: float,
) -> tuple[SweepResult, OutcomeCounts]:
    """Merge every sweep's outcomes, write outcomes.csv; the counts (totals, and per status
    and failure reason for the page)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    outcomes = read_outcomes(spark, report.outcomes_dir)
    keyed = addresses.select("address", "physical_address")
    if outcomes is None:
        final = keyed.select(
            "address",
            "physical_address",
            F.lit("failed").alias("status"),
            F.lit("not attempted").alias("reason"),
            F.lit(None).cast("string").alias("sweep_id"),
        )
    else:
        # per address: a 'deleted' record wins, else the latest (engine.Outcome.beats)
        best = outcomes.groupBy("address", "physical_address").agg(
            F.max(F.struct((F.col("status") == "deleted").alias("won"), "ts", "status", "reason", "sweep_id")).alias("best")
        )
        final = keyed.join(best, ["address", "physical_address"], "left").select(
            "address",
            "physical_address",
            F.coalesce(F.col("best.status"), F.lit("failed")).alias("status"),
            F.coalesce(F.col("best.reason"), F.lit("not attempted")).alias("reason"),
            F.col("best.sweep_id").alias("sweep_id"),
        )
    final = final.persist(StorageLevel.MEMORY_AND_DISK)
    # one pass for every count: addresses tried by this sweep are exactly those whose winning
    # record is this sweep's (what earlier sweeps deleted was not tried again)
    is_deleted = F.col("status") == "deleted"
    this_sweep = F.coalesce(F.col("sweep_id") == sweep_id, F.lit(False))
    totals = final.agg(
        F.count(F.lit(1)).alias("marked"),
        F.sum(is_deleted.cast("long")).alias("deleted"),
        F.sum(this_sweep.cast("long")).alias("attempted"),
        F.sum((is_deleted & ~this_sweep).cast("long")).alias("previously"),
    ).first()
    assert totals is not None  # an aggregate without grouping has one row
    num_deleted = int(totals["deleted"] or 0)
    num_failed = int(totals["marked"] or 0) - num_deleted
    attempted = int(totals["attempted"] or 0)
    previously = int(totals["previously"] or 0)
    counts = OutcomeCounts()
    for row in final.groupBy("status").count().collect():
        counts.by_status[row["status"]] += int(row["count"])
    reasons = final.where(~is_deleted).groupBy("reason").count()
    for row in reasons.orderBy(F.col("count").desc(), "reason").limit(MAX_FAILURE_REASONS).collect():
        counts.failures_by_reason[row["reason"] or "(no reason recorded)"] += int(row["count"])
    if len(counts.failures_by_reason) == MAX_FAILURE_REASONS:  # perhaps more: the rest as one sum
        counts.other_reasons = reasons.count() - MAX_FAILURE_REASONS
        counts.other = num_failed - sum(counts.failures_by_reason.values())
    _write_single_csv(final.select(*OUTCOME_COLUMNS), report.outcomes_csv)
    final.unpersist()
    this_run_deleted = max(num_deleted - previously, 0)
    result = SweepResult(
        report_dir=str(report.directory),
        run_id=report.summary.get("run_id"),
        sweep_id=sweep_id,
        storage_namespace=report.storage_namespace,
        num_marked=num_deleted + num_failed,
        num_deleted=num_deleted,
        num_failed=num_failed,
        num_attempted=attempted,
        num_previously_deleted=previously,
        success=error is None and num_failed == 0,
        started_at=started_at,
        finished_at=utc_now(),
        seconds=round(time.monotonic() - clock, 3),
        delete_seconds=round(delete_seconds, 3),
        deletes_per_second=round(this_run_deleted / delete_seconds, 1) if delete_seconds > 0 else 0.0,
        outcomes_csv=str(report.outcomes_csv),
        engine=ENGINE,
        error=error,
    )
    return result, counts


def _write_single_csv(df: "DataFrame", target: Path) -> None:
    """Write ``df`` sorted by address as one CSV file at ``target`` (replaced atomically)."""
    staging = target.with_name(f".{target.name}.{uuid.uuid4().hex}")
    try:
        (
            df.repartition(1)
            .sortWithinPartitions("address", "physical_address")
            .write.options(**{k: v for k, v in CSV_OPTIONS.items() if k != "multiLine"})
            .option("emptyValue", "")
            .mode("overwrite")
            .csv(str(staging))
        )
        parts = sorted(staging.glob("part-*"))
        if len(parts) != 1:
            raise LakewardenError(f"expected one CSV part in {staging}, found {len(parts)}")
        os.replace(parts[0], target)
        if target.stat().st_size == 0:  # Spark writes no header for an empty frame
            target.write_text(",".join(OUTCOME_COLUMNS) + "\n", encoding="utf-8")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
