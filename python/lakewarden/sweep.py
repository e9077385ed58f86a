"""The shared sweep: delete what a job's report marked, in Spark tasks, resumably.

Input is a report directory (CONTRACT section 4): ``summary.json`` (with ``storage_namespace``)
and ``addresses.csv`` (``address``, ``address_type``, ``physical_address``, ...).

How it stays safe and resumable at scale:

* The address list is never collected: Spark reads the CSV, anti-joins addresses an earlier
  sweep already recorded ``deleted``, and hands partitions to tasks.
* Each task re-checks every row with :mod:`lakewarden.safety` (and that ``physical_address`` is
  what ``address`` resolves to), so a tampered or buggy report cannot delete outside the
  namespace; unsafe rows are recorded ``failed`` with the reason and never reach a deleter.
* Each task deletes in batches (several at once from a thread pool when the backend allows it)
  and appends every batch's outcomes to its own JSON Lines file under
  ``sweep/outcomes/``, flushed and fsynced before the next batch is recorded. A sweep killed at
  any moment loses at most the batches in flight; since deletes are idempotent (absent counts as
  deleted), a re-run skips what is recorded and finishes the rest. A torn last line is dropped.
* At the end the outcomes of every sweep of this report are merged (``deleted`` wins, else the
  latest failure), written sorted to ``sweep/outcomes.csv``, counted into
  ``sweep/summary.json``, and folded into the report's ``summary.json``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import threading
import time
import uuid
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

from lakewarden.deleters.base import DeleteOutcome, Deleter, clean_options, deleter_for
from lakewarden.errors import BadInput, LakewardenError
from lakewarden.report import write_json_atomic
from lakewarden.safety import parse_uri, resolve_physical, unsafe_reason

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

ADDRESSES_FILE = "addresses.csv"
SUMMARY_FILE = "summary.json"
SWEEP_DIR = "sweep"
OUTCOMES_DIR = "outcomes"
OUTCOMES_CSV = "outcomes.csv"
REQUIRED_COLUMNS = ("address", "address_type", "physical_address")
#: CSV dialect for reading reports and writing outcomes: RFC 4180 quoting (quotes doubled).
CSV_OPTIONS = {"header": "true", "quote": '"', "escape": '"', "multiLine": "true", "encoding": "UTF-8"}
OUTCOME_SCHEMA = "address string, physical_address string, status string, reason string, ts long, sweep_id string"
ROWS_PER_PARTITION = 20_000


class SweepFailed(LakewardenError):
    """The sweep stopped part-way; what was done is recorded and a re-run finishes it."""


@dataclass(frozen=True)
class SweepResult:
    """Outcome of a sweep, counted over every sweep of the report (re-runs included).

    ``seconds`` is the whole sweep; ``delete_seconds`` the deleting job alone (Spark tasks
    reading, checking, deleting, recording), which ``deletes_per_second`` is measured over.
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
    error: str | None = None


@dataclass(frozen=True)
class Report:
    """A validated report directory."""

    path: Path
    summary: dict[str, Any]
    storage_namespace: str

    @property
    def addresses(self) -> Path:
        return self.path / ADDRESSES_FILE

    @property
    def sweep_dir(self) -> Path:
        return self.path / SWEEP_DIR

    @property
    def outcomes_dir(self) -> Path:
        return self.sweep_dir / OUTCOMES_DIR


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def report_path(report_dir: str | os.PathLike[str]) -> Path:
    """A local report directory from a path or ``file:`` URI (object-store reports: not yet)."""
    raw = os.fspath(report_dir)
    if "://" in raw or raw.startswith("file:"):
        try:
            parsed = parse_uri(raw)
        except ValueError as exc:
            raise BadInput(str(exc), source=raw, field="--report") from exc
        if parsed.scheme != "file":
            raise BadInput("only local report directories can be swept (copy it locally first)", source=raw, field="--report")
        raw = parsed.path
    return Path(raw).expanduser().resolve()


