"""Report directories (docs/contract.md §4): ``summary.json``, ``addresses.csv``, ``report.html``.

The summary is written when a run starts (``success: false``, ``finished_at: null``) and
rewritten atomically as it progresses, so a run that dies part-way leaves a report saying so.
``addresses.csv`` is written by Spark as one sorted file (one task sorts with spilling; the list
never passes through the driver). When a run finishes, it is appended to the state dir's run
history and ``report.html`` is (re)written (``lakewarden.reports.page``) from the summary, the
``figures.json`` the job computed in its mark (``lakewarden.reports.figures``) and the history; a
sweep rewrites the page when it finalizes the summary. Jobs record ``snapshot_dir`` and
``state_dir`` in the summary so ``lakewarden explain`` can read the snapshot, and the page the
history, later without Spark.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence
from urllib.parse import urlparse
from urllib.request import url2pathname

from lakewarden.errors import BadInput
from lakewarden.timestamps import utc_now

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

#: the names of a report directory's files, the one set every part uses (jobs write the first
#: two and the page; a sweep writes the rest beside them)
SUMMARY = "summary.json"
ADDRESSES = "addresses.csv"
REPORT_HTML = "report.html"
#: the sweep's own files: ``sweep.lock``, ``sweep/outcomes/*.jsonl`` (the durable record,
#: appended batch by batch), ``sweep/outcomes.csv``, ``sweep/summary.json``
LOCK_FILE = "sweep.lock"
SWEEP_DIR = "sweep"
OUTCOMES_DIR = "outcomes"
OUTCOMES_CSV = "outcomes.csv"


def local_path(uri: str) -> Path | None:
    """The local path of a ``file://`` URI, else None."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(url2pathname(parsed.path))


def retention_dir(storage_namespace: str, state: Path, *parts: str) -> Path:
    """The one place job outputs go: ``<namespace>/_lakefs/retention/<parts>`` beside the data
    for a local namespace, as lakeFS's GC writes them; ``<state>/retention/<parts>`` for a
    remote one (s3://...: the embedded Spark has no object-store filesystem to write with)."""
    namespace = local_path(storage_namespace)
    root = (namespace / "_lakefs") if namespace is not None else state
    return root.joinpath("retention", *parts)


def default_report_dir(storage_namespace: str, state: Path, kind: str, run_id: str) -> Path:
    """A run's report directory when --report is not given: ``<retention_dir>/<kind>/reports/<run_id>``."""
    return retention_dir(storage_namespace, state, kind, "reports", run_id)


