"""The one shape every job has: read inputs -> start -> mark -> report -> sweep.

Each job (committed GC, uncommitted GC, lifecycle) is a module of named phases: it reads and
validates its own inputs before Spark starts (bad input exits 2 and changes nothing), marks on the
embedded or cluster Spark and writes its report (a frozen result), and hands the report directory
to the one sweep. This module owns the order of the phases, the lines printed after each, and how
a sweep's outcome becomes the exit status, so the three jobs cannot drift apart again.

    inputs  = job.read_inputs(options, run)       # no Spark yet
    context = start_job(run, job.name, ...)       # clock, Spark, snapshot read in place; while the
                                                  # JVM boots: job.prepare(...) -> context.prepared
    marked  = job.mark(context, inputs, options)  # dbt models -> report directory (frozen result)
    if dry run: job.after_dry_run(...)            # e.g. lifecycle's stats
    else:       outcome = sweep(report); job.after_sweep(..., outcome)
    return JobOutcome(...)                        # frozen: what the run did

``run`` is the :class:`~lakewarden.jobs.options.RunOptions` every job takes, ``options`` the
job's own frozen options: the Python API (lakewarden.api) passes them as given, the command line
builds them from its arguments first.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, Protocol, TypeVar

from lakewarden.errors import error_line
from lakewarden.jobs.common import JobContext, StartingJob, start_job

if TYPE_CHECKING:  # pragma: no cover
    from lakewarden.jobs.options import RunOptions
    from lakewarden.stores import StoreOptions

log = logging.getLogger(__name__)

OptionsT = TypeVar("OptionsT")
InputsT = TypeVar("InputsT")
MarkedT = TypeVar("MarkedT", bound="Marked")


class Marked(Protocol):
    """What every job's mark phase returns (a frozen dataclass in each job module)."""

    @property
    def report(self) -> Any: ...  # lakewarden.reports.directory.Report

    @property
    def num_marked(self) -> int: ...


@dataclass(frozen=True)
class SweepOutcome:
    """What the sweep phase hands back to the job (None fields: the sweep did not finish)."""

    success: bool
    num_deleted: int
    num_failed: int
    outcomes_csv: str | None
    error: str | None


@dataclass(frozen=True)
class JobOutcome:
    """What one job run did: the Python API's answer (the command line prints the same and
    exits with :attr:`exit_status`)."""

    job: str
    run_id: str
    dry_run: bool
    #: the report directory (summary.json, addresses, report.html)
    report: Path
    num_marked: int
    #: the job's own frozen mark result (e.g. lakewarden.jobs.lifecycle.LifecycleResult)
    marked: Any
    #: how the sweep ended; None for a dry run
    swept: SweepOutcome | None = None

    @property
    def exit_status(self) -> int:
        """0 when everything marked was deleted (or a dry run), 1 when some deletes failed."""
        return 0 if self.swept is None or self.swept.success else 1


class Job(Generic[OptionsT, InputsT, MarkedT]):
    """A job's phases. Subclasses set ``name`` and implement ``read_inputs`` and ``mark``."""

    name: str

    def read_inputs(self, options: OptionsT, run: "RunOptions") -> InputsT:
        """Validate the job's own inputs before Spark starts (raise BadInput)."""
        raise NotImplementedError

    def incremental(self, options: OptionsT) -> bool:
        """Whether a run with ``options`` continues from the job's earlier run when there is one
        and then reads only what changed since (lifecycle without ``--full``). Its JVM then
        starts with the quick compiler whatever the snapshot's size
        (lakewarden.runtime.spark_session.jit_mode). False by default: the run reads it all.
        Uncommitted GC's optimized run stays False. With its report cut in Spark it read the whole
        report again (8.45M objects, quick: 37.7 s against 30.1 s). With the cut in the driver
        it reads the ranges new since and about a tenth of the report, yet it still marks and
        writes every unreferenced object: at 8.45M (852k of them, 2 cores, a machine 2.3 times
        slower) quick took 88.6 s against 82.4-83.1 s, its no-op 79.0 s against 77.6 s."""
        return False

    def prepare(self, options: OptionsT, inputs: InputsT, starting: StartingJob) -> Any:
        """Work of the job's own that takes no Spark but needs the checked snapshot or the
        state dir, done while the JVM boots (the run pays the longer of the two, not their
        sum); what it returns is ``context.prepared`` in :meth:`mark`. It runs before the
        job's state lock is taken: :meth:`mark` checks under the lock that what it read still
        holds. Bad input raised here exits 2 before anything is written. Nothing by default."""
        return None

    def mark(self, context: JobContext, inputs: InputsT, options: OptionsT) -> MarkedT:
        """Run the mark models and write the report; delete nothing."""
        raise NotImplementedError

    def describe(self, marked: MarkedT) -> list[str]:
        """The lines printed after the mark phase (the report path is printed by run_job)."""
        return []

    def deleter_options(self, inputs: InputsT, run: "RunOptions") -> dict[str, Any]:
        """Options for the storage backend of the sweep, for whatever store the namespace is on
        (:meth:`lakewarden.stores.StoreOptions.deleter_options`: S3's keep their old names)."""
        return run.store.deleter_options()

    def after_dry_run(self, context: JobContext, inputs: InputsT, marked: MarkedT) -> None:
        """Bookkeeping after a dry run (nothing by default)."""

    def after_sweep(self, context: JobContext, inputs: InputsT, marked: MarkedT, outcome: SweepOutcome) -> None:
        """Bookkeeping after the sweep, also when it stopped part-way (nothing by default)."""


