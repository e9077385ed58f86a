"""The Python API: each job called with typed, frozen options, answering with a frozen outcome.
The command line (``lakewarden lifecycle``, ``gc``, ``gc committed``, ``gc uncommitted``) is a
thin layer over these functions: it builds the same options from its arguments.

    from pathlib import Path
    from lakewarden.api import LifecycleOptions, RunOptions, lifecycle

    outcome = lifecycle(
        RunOptions(snapshot=Path("snapshot"), dry_run=True, state=Path("/var/lib/lakewarden")),
        LifecycleOptions(policy=Path("policy.json")),
    )
    print(outcome.num_marked, outcome.report / "addresses.csv")

What every run takes is :class:`RunOptions` (snapshot or :class:`LakeFSSource`, clock, dry run,
report directory, state directory, :class:`StoreOptions`); each job adds its own options. A
dry run marks and writes the report; without ``dry_run`` the run sweeps what it marked, as
the command does. The outcome (:class:`JobOutcome`) holds the report directory, the counts,
the job's own mark result and how the sweep ended (``exit_status`` is the command's exit code).

Errors are exceptions, not exit codes: :class:`~lakewarden.errors.BadInput` (the command's
exit 2: one line naming the file or field) before anything is written, and
:class:`~lakewarden.errors.LakewardenError` when a run fails part-way (its report says so).
The lines the command prints go to the ``lakewarden.jobs.shape`` logger at INFO.

The job runs on this process's Spark session: the embedded one by default, or the one already
active (a notebook's, a spark-submit driver's). docs/python-api.md has an Airflow task.
"""

from __future__ import annotations

from lakewarden.errors import BadInput, LakewardenError
from lakewarden.extract.config import LakeFSSource
from lakewarden.jobs.gc_committed import CommittedGc, CommittedGcOptions
from lakewarden.jobs.gc_uncommitted import UncommittedGc, UncommittedGcOptions
from lakewarden.jobs.gc_unified import GcOptions, UnifiedGc
from lakewarden.jobs.lifecycle import Lifecycle, LifecycleOptions
from lakewarden.jobs.options import RunOptions
from lakewarden.jobs.shape import JobOutcome, SweepOutcome, run_job
from lakewarden.stores.options import StoreOptions

__all__ = [
    "BadInput",
    "CommittedGcOptions",
    "GcOptions",
    "JobOutcome",
    "LakeFSSource",
    "LakewardenError",
    "LifecycleOptions",
    "RunOptions",
    "StoreOptions",
    "SweepOutcome",
    "UncommittedGcOptions",
    "gc",
    "gc_committed",
    "gc_uncommitted",
    "lifecycle",
]


def lifecycle(run: RunOptions, options: LifecycleOptions) -> JobOutcome:
    """The lifecycle policy job (``lakewarden lifecycle``)."""
    return run_job(Lifecycle(), run, options, echo=False)


def gc_committed(run: RunOptions, options: CommittedGcOptions | None = None) -> JobOutcome:
    """Committed retention GC (``lakewarden gc committed``); without rules nothing expires."""
    return run_job(CommittedGc(), run, options or CommittedGcOptions(), echo=False)


def gc_uncommitted(run: RunOptions, options: UncommittedGcOptions | None = None) -> JobOutcome:
    """Uncommitted GC (``lakewarden gc uncommitted``): the namespace listed unless an inventory is given."""
    return run_job(UncommittedGc(), run, options or UncommittedGcOptions(), echo=False)


def gc(run: RunOptions, options: GcOptions | None = None) -> JobOutcome:
    """Committed and uncommitted GC in one run (``lakewarden gc``), as lakeFS's GC."""
    return run_job(UnifiedGc(), run, options or GcOptions(), echo=False)