def load_report(report_dir: str | os.PathLike[str], *, allow_swept: bool = False) -> Report:
    """Validate a report directory before any side effect; :class:`BadInput` says what is wrong."""
    path = report_path(report_dir)
    if not path.is_dir():
        raise BadInput("report directory does not exist", source=str(path))
    summary_file = path / SUMMARY_FILE
    if not summary_file.is_file():
        raise BadInput("missing (not a report directory?)", source=str(summary_file))
    try:
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"unreadable: {exc}", source=str(summary_file)) from exc
    if not isinstance(summary, dict):
        raise BadInput("not a JSON object", source=str(summary_file))
    namespace = summary.get("storage_namespace")
    if not isinstance(namespace, str) or not namespace:
        raise BadInput("missing", source=str(summary_file), field="storage_namespace")
    try:
        parse_uri(namespace)
    except ValueError as exc:
        raise BadInput(str(exc), source=str(summary_file), field="storage_namespace") from exc
    addresses = path / ADDRESSES_FILE
    if not addresses.exists():
        raise BadInput("missing: the report has no marked addresses file", source=str(addresses))
    report = Report(path, summary, namespace)
    previous = _read_json(report.sweep_dir / SUMMARY_FILE)
    if not allow_swept and summary.get("dry_run") is False and previous and previous.get("success"):
        raise BadInput(
            f"already swept at {previous.get('finished_at')} (not a dry run; nothing left to delete)",
            source=str(summary_file),
            field="dry_run",
        )
    return report


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


# -- the task ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepTask:
    """What runs in each Spark task: check, delete in batches, record. Picklable by design."""

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
        deleted = failed = 0
        deleter = self.deleter_factory(self.storage_namespace, **dict(self.deleter_options))
        size = max(1, min(self.batch_size, deleter.max_batch))
        threads = max(1, self.threads or deleter.max_concurrency)
        with open(Path(self.outcomes_dir) / name, "a", encoding="utf-8") as sink, deleter:
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lakewarden-sweep") as pool:
                in_flight: deque[Future[list[tuple[str, str, DeleteOutcome]]]] = deque()
                try:
                    for batch in _batches(rows, size):
                        in_flight.append(pool.submit(self._run_batch, deleter, batch))
                        while len(in_flight) > threads:
                            d, f = _record(sink, in_flight.popleft().result(), self.sweep_id)
                            deleted, failed = deleted + d, failed + f
                    while in_flight:
                        d, f = _record(sink, in_flight.popleft().result(), self.sweep_id)
                        deleted, failed = deleted + d, failed + f
                except BaseException:
                    _drain(sink, in_flight, self.sweep_id)
                    raise
        yield (partition, deleted, failed)

    def _run_batch(self, deleter: Deleter, rows: Sequence[tuple[Any, Any, Any]]) -> list[tuple[str, str, DeleteOutcome]]:
        """Check every row, delete the safe ones; one ``(address, physical, outcome)`` per row."""
        checked: list[tuple[str, str, DeleteOutcome | None]] = []
        to_delete: list[str] = []
        for address, address_type, physical in rows:
            reason = self._row_problem(address, address_type, physical)
            if reason is None:
                to_delete.append(physical)
                checked.append((address, physical, None))
            else:
                checked.append((address or "", physical or "", DeleteOutcome.failed(physical or "", reason)))
        results: dict[str, DeleteOutcome] = {}
        if to_delete:
            try:
                for outcome in deleter.delete_batch(to_delete):
                    results[outcome.uri] = outcome
            except Exception as exc:  # a backend bug must not pass as success; record and stop
                raise SweepFailed(f"deleter raised on a batch of {len(to_delete)}: {exc}") from exc
        out: list[tuple[str, str, DeleteOutcome]] = []
        for address, physical, outcome in checked:
            if outcome is None:
                outcome = results.get(physical) or DeleteOutcome.failed(physical, "deleter returned no outcome")
            out.append((address, physical, outcome))
        return out

    def _row_problem(self, address: Any, address_type: Any, physical: Any) -> str | None:
        if not isinstance(physical, str) or not physical:
            return "unsafe: missing physical_address"
        if not isinstance(address, str) or not address:
            return "unsafe: missing address"
        reason = unsafe_reason(physical, self.storage_namespace)
        if reason is not None:
            return f"unsafe: {reason}"
        try:
            expected = resolve_physical(address, str(address_type or ""), self.storage_namespace)
            matches = _folded(expected) == _folded(physical)
        except ValueError as exc:
            return f"unsafe: {exc}"
        if not matches:
            return f"unsafe: physical_address is not what {address_type} address {address!r} resolves to ({expected!r})"
        return None


def _folded(uri: str) -> str:
    """``uri`` canonical with repeated slashes folded: the jobs' SQL normalises addresses so."""
    parsed = parse_uri(uri)
    return f"{parsed.scheme}://{parsed.authority}{re.sub('/+', '/', parsed.path)}"


def _batches(rows: Iterable[Any], size: int) -> Iterator[list[tuple[Any, Any, Any]]]:
    batch: list[tuple[Any, Any, Any]] = []
    for row in rows:
        batch.append((row[0], row[1], row[2]))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _drain(sink: Any, in_flight: "deque[Future[list[tuple[str, str, DeleteOutcome]]]]", sweep_id: str) -> None:
    """After a failure, still record the batches that completed, so a re-run skips them."""
    while in_flight:
        future = in_flight.popleft()
        try:
            _record(sink, future.result(), sweep_id)
        except BaseException:  # noqa: BLE001 - the first failure is the one re-raised
            continue