def run_job(job: Job[OptionsT, Any, Any], run: "RunOptions", options: OptionsT, *, echo: bool = True) -> JobOutcome:
    """The phases in order. A sweep that failed for some addresses or stopped part-way is
    :attr:`JobOutcome.exit_status` 1 (the report says which); bad input raises BadInput before
    anything is written, a job that fails part-way a LakewardenError.

    ``echo``: the lines a person reads (what was marked, the report's path, the sweep's counts)
    go to stdout, as the command prints them; otherwise to this module's log at INFO (the
    Python API: a library does not print)."""

    def say(line: str) -> None:
        if echo:
            print(line, file=sys.stdout)
        else:
            log.info("%s", line)

    inputs = job.read_inputs(options, run)
    context = start_job(
        run, job.name, incremental=job.incremental(options), prepare=lambda starting: job.prepare(options, inputs, starting)
    )
    try:
        return _marked_and_swept(job, run, options, inputs, context, say)
    finally:
        context.end()


def _marked_and_swept(
    job: Job[OptionsT, Any, Any], run: "RunOptions", options: OptionsT, inputs: Any, context: JobContext, say: Callable[[str], None]
) -> JobOutcome:
    """run_job's phases once the job has started: mark, describe, then the dry run's
    bookkeeping or the sweep and its bookkeeping."""
    from lakewarden.runtime.old_generation import collections_asked
    from lakewarden.runtime.project import SENT
    from lakewarden.runtime.spark_session import spark_jobs_started
    from lakewarden.stores import check_store_options

    # options that cannot address the namespace (an Azure endpoint of another account): exit 2
    # naming the option, before anything is listed, marked or written
    check_store_options(context.storage_namespace, with_blockstore(run.store, context)).close()
    queries, jobs, collections = SENT["queries"], spark_jobs_started(context.spark), collections_asked(context.spark)
    marked = job.mark(context, inputs, options)
    work = {"dbt_queries": SENT["queries"] - queries}
    after = spark_jobs_started(context.spark)
    if jobs is not None and after is not None:
        work["spark_jobs"] = after - jobs
    collections_after = collections_asked(context.spark)
    if collections is not None and collections_after is not None:  # an embedded driver's watch
        work["full_collections"] = collections_after - collections
    marked.report.update(**work)
    for line in job.describe(marked):
        say(line)
    say("work: " + ", ".join(f"{value} {name.replace('_', ' ')}" for name, value in work.items()))
    directory = Path(marked.report.directory)
    say(f"report: {directory}")
    if marked.report.page_path.exists():
        say(f"report page: {marked.report.page_path}")
    done = JobOutcome(job=job.name, run_id=context.run_id, dry_run=context.dry_run, report=directory, num_marked=marked.num_marked, marked=marked)
    if context.dry_run:
        job.after_dry_run(context, inputs, marked)
        return done
    from lakewarden.sweep import SweepFailed, sweep_report

    try:
        result = sweep_report(context.spark, directory, deleter_options=job.deleter_options(inputs, run))
    except SweepFailed as exc:
        job.after_sweep(context, inputs, marked, SweepOutcome(False, 0, 0, None, error_line(exc)))
        raise
    outcome = SweepOutcome(
        success=result.success,
        num_deleted=result.num_deleted,
        num_failed=result.num_failed,
        outcomes_csv=str(result.outcomes_csv),
        error=None if result.success else f"{result.num_failed} deletes failed (see {result.outcomes_csv})",
    )
    job.after_sweep(context, inputs, marked, outcome)
    say(f"swept: {outcome.num_deleted} deleted, {outcome.num_failed} failed")
    note = result.recoverability_note()
    if note:
        say(note)
    return replace(done, swept=outcome)


def with_blockstore(options: "StoreOptions", context: JobContext) -> "StoreOptions":
    """``options`` with the local:// namespace's blockstore directory the job resolved (the one
    place this is decided: the check before a job marks, lakewarden gc, sweep --mark-id)."""
    if context.local_blockstore and not options.local_blockstore:
        return replace(options, local_blockstore=context.local_blockstore)
    return options