def write_json_atomic(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        json.dump(document, stream, indent=2, sort_keys=True, default=str)
        stream.write("\n")
    os.replace(temporary, path)


#: at most this many rows (as the caller counted them) and a CSV is sorted and written by one
#: task (:func:`write_single_csv`)
ONE_TASK_CSV_ROWS = 100_000


def write_single_csv(frame: "DataFrame", path: Path, *, sort_by: Sequence[str], rows: int | None = None) -> None:
    """Write ``frame`` as one CSV file with a header, rows sorted by ``sort_by``.

    The rows are sorted across the session's tasks (a range-partitioned sort: each part holds
    one stretch of the order), written as parts without headers, then the header and the parts
    are concatenated in order: one task sorting and writing every row took 3.9 s of a mark of
    645,100 addresses, and the file is the same. ``rows``: how many rows ``frame`` has, when the
    caller counted them already; at most :data:`ONE_TASK_CSV_ROWS` are sorted and written by one
    task, for the range-partitioned sort first samples the rows in a job of its own (0.2 s in
    the event log of a lifecycle run marking 1,136 addresses at 1M entries, beside the report's
    figures: no change end to end was measurable) and a few thousand rows need no more than one
    task. The file is the same either way."""
    staging = path.parent / f".{path.name}.parts"
    if staging.exists():
        shutil.rmtree(staging)
    few = rows is not None and rows <= ONE_TASK_CSV_ROWS
    (
        (frame.coalesce(1).sortWithinPartitions(*sort_by) if few else frame.orderBy(*sort_by))
        .write.option("header", False)
        .option("emptyValue", "")
        .option("escape", '"')
        .option("timestampFormat", "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX")
        .csv(str(staging))
    )
    parts = sorted(staging.glob("part-*.csv"), key=lambda part: part.name)
    temporary = path.parent / f".{path.name}.tmp"
    with open(temporary, "wb") as out:
        out.write((",".join(frame.columns) + "\n").encode("utf-8"))
        for part in parts:
            with open(part, "rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 20)
    os.replace(temporary, path)
    shutil.rmtree(staging)


class Report:
    """One run's report directory: the job writes it (:meth:`create`, :meth:`update`,
    :meth:`finish`), the page, ``explain`` and the sweep read it (:meth:`open`; the sweep
    validates it first, lakewarden.sweep.report_dir.load_report) and the sweep adds its files
    beside the job's (:attr:`sweep_dir`, :attr:`lock_file`)."""

    def __init__(self, directory: Path, summary: dict[str, Any]) -> None:
        self.directory = directory
        self.summary = summary

    @classmethod
    def create(
        cls,
        directory: Path,
        *,
        run_id: str,
        job: str,
        dry_run: bool,
        now: str,
        repository_id: str,
        storage_namespace: str,
        **extra: Any,
    ) -> "Report":
        directory = Path(directory).resolve()
        if (directory / SUMMARY).exists():
            raise BadInput("already holds a report; choose an empty directory", source=str(directory), field="--report")
        directory.mkdir(parents=True, exist_ok=True)
        report = cls(
            directory,
            {
                "run_id": run_id,
                "job": job,
                "dry_run": dry_run,
                "now": now,
                "repository_id": repository_id,
                "storage_namespace": storage_namespace,
                "num_marked": None,
                "bytes_marked": None,
                "num_deleted": 0,
                "num_failed": 0,
                "started_at": utc_now(),
                "finished_at": None,
                "success": False,
                "status": "running",
                "error": None,
                **extra,
            },
        )
        report.save()
        return report

    @classmethod
    def open(cls, directory: Path) -> "Report":
        path = Path(directory) / SUMMARY
        if not path.is_file():
            raise BadInput("no summary.json: not a lakewarden report", source=str(directory), field="--report")
        try:
            summary = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise BadInput(f"unreadable ({exc})", source=str(path)) from None
        return cls(Path(directory).resolve(), summary)

    @property
    def addresses_path(self) -> Path:
        return self.directory / ADDRESSES

    @property
    def summary_path(self) -> Path:
        return self.directory / SUMMARY

    @property
    def page_path(self) -> Path:
        return self.directory / REPORT_HTML

    @property
    def storage_namespace(self) -> str:
        """The namespace the run marked in (every summary has it; the sweep checks it first)."""
        return str(self.summary["storage_namespace"])

    @property
    def lock_file(self) -> Path:
        return self.directory / LOCK_FILE

    @property
    def sweep_dir(self) -> Path:
        return self.directory / SWEEP_DIR

    @property
    def outcomes_dir(self) -> Path:
        return self.sweep_dir / OUTCOMES_DIR

    @property
    def outcomes_csv(self) -> Path:
        return self.sweep_dir / OUTCOMES_CSV

    def save(self) -> None:
        write_json_atomic(self.summary_path, self.summary)

    def update(self, **fields: Any) -> None:
        self.summary.update(fields)
        self.save()

    def write_addresses(self, frame: "DataFrame", *, rows: int | None = None) -> None:
        """Write the marked addresses (first column ``address``), sorted by address. ``rows``:
        how many there are, when the job counted them (:func:`write_single_csv`)."""
        if frame.columns[0] != "address":
            raise ValueError("the first column of addresses.csv must be 'address'")
        write_single_csv(frame, self.addresses_path, sort_by=["address", *frame.columns[1:2]], rows=rows)

    def finish(self, *, success: bool, status: str, error: str | None = None, **fields: Any) -> None:
        """Finalize the summary, record the run in the state dir's history, write report.html.
        The last two are views: their failure is logged and never fails the run."""
        from lakewarden.reports.history import record_run
        from lakewarden.reports.page import write_report_html

        self.update(success=success, status=status, error=error, finished_at=utc_now(), **fields)
        state = self.summary.get("state_dir")
        if state:
            try:
                record_run(Path(state), self.summary)
            except OSError as exc:
                log.warning("run history not updated in %s: %s", state, exc)
        write_report_html(self.directory, state)