def _record(sink: Any, results: list[tuple[str, str, DeleteOutcome]], sweep_id: str) -> tuple[int, int]:
    """Append one batch's outcomes durably; ``(deleted, failed)``."""
    ts = time.time_ns() // 1_000_000
    lines = []
    deleted = 0
    for address, physical, outcome in results:
        deleted += outcome.status == "deleted"
        lines.append(
            json.dumps(
                {
                    "address": address,
                    "physical_address": physical,
                    "status": outcome.status,
                    "reason": outcome.reason,
                    "ts": ts,
                    "sweep_id": sweep_id,
                }
            )
        )
    sink.write("\n".join(lines) + "\n")
    sink.flush()
    os.fsync(sink.fileno())
    return deleted, len(results) - deleted


# -- progress ---------------------------------------------------------------------------------


class _Progress(threading.Thread):
    """Logs how far the sweep is by counting recorded outcome lines (tasks write them as they go)."""

    def __init__(self, outcomes_dir: Path, sweep_id: str, total: int, interval: float):
        super().__init__(name="lakewarden-sweep-progress", daemon=True)
        self.outcomes_dir, self.sweep_id, self.total, self.interval = outcomes_dir, sweep_id, total, interval
        self._stop_event = threading.Event()
        self._offsets: dict[str, int] = {}
        self.done = 0
        self.started = time.monotonic()

    def poll(self) -> int:
        for path in self.outcomes_dir.glob(f"{self.sweep_id}-*.jsonl"):
            offset = self._offsets.get(path.name, 0)
            try:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    chunk = handle.read()
            except OSError:
                continue
            self.done += chunk.count(b"\n")
            self._offsets[path.name] = offset + len(chunk)
        return self.done

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            done = self.poll()
            elapsed = max(time.monotonic() - self.started, 1e-9)
            rate = done / elapsed
            eta = (self.total - done) / rate if rate > 0 else float("inf")
            log.info(
                "sweep %s: %d/%d addresses (%.1f%%), %.0f/s, ETA %s",
                self.sweep_id, done, self.total, 100.0 * done / max(self.total, 1), rate,
                f"{eta:.0f}s" if math.isfinite(eta) else "unknown",
            )

    def stop(self) -> None:
        self._stop_event.set()


# -- the driver -------------------------------------------------------------------------------


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
    df = spark.read.options(**CSV_OPTIONS).option("mode", "FAILFAST").csv(str(report.addresses))
    missing = [column for column in REQUIRED_COLUMNS if column not in df.columns]
    if missing:
        raise BadInput(f"missing column(s) {', '.join(missing)} (header: {', '.join(df.columns)})", source=str(report.addresses), field=missing[0])
    from pyspark.sql import functions as F

    # Empty CSV fields read as null; as "" they still join with their recorded outcomes.
    return df.select(*(F.coalesce(F.col(c), F.lit("")).alias(c) for c in REQUIRED_COLUMNS))


def read_outcomes(spark: "SparkSession", outcomes_dir: Path) -> "DataFrame | None":
    """Every recorded outcome of every sweep of the report; torn lines are dropped."""
    if not any(outcomes_dir.glob("*.jsonl")):
        return None
    return spark.read.schema(OUTCOME_SCHEMA).option("mode", "DROPMALFORMED").json(str(outcomes_dir / "*.jsonl"))


