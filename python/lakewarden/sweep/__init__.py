"""The shared sweep: delete what a job's report marked, resumably, with a truthful report.

``sweep_report`` takes the report's lock (:mod:`.lock`: one sweep per report at a time), says
in ``summary.json`` that a sweep is running (:mod:`.status`), deletes through one engine
(:mod:`.engine`: re-check, batches, backend retries, durable outcome records) on one of two
paths, merges the outcomes and writes the final summaries:

* **in-process** (:mod:`.inprocess`): no JVM; for reports of up to
  :data:`PROCESS_MAX_ADDRESSES` marked addresses, where starting and planning Spark costs more
  than it saves (see ``docs/sweep.md`` for the benchmark behind the number);
* **distributed** (:mod:`.distributed`): Spark tasks; above that size, or under spark-submit.

A sweep of a lifecycle dry run that deleted everything is recorded for the run ledger
(:mod:`.ledger`), so the next lifecycle run can start from it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping

from lakewarden.deleters.base import Deleter, clean_options, deleter_for
from lakewarden.errors import BadInput
from lakewarden.timestamps import utc_now
from lakewarden.runtime.state_dir import state_dir
from lakewarden.sweep.distributed import (
    ensure_python_workers,
    read_addresses,
    read_outcomes,
    sweep_distributed,
)
from lakewarden.sweep.engine import SweepFailed
from lakewarden.sweep.inprocess import sweep_in_process
from lakewarden.sweep.lock import SweepBusy, SweepLock
from lakewarden.reports.directory import Report
from lakewarden.sweep.report_dir import count_rows, load_report, report_path
from lakewarden.sweep.result import SweepResult, new_sweep_id
from lakewarden.sweep.status import SweepStatus

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from lakewarden.stores import Recoverability

#: Up to this many marked addresses the sweep runs in-process (no Spark): below the crossover
#: ``benchmarks/sweep_crossover.py`` estimates for any core count (650,000 and up), and about
#: 0.4 GB of memory at most (0.57 KB per address, measured). See docs/sweep.md.
PROCESS_MAX_ADDRESSES = 500_000
Engine = Literal["auto", "process", "spark"]
ENGINES = ("auto", "process", "spark")


def choose_engine(report: Report, engine: Engine = "auto", *, process_max: int = PROCESS_MAX_ADDRESSES) -> str:
    """``process`` or ``spark`` for ``report``: Spark under spark-submit or above ``process_max``."""
    if engine not in ENGINES:
        raise BadInput(f"must be one of {', '.join(ENGINES)}, not {engine!r}", field="--engine")
    if engine != "auto":
        return engine
    from lakewarden.runtime.spark_session import under_spark_submit

    if under_spark_submit():
        return "spark"
    return "process" if count_rows(report, limit=process_max) <= process_max else "spark"


def _default_spark() -> "SparkSession":
    from lakewarden.runtime import spark_session

    return spark_session.get_or_create(state_dir(None))


def sweep_report(
    spark: "SparkSession | None",
    report_dir: str | os.PathLike[str],
    *,
    deleter_options: Mapping[str, Any] | None = None,
    parallelism: int | None = None,
    batch_size: int = 1000,
    threads: int | None = None,
    deleter_factory: Callable[..., Deleter] = deleter_for,
    progress_interval: float = 10.0,
    engine: Engine = "auto",
    spark_factory: Callable[[], "SparkSession"] | None = None,
    process_max: int = PROCESS_MAX_ADDRESSES,
) -> SweepResult:
    """Delete what ``report_dir`` marked; record every address's outcome; return the counts.

    ``spark`` may be None: the distributed path then starts a session with ``spark_factory``
    (default: the embedded one). ``engine`` forces a path (``process``/``spark``). ``parallelism``
    is the number of Spark tasks (distributed path); ``batch_size`` caps each delete call (the
    backend's ``max_batch`` caps it too); ``threads`` is batches in flight per process or task
    (default: the backend's ``max_concurrency``: 8 for S3, 1 locally).
    ``deleter_factory(namespace, **deleter_options)`` builds the backend. Raises
    :class:`BadInput` for a bad report, :class:`SweepBusy` when another sweep holds the report,
    :class:`SweepFailed` when deleting stopped part-way; in every case nothing unrecorded is
    deleted, the summaries say what happened, and a re-run completes the sweep.
    """
    report = load_report(report_dir)
    if batch_size < 1:
        raise BadInput("must be at least 1", field="batch_size")
    options = clean_options(deleter_options)
    if report.summary.get("local_blockstore") and "local_blockstore" not in options:
        # a local:// namespace: the job recorded the server's blockstore.local.path
        options["local_blockstore"] = report.summary["local_blockstore"]
    deleter_factory(report.storage_namespace, **options).close()  # bad namespace/options: fail before any work
    count_rows(report, limit=0)  # addresses.csv's header: bad input before the lock or any write
    chosen = choose_engine(report, engine, process_max=process_max)
    sweep_id = new_sweep_id()
    started_at = utc_now()
    report.sweep_dir.mkdir(parents=True, exist_ok=True)
    from lakewarden.runtime.progress import phase

    total = report.summary.get("num_marked") if isinstance(report.summary.get("num_marked"), int) else None
    recoverable = store_recoverability(report.storage_namespace, options) if deleter_factory is deleter_for else None
    with SweepLock(report.lock_file).acquire(sweep_id=sweep_id, started_at=started_at) as lock, phase(
        f"sweep ({chosen})", total=total, unit="addresses"
    ) as bar:
        status = SweepStatus(report, sweep_id=sweep_id, started_at=started_at, engine=chosen)
        status.on_progress = bar.advance
        if recoverable is not None:
            status.extra.update(recoverable=recoverable.recoverable, recoverability=recoverable.message)
        if chosen == "process":
            result = sweep_in_process(
                report, status, lock_taken_over=lock.taken_over, deleter_factory=deleter_factory,
                deleter_options=options, batch_size=batch_size, threads=threads,
            )
        else:
            session = spark if spark is not None else (spark_factory or _default_spark)()
            result = sweep_distributed(
                session, report, status, lock_taken_over=lock.taken_over, deleter_factory=deleter_factory,
                deleter_options=options, batch_size=batch_size, threads=threads, parallelism=parallelism,
                progress_interval=progress_interval,
            )
    if recoverable is not None:
        from dataclasses import replace

        result = replace(result, recoverable=recoverable.recoverable, recoverability=recoverable.message)
    return result


def store_recoverability(storage_namespace: str, deleter_options: Mapping[str, Any]) -> "Recoverability":
    """Whether deletes in ``storage_namespace`` leave recoverable copies (S3 versioning, Azure
    blob soft delete or versioning, GCS soft delete or versioning: lakeFS#6807), asked of its
    store with the sweep's options. Never fails the sweep: a store that cannot tell says so."""
    from lakewarden.stores import Recoverability, StoreOptions, store_for

    try:
        with store_for(storage_namespace, StoreOptions.from_deleter_options(deleter_options)) as store:
            return store.recoverability()
    except Exception as exc:  # noqa: BLE001 - a question about billing must not stop a sweep
        from lakewarden.errors import error_line

        return Recoverability(None, f"could not tell whether deletes here leave recoverable versions ({type(exc).__name__}: {error_line(exc, limit=200)})")


__all__ = [
    "ENGINES",
    "PROCESS_MAX_ADDRESSES",
    "Report",
    "SweepBusy",
    "SweepFailed",
    "SweepResult",
    "choose_engine",
    "ensure_python_workers",
    "load_report",
    "read_addresses",
    "read_outcomes",
    "report_path",
    "store_recoverability",
    "sweep_report",
]
