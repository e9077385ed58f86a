"""What a job run is asked to do, as typed frozen values: the Python API's arguments
(lakewarden.api), which the command line builds from its options in one place
(:func:`lakewarden.jobs.common.run_options_from_args` and each job's ``options_from_args``).

Why values and not parsed arguments: an Airflow task, a notebook or a test runs a job with
these, and nothing has to pretend to be a command line. Every check that makes bad input exit 2
on the command line raises :class:`~lakewarden.errors.BadInput` here, naming the same field,
before Spark starts.

Each job's own options live with the job (``CommittedGcOptions`` in
lakewarden.jobs.gc_committed, ``UncommittedGcOptions`` in lakewarden.jobs.gc_uncommitted,
``GcOptions`` in lakewarden.jobs.gc_unified, ``LifecycleOptions`` in lakewarden.jobs.lifecycle);
what every job shares is here (the lakeFS source is the extract's: lakewarden.extract.config).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from lakewarden.errors import BadInput
from lakewarden.extract.config import LakeFSSource
from lakewarden.stores.options import StoreOptions

__all__ = ["LakeFSSource", "RunOptions"]


@dataclass(frozen=True)
class RunOptions:
    """What every job run takes: where the repository is, the clock, dry run or not, where the
    report and the state go, and how to reach the namespace's store."""

    #: a snapshot directory (docs/contract.md section 2); or ``lakefs``
    snapshot: Path | None = None
    #: a lakeFS server to extract the repository from; or ``snapshot``
    lakefs: LakeFSSource | None = None
    #: the job's clock, timezone-aware (default: now); later than this machine's clock only in a dry run
    now: datetime | None = None
    #: compute and write the report, delete nothing
    dry_run: bool = False
    #: the report directory (default: under the namespace's ``_lakefs/retention/``)
    report: Path | None = None
    #: the state directory (default: ``LAKEWARDEN_HOME``, else ``./.lakewarden``)
    state: Path | None = None
    #: how to reach the namespace's store (unset fields: the SDKs' own environment variables)
    store: StoreOptions = field(default_factory=StoreOptions)

    def __post_init__(self) -> None:
        for name in ("snapshot", "report", "state"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))  # a str given for a path: one type inside
        if self.snapshot is not None and self.lakefs is not None:
            raise BadInput("give either --snapshot or --lakefs-endpoint/--repo, not both", field="--snapshot")
        if self.now is not None and self.now.tzinfo is None:
            raise BadInput(f"{self.now.isoformat()} has no timezone: give the clock with an offset", field="--now")