def sweep_report(
    spark: "SparkSession",
    report_dir: str | os.PathLike[str],
    *,
    deleter_options: Mapping[str, Any] | None = None,
    parallelism: int | None = None,
    batch_size: int = 1000,
    threads: int | None = None,
    deleter_factory: Callable[..., Deleter] = deleter_for,
    progress_interval: float = 10.0,
) -> SweepResult:
    """Delete what ``report_dir`` marked; record every address's outcome; return the counts.

    ``parallelism`` is the number of Spark tasks (default: one per ~20k addresses, at least the
    default parallelism); ``batch_size`` caps each delete call (the backend's ``max_batch`` caps
    it too); ``threads`` is batches in flight per task (default: the backend's
    ``max_concurrency``: 8 for S3, 1 locally). ``deleter_factory(namespace, **deleter_options)``
    builds the backend inside each task. Raises :class:`BadInput` for a bad report and
    :class:`SweepFailed` when tasks fail; either way nothing unrecorded is deleted, and after a
    failure the summaries say so and a re-run completes the sweep.
    """
    from pyspark.sql import functions as F

    report = load_report(report_dir)
    ensure_python_workers(spark)
    if batch_size < 1:
        raise BadInput("must be at least 1", field="batch_size")
    options = clean_options(deleter_options)
    deleter_factory(report.storage_namespace, **options).close()  # bad namespace/options: fail before Spark work
    started = _now()
    clock = time.monotonic()
    sweep_id = f"{started.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    report.outcomes_dir.mkdir(parents=True, exist_ok=True)

    addresses = read_addresses(spark, report)
    previous = read_outcomes(spark, report.outcomes_dir)
    todo = addresses
    if previous is not None:
        done = previous.where(F.col("status") == "deleted").select("address", "physical_address").distinct()
        todo = addresses.join(done, ["address", "physical_address"], "left_anti")
    num_todo = todo.count()
    partitions = parallelism or max(spark.sparkContext.defaultParallelism, math.ceil(num_todo / ROWS_PER_PARTITION))
    partitions = max(1, min(partitions, max(1, math.ceil(num_todo / batch_size))))
    log.info("sweep %s of %s: %d addresses to delete in %d task(s), batches of %d", sweep_id, report.path, num_todo, partitions, batch_size)

    task = SweepTask(
        storage_namespace=report.storage_namespace,
        outcomes_dir=str(report.outcomes_dir),
        sweep_id=sweep_id,
        batch_size=batch_size,
        deleter_options=options,
        deleter_factory=deleter_factory,
        threads=threads,
    )
    progress = _Progress(report.outcomes_dir, sweep_id, num_todo, progress_interval)
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
    log.info("sweep %s: planning took %.1fs, deleting %.1fs", sweep_id, planned - clock, deleting)
    result = _finalize(spark, report, addresses, sweep_id, started, clock, num_todo, error, deleting)
    if error is not None:
        raise SweepFailed(
            f"sweep of {report.path} failed part-way ({error}); {result.num_deleted} deleted so far are recorded; "
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
    started: datetime,
    clock: float,
    num_todo: int,
    error: str | None,
    delete_seconds: float,
) -> SweepResult:
    """Merge every sweep's outcomes, write outcomes.csv and both summaries."""
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
        # per address: a 'deleted' record wins, else the latest failure
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
    num_deleted = int(totals["deleted"] or 0)
    num_failed = int(totals["marked"] or 0) - num_deleted
    attempted = int(totals["attempted"] or 0)
    previously = int(totals["previously"] or 0)
    outcomes_csv = report.sweep_dir / OUTCOMES_CSV
    _write_single_csv(final.select("address", "physical_address", "status", "reason"), outcomes_csv)
    final.unpersist()

    finished = _now()
    seconds = time.monotonic() - clock
    this_run_deleted = max(num_deleted - previously, 0)
    result = SweepResult(
        report_dir=str(report.path),
        run_id=report.summary.get("run_id"),
        sweep_id=sweep_id,
        storage_namespace=report.storage_namespace,
        num_marked=num_deleted + num_failed,
        num_deleted=num_deleted,
        num_failed=num_failed,
        num_attempted=attempted,
        num_previously_deleted=previously,
        success=error is None and num_failed == 0,
        started_at=_iso(started),
        finished_at=_iso(finished),
        seconds=round(seconds, 3),
        delete_seconds=round(delete_seconds, 3),
        deletes_per_second=round(this_run_deleted / delete_seconds, 1) if delete_seconds > 0 else 0.0,
        outcomes_csv=str(outcomes_csv),
        error=error,
    )
    write_json_atomic(report.sweep_dir / SUMMARY_FILE, {**asdict(result), "num_to_delete": num_todo})
    summary = dict(report.summary)
    summary.update(
        num_deleted=num_deleted,
        num_failed=num_failed,
        success=result.success,
        finished_at=result.finished_at,
        swept_at=result.finished_at,
        sweep_id=sweep_id,
    )
    if "status" in summary:  # the jobs' own progress field: keep it truthful after the sweep
        summary["status"] = "swept" if result.success else ("sweep stopped part-way" if error else "swept with failures")
    if error is not None:
        summary["error"] = f"sweep: {error}"
    write_json_atomic(report.path / SUMMARY_FILE, summary)
    from lakewarden.report_html import write_report_html  # the page shows the sweep's outcome

    write_report_html(report.path)
    log.info(
        "sweep %s: %d deleted (%d before this run), %d failed of %d marked in %.1fs",
        sweep_id, num_deleted, previously, num_failed, result.num_marked, seconds,
    )
    return result


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
    finally:
        shutil.rmtree(staging, ignore_errors=True)
