"""The one shape every job has: read inputs -> start -> mark -> report -> sweep.

Each job (committed GC, uncommitted GC, lifecycle) is a module of named phases: it reads and
validates its own inputs before Spark starts (bad input exits 2 and changes nothing), marks on the
embedded or cluster Spark and writes its report (a frozen result), and hands the report directory
to the one sweep. This module owns the order of the phases, the lines printed after each, and how
a sweep's outcome becomes the exit status, so the three jobs cannot drift apart again.

    inputs  = job.read_inputs(args)            # no Spark yet
    context = start_job(args, job.name)        # clock, Spark, snapshot read in place
    marked  = job.mark(context, inputs, args)  # dbt models -> report directory (frozen result)
    if dry run: job.after_dry_run(...)         # e.g. lifecycle's stats
    else:       outcome = sweep(report); job.after_sweep(..., outcome)
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from lakewarden.errors import error_line
from lakewarden.jobs.common import JobContext, start_job

if TYPE_CHECKING:  # pragma: no cover
    from lakewarden.stores import StoreOptions

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


class Job(Generic[InputsT, MarkedT]):
    """A job's phases. Subclasses set ``name`` and implement ``read_inputs`` and ``mark``."""

    name: str

    def read_inputs(self, args: argparse.Namespace) -> InputsT:
        """Validate the job's own inputs before Spark starts (raise BadInput)."""
        raise NotImplementedError

    def mark(self, context: JobContext, inputs: InputsT, args: argparse.Namespace) -> MarkedT:
        """Run the mark models and write the report; delete nothing."""
        raise NotImplementedError

    def describe(self, marked: MarkedT) -> list[str]:
        """The lines printed after the mark phase (the report path is printed by run_job)."""
        return []

    def store_options(self, args: argparse.Namespace) -> "StoreOptions":
        """Where the namespace's store is: every job's store options (``--s3-*``, ``--azure-*``,
        ``--gcs-*``, ``--local-blockstore``), else the SDKs' variables. A malformed one is bad input."""
        from lakewarden.stores import store_options_from_args

        return store_options_from_args(args)

    def deleter_options(self, inputs: InputsT, args: argparse.Namespace) -> dict[str, Any]:
        """Options for the storage backend of the sweep, for whatever store the namespace is on
        (:meth:`lakewarden.stores.StoreOptions.deleter_options`: S3's keep their old names)."""
        return self.store_options(args).deleter_options()

    def after_dry_run(self, context: JobContext, inputs: InputsT, marked: MarkedT) -> None:
        """Bookkeeping after a dry run (nothing by default)."""

    def after_sweep(self, context: JobContext, inputs: InputsT, marked: MarkedT, outcome: SweepOutcome) -> None:
        """Bookkeeping after the sweep, also when it stopped part-way (nothing by default)."""


def run_job(job: Job[Any, Any], args: argparse.Namespace) -> int:
    """The phases in order; exit 0 when everything marked was deleted (or a dry run), 1 when the
    sweep failed for some addresses or stopped part-way (the report says which)."""
    from lakewarden.runtime.project import SENT
    from lakewarden.runtime.spark_session import spark_jobs_started

    inputs = job.read_inputs(args)
    options = job.store_options(args)  # a malformed option: exit 2 before Spark starts
    context = start_job(args, job.name)
    from lakewarden.stores import check_store_options

    # options that cannot address the namespace (an Azure endpoint of another account): exit 2
    # naming the option, before anything is listed, marked or written
    check_store_options(context.storage_namespace, with_blockstore(options, context)).close()
    queries, jobs = SENT["queries"], spark_jobs_started(context.spark)
    marked = job.mark(context, inputs, args)
    work = {"dbt_queries": SENT["queries"] - queries}
    after = spark_jobs_started(context.spark)
    if jobs is not None and after is not None:
        work["spark_jobs"] = after - jobs
    marked.report.update(**work)
    for line in job.describe(marked):
        print(line, file=sys.stdout)
    print("work: " + ", ".join(f"{value} {name.replace('_', ' ')}" for name, value in work.items()), file=sys.stdout)
    directory = Path(marked.report.directory)
    print(f"report: {directory}", file=sys.stdout)
    if (directory / "report.html").exists():
        print(f"report page: {directory / 'report.html'}", file=sys.stdout)
    if context.dry_run:
        job.after_dry_run(context, inputs, marked)
        return 0
    from lakewarden.sweep import SweepFailed, sweep_report

    try:
        result = sweep_report(context.spark, directory, deleter_options=job.deleter_options(inputs, args))
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
    print(f"swept: {outcome.num_deleted} deleted, {outcome.num_failed} failed", file=sys.stdout)
    note = result.recoverability_note()
    if note:
        print(note, file=sys.stdout)
    return 0 if outcome.success else 1


def with_blockstore(options: "StoreOptions", context: JobContext) -> "StoreOptions":
    """``options`` with the local:// namespace's blockstore directory the job resolved (the one
    place this is decided: the check before a job marks, lakewarden gc, sweep --mark-id)."""
    from dataclasses import replace

    if context.local_blockstore and not options.local_blockstore:
        return replace(options, local_blockstore=context.local_blockstore)
    return options
