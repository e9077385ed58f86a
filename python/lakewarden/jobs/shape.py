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
from typing import Any, Generic, Protocol, TypeVar

from lakewarden.errors import error_line
from lakewarden.jobs.common import JobContext, start_job

InputsT = TypeVar("InputsT")
MarkedT = TypeVar("MarkedT", bound="Marked")


class Marked(Protocol):
    """What every job's mark phase returns (a frozen dataclass in each job module)."""

    @property
    def report(self) -> Any: ...  # lakewarden.report.Report

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

    def deleter_options(self, inputs: InputsT, args: argparse.Namespace) -> dict[str, Any]:
        """Options for the storage backend of the sweep: every job's --s3-endpoint/--s3-region."""
        from lakewarden.s3client import s3_options

        return s3_options(getattr(args, "s3_endpoint", None), getattr(args, "s3_region", None))

    def after_dry_run(self, context: JobContext, inputs: InputsT, marked: MarkedT) -> None:
        """Bookkeeping after a dry run (nothing by default)."""

    def after_sweep(self, context: JobContext, inputs: InputsT, marked: MarkedT, outcome: SweepOutcome) -> None:
        """Bookkeeping after the sweep, also when it stopped part-way (nothing by default)."""


def run_job(job: Job[Any, Any], args: argparse.Namespace) -> int:
    """The phases in order; exit 0 when everything marked was deleted (or a dry run), 1 when the
    sweep failed for some addresses or stopped part-way (the report says which)."""
    from lakewarden.project import SENT
    from lakewarden.spark_session import spark_jobs_started

    inputs = job.read_inputs(args)
    context = start_job(args, job.name)
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
    return 0 if outcome.success else 1
