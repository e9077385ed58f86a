"""``lakewarden gc uncommitted``: uncommitted GC (lakeFS's uncommitted garbage collector).

Deletes objects under the storage namespace that no commit and no staged entry references:
failed and abandoned uploads, objects of staged entries that were reset or overwritten. The
subtraction is dbt models (``models/gc_uncommitted``); this module reads the storage inventory
(:mod:`lakewarden.inventory`), decides between a clean and an optimized run, runs the models,
writes the outputs and the run history, and sweeps (:func:`lakewarden.sweep.sweep_report`).

Clean run: repository inventory = every entry of every range (all commits from genesis) plus
staged entries; marked = storage inventory - repository inventory - objects younger than
``--min-age``. Optimized run (a successful previous run exists for this namespace): only the
ranges the previous run had not read are read (those commits newer than its Last Commit brought);
candidates are (a) the previous uncommitted inventory and (b) objects storage wrote after the
previous run's cutoff. See docs/gc-uncommitted.md for why the result is a subset of a clean run's.
"""

from __future__ import annotations

import argparse
import logging
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from lakewarden.durations import parse_duration
from lakewarden.errors import BadInput, error_line
from lakewarden.jobs.common import (
    CLOCK_SKEW,
    SNAPSHOT_SCHEMA,
    JobContext,
    add_job_options,
    namespace_key,
    rfc3339,
    run_options_from_args,
)
from lakewarden.jobs.shape import Job, run_job
from lakewarden.reports.directory import Report, write_json_atomic
from lakewarden.reports.figures import drawn_beside, write_figures
from lakewarden.runtime.compiled_models import source_id
from lakewarden.runtime.progress import PhaseClock
from lakewarden.state_tables import append_rows, qualified, state_lock
from lakewarden.timestamps import from_spark

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import Future

    from lakewarden.inventories.cut import CutFiles
    from lakewarden.inventory import Considered, LocatedReport
    from lakewarden.jobs.common import StartingJob
    from lakewarden.jobs.options import RunOptions
    from lakewarden.stores import StoreOptions

log = logging.getLogger(__name__)

JOB = "gc-uncommitted"
MARK_MODELS = "+gc_uncommitted_run +gc_uncommitted_read_ranges +gc_uncommitted_entry_keys"
DEFAULT_MIN_AGE = "24h"
#: Below this, objects still being uploaded (lakeFS upload tokens, multipart uploads) could go.
MIN_SAFE_AGE = timedelta(hours=1)
#: Storage stamps objects by its clock, lakeFS stamps commits by its own. An object a commit
#: references may carry a storage time a little later than the commit's; the next optimized run
#: must not take it for an object written after this run (its range is not read again), so the
#: cutoff lies this far past the Last Commit.
STORAGE_CLOCK_SKEW = CLOCK_SKEW
RUNS = "gc_uncommitted_runs"  # a state table (lakewarden.state_tables), kept across runs
RUNS_TABLE = qualified(RUNS)
PREVIOUS_INVENTORY = "gc_uncommitted_previous_inventory"
PREVIOUS_RANGES = "gc_uncommitted_previous_ranges"
PREVIOUS_INVENTORY_TABLE = f"{SNAPSHOT_SCHEMA}.{PREVIOUS_INVENTORY}"
PREVIOUS_RANGES_TABLE = f"{SNAPSHOT_SCHEMA}.{PREVIOUS_RANGES}"
PREVIOUS_ENTRY_KEYS = "gc_uncommitted_previous_entry_keys"
PREVIOUS_ENTRY_KEYS_TABLE = f"{SNAPSHOT_SCHEMA}.{PREVIOUS_ENTRY_KEYS}"
#: a run's entry keys (gc_uncommitted_entry_keys) beside its outputs, and the runs whose entry
#: keys together cover every range it has read (its own last): :func:`kept_entry_key_runs`
ENTRY_KEYS_DIR = "entry_keys"
ENTRY_KEY_RUNS_FILE = "entry_keys.json"
#: how many runs' entry keys an optimized run reads at most; the run after keys every range of
#: the snapshot again (as a clean run does) and starts a new chain, so a namespace collected
#: daily never reads hundreds of small directories
MAX_ENTRY_KEY_RUNS = 16
#: what the page's "kept" ages count for this job
KEPT_UNCOMMITTED_NOTE = (
    "kept: uncommitted objects this run considered and keeps (staged, younger than --min-age, or not deletable); "
    "committed objects are always kept and not counted here"
)
STORAGE_TABLE = f"{SNAPSHOT_SCHEMA}.storage_inventory"
#: views an optimized run computes once as tables: its candidates (the previous inventory's
#: objects storage still holds, and those written since) are read by the key list of objects
#: written since, the entries referencing them and the inventory, where a clean run reads them
#: once. As a view they were computed in each (the storage table and the previous inventory
#: read three times): 8.45M stored objects, 1% churn, 2 cores, the optimized run's models 15.8 s
#: against 19.6 s (and its whole process 34.2-35.4 s against 36.8 s)
#: The references it subtracts (the entries of the ranges it reads, and those of objects written
#: since) are computed as tables too: their files' size is what Spark plans the subtraction by. As
#: views over the snapshot's entries they looked as large as every entry, so Spark planned
#: shuffle joins, moving every candidate (937,000 rows, 186 MiB, at 8.45M stored objects) twice
#: before finding the references small enough to broadcast; as tables of the few they hold they
#: are broadcast from the start. Large references (an optimized run after many commits) stay a
#: shuffle join: the driver never holds more than Spark's broadcast threshold of them.
OPTIMIZED_TABLES = (
    "int_gc_uncommitted__candidate_objects",
    "int_gc_uncommitted__committed_references",
    "int_gc_uncommitted__rewritten_references",
)


def register(kinds: argparse._SubParsersAction) -> None:
    parser = kinds.add_parser(
        "uncommitted",
        help="uncommitted GC: delete objects no commit and no staged entry references",
        description="Uncommitted GC (lakeFS semantics): storage inventory minus every committed and staged "
        "entry, minus objects younger than --min-age. A clean run, or an optimized one when a successful "
        "previous run exists. Dry run with --dry-run, then 'lakewarden sweep --report DIR'.",
    )
    add_job_options(parser)
    add_uncommitted_options(parser)
    parser.set_defaults(func=run_uncommitted)


def add_uncommitted_options(parser: argparse.ArgumentParser) -> None:
    """Uncommitted GC's own options (``gc uncommitted`` and ``gc``)."""
    parser.add_argument(
        "--inventory",
        metavar="MANIFEST",
        help="an inventory report's manifest: S3 Inventory manifest.json, Azure Blob Inventory "
        "*-manifest.json or GCS Storage Insights *_manifest.json (a path, or a URI on the store: "
        "s3://, https://ACCOUNT.blob.core.windows.net/..., gs://); default: list the namespace",
    )
    parser.add_argument("--min-age", default=DEFAULT_MIN_AGE, metavar="DURATION", help="never touch objects younger than this (default 24h; below 1h needs --force)")
    parser.add_argument("--clean", action="store_true", help="force a clean run even when a previous run exists")
    parser.add_argument("--force", action="store_true", help="allow --min-age below 1h")


def parse_min_age(text: str, *, force: bool = False) -> timedelta:
    """``--min-age``: a duration (lakewarden.durations), at least 1h unless ``--force``."""
    duration = parse_duration(text, field="--min-age", allow_zero=True)
    if duration < MIN_SAFE_AGE and not force:
        raise BadInput(
            f"{text} is below 1h: objects still being uploaded could be deleted; pass --force if you mean it",
            field="--min-age",
        )
    return duration


@dataclass(frozen=True)
class PreviousRun:
    run_id: str
    run_at: datetime
    storage_cutoff: datetime
    last_commit_id: str | None
    last_commit_created_at: datetime | None
    uncommitted_inventory_location: str
    scanned_ranges_location: str
    inventory_fingerprint: str | None = None


@dataclass(frozen=True)
class UncommittedGcResult:
    report: Report
    run_mode: str
    mode_reason: str
    output_dir: Path
    run: dict[str, Any]
    num_marked: int
    bytes_marked: int


@dataclass(frozen=True)
class UncommittedGcOptions:
    """Uncommitted GC's own options (``gc uncommitted`` and ``gc``), for the Python API."""

    #: an inventory report's manifest (S3 Inventory, Azure Blob Inventory, GCS Storage
    #: Insights; a path or a URI on the store); None: list the namespace
    inventory: str | None = None
    #: never touch objects younger than this (a duration: ``24h``, ``90m``...; below 1h needs ``force``)
    min_age: str = DEFAULT_MIN_AGE
    #: allow ``min_age`` below 1h
    force: bool = False
    #: a clean run even when a previous run exists
    clean: bool = False


def uncommitted_options_from_args(args: argparse.Namespace) -> UncommittedGcOptions:
    """:func:`add_uncommitted_options` as :class:`UncommittedGcOptions`."""
    return UncommittedGcOptions(inventory=args.inventory, min_age=args.min_age, force=args.force, clean=args.clean)


@dataclass(frozen=True)
class UncommittedInputs:
    """What the uncommitted GC reads besides the snapshot, validated before Spark starts."""

    min_age: timedelta
    store_options: "StoreOptions"


class UncommittedGc(Job[UncommittedGcOptions, UncommittedInputs, "UncommittedGcResult"]):
    """Uncommitted GC in the one job shape (lakewarden.jobs.shape)."""

    name = JOB

    def read_inputs(self, options: UncommittedGcOptions, run: "RunOptions") -> UncommittedInputs:
        min_age = parse_min_age(options.min_age, force=options.force)  # before Spark starts
        return UncommittedInputs(min_age, run.store)

    def prepare(self, options: UncommittedGcOptions, inputs: UncommittedInputs, starting: "StartingJob") -> "StorageStart":
        return prepare_storage(starting, manifest=options.inventory, min_age=inputs.min_age, clean=options.clean, store_options=inputs.store_options)

    def mark(self, context: JobContext, inputs: UncommittedInputs, options: UncommittedGcOptions) -> "UncommittedGcResult":
        # the run history is read (the previous run), then appended: one writer at a time
        with state_lock(context.state, f"uncommitted GC run {context.run_id}"):
            return mark_uncommitted(
                context,
                manifest=options.inventory,
                min_age=inputs.min_age,
                clean=options.clean,
                report_dir=context.report_dir,
                store_options=inputs.store_options,
                start=context.prepared,
            )

    def describe(self, marked: "UncommittedGcResult") -> list[str]:
        return describe_result(marked)


def run_uncommitted(args: argparse.Namespace) -> int:
    return run_job(UncommittedGc(), run_options_from_args(args), uncommitted_options_from_args(args)).exit_status


def output_base(context: JobContext) -> Path:
    """``<ns>/_lakefs/retention/gc/uncommitted`` for a local namespace; under the state dir for a
    remote one (this Spark has no S3 filesystem to write outputs with)."""
    return context.output_dir("gc", "uncommitted")


def read_storage(
    context: JobContext, report: "LocatedReport | None", options: "StoreOptions", considered: "Considered | None" = None,
) -> tuple["Callable[[], Any]", datetime]:
    """What storage holds under the namespace, as a function giving its rows, and when it was
    observed: the inventory ``report`` (S3 Inventory, Azure Blob Inventory or a GCS inventory
    report, located and validated by :func:`locate_storage_report`: its files fetched, its
    manifest read once), else a listing of the namespace through its store
    (:func:`lakewarden.stores.store_for`: S3, Azure, GCS, local disk). A report is read when
    its rows are asked for (:func:`write_storage_beside`, beside the models); a listing is
    listed here.

    ``considered``: an optimized run's cut (:class:`lakewarden.inventory.Considered`). Storage
    was observed when the report was taken (S3 ``creationTimestamp``, Azure
    ``inventoryCompletionTime``, GCS ``snapshot_time``), or now when its manifest does not say
    and for a listing.
    """
    from lakewarden.inventory import prepare_storage_inventory, report_rows

    namespace = context.snapshot.repository.storage_namespace
    observed_at = datetime.now(timezone.utc)
    if report is not None:
        storage = report_rows(context.spark, report, namespace, considered)
        return storage, report.created or observed_at
    storage = prepare_storage_inventory(
        context.spark, namespace, None, store_options=options, local_blockstore=context.local_blockstore,
        considered=considered,
    )
    return storage, observed_at


def find_previous_run(context: "JobContext | StartingJob", key: str) -> tuple[PreviousRun | None, str]:
    """The last successful run on this namespace usable as a base, and why (not). The run
    history and the snapshot's commits are read with pyarrow from their Parquet files: a few
    rows need no Spark job (two queries cost 1.7 s of every optimized run, the process's first).
    While the JVM boots (a :class:`~lakewarden.jobs.common.StartingJob`) a Last Commit that only
    Spark could look up is no base."""
    from lakewarden.state_tables import state_rows

    runs = [row for row in state_rows(context.state, RUNS) if row["storage_namespace"] == key]
    if not runs:
        return None, "no previous run"
    # the latest by finish time, then run id (runs finished in the same microsecond: any order)
    row = max(runs, key=lambda r: (r["finished_at"] or datetime.min.replace(tzinfo=timezone.utc), r["run_id"] or ""))
    previous = PreviousRun(
        run_id=row["run_id"],
        run_at=row["run_at"],
        storage_cutoff=row["storage_cutoff"],
        last_commit_id=row["last_commit_id"],
        last_commit_created_at=row["last_commit_created_at"],
        uncommitted_inventory_location=row["uncommitted_inventory_location"],
        scanned_ranges_location=row["scanned_ranges_location"],
        inventory_fingerprint=row["inventory_fingerprint"],
    )
    if previous.run_at is None or previous.storage_cutoff is None:
        return None, f"previous run {previous.run_id} has no clock recorded"
    if context.now < previous.run_at:
        return None, f"--now is before the previous run's clock ({rfc3339(previous.run_at)})"
    for location in (previous.uncommitted_inventory_location, previous.scanned_ranges_location):
        if not location or not (Path(location) / "_SUCCESS").is_file():
            return None, f"previous run {previous.run_id}'s output {location} is missing"
    if previous.last_commit_id is not None:
        held = context.has_commit(previous.last_commit_id)
        if held is None:
            return None, f"previous run's Last Commit {previous.last_commit_id}: its snapshot table is not read without Spark"
        if not held:
            return None, f"previous run's Last Commit {previous.last_commit_id} is not in the snapshot"
    return previous, f"previous run {previous.run_id} (Last Commit {previous.last_commit_id})"


#: Whether an optimized run keeps only the considered objects of a *listing* before writing it
#: (:class:`lakewarden.inventory.Considered`). An inventory report always is, before its rows
#: are checked: at 1M rows and 1% churn the checks and the write take a tenth. A listing is
#: written as listed: it comes from the store's list calls, which cost far more than writing
#: what they return, and on a small namespace the extra join cost 1.5 s of a 20 s run (the
#: demo's sample). Either form marks the same objects: the models make the same test
#: (``int_gc_uncommitted__candidate_objects``: the same cutoff literal, the same raw address;
#: tests exercise both).
KEEP_CONSIDERED_OF_LISTINGS = False


def considered_of(spark: Any, previous: PreviousRun, cut: "CutFiles | None" = None) -> "Considered":
    """The stored objects an optimized run considers: (b) those written after the previous
    run's cutoff, and (a) those the previous uncommitted inventory lists. Every other object
    was referenced by a range a previous run read, and is not a candidate either way. ``cut``:
    the report cut to them already, in the driver, while the JVM booted (:func:`prepare_storage`)."""
    from lakewarden.inventory import Considered

    previous_addresses = spark.table(PREVIOUS_INVENTORY_TABLE).select("physical_address")
    return Considered(
        cutoff=previous.storage_cutoff, previous=previous_addresses, previous_location=Path(previous.uncommitted_inventory_location),
        cut=cut,
    )


@dataclass(frozen=True)
class StorageStart:
    """What an uncommitted run settles about storage while its JVM boots (:func:`prepare_storage`):
    the inventory report validated and its data files fetched, and for an optimized run that
    continues ``previous_run_id`` from a new Parquet report, the report cut in the driver to the
    objects it considers (lakewarden.inventories.cut). It is read before the state lock is taken:
    :func:`mark_uncommitted` uses the cut only when, under the lock, the previous run is the same."""

    previous_run_id: str | None = None
    report: "LocatedReport | None" = None
    cut: "CutFiles | None" = None


def locate_storage_report(
    manifest: str, storage_namespace: str, options: "StoreOptions", *, now: datetime, min_age: timedelta
) -> "LocatedReport":
    """The inventory report at ``manifest`` validated and located (:func:`lakewarden.inventory.locate_report`):
    its manifest read once, for its checks, its fingerprint and when it was taken."""
    from lakewarden.inventory import locate_report

    return locate_report(
        manifest, storage_namespace, s3_options=options.s3_client_options(), store_options=options, now=now, min_age=min_age
    )


def prepare_storage(
    starting: "StartingJob", *, manifest: str | None, min_age: timedelta, clean: bool, store_options: "StoreOptions"
) -> StorageStart:
    """The storage side of a run that takes no Spark, done while the JVM boots: the report at
    ``manifest`` located (validated: bad input exits 2 here, before the JVM is waited for; remote
    data files fetched) and, when the run will continue a previous run from a report other than
    that run's, cut to what it considers (1M report rows: 0.5-1.2 s that no longer compete with
    the models for the cores and the interpreter). A listing is made later, on Spark."""
    from lakewarden.inventory import cut_report

    if not manifest:
        return StorageStart()
    namespace = starting.storage_namespace
    report = locate_storage_report(manifest, namespace, store_options, now=starting.now, min_age=min_age)
    previous = None if clean else find_previous_run(starting, namespace_key(namespace))[0]
    if previous is None or previous.inventory_fingerprint == report.fingerprint:
        return StorageStart(None, report)  # a clean run, or the same report again: no cut
    cut = cut_report(report, cutoff=previous.storage_cutoff, previous_location=Path(previous.uncommitted_inventory_location))
    return StorageStart(previous.run_id, report, cut)


def previous_inventory(spark: Any) -> Any:
    """What an optimized run given its previous run's inventory report again considers of storage:
    that run's uncommitted inventory, without reading the report's data files. Storage was
    observed at the same moment, so (a) is all of that inventory; and every object of the report
    that inventory leaves out was referenced by a range some run read (it would be left out of
    (b) again, by the check against every entry). When the previous run's cutoff lies before an
    earlier run's (a --now or a report going back in time), the report may hold objects no run
    considered; they wait for the next report or a --clean run, never marked by mistake."""
    return spark.table(PREVIOUS_INVENTORY_TABLE).select("physical_address", "size", "last_modified")


def kept_entry_key_runs(previous: PreviousRun) -> tuple[list[Path] | None, str]:
    """The entry keys directories whose union holds the key of every entry of every range the
    previous run had read (itself, or inherited from the runs before it), and why (not).

    Each run saves its ``gc_uncommitted_entry_keys`` beside its outputs and, after them, the
    list of runs whose keys cover every range it has read (``entry_keys.json``): its own alone
    when it keyed every range (a clean run; a chain broken or grown long), else the previous
    run's list and its own (the ranges it read itself). Ranges never change, so a range's keys
    stay true for good. Any gap (a run from before entry keys were kept, a directory without its
    ``_SUCCESS``, an unreadable list) gives None: the run then keys every entry itself, as
    before, and starts a new chain."""
    import json

    directory = Path(previous.uncommitted_inventory_location).parent
    listing = directory / ENTRY_KEY_RUNS_FILE
    try:
        runs = json.loads(listing.read_text(encoding="utf-8"))["runs"]
    except FileNotFoundError:
        return None, f"previous run {previous.run_id} kept no entry keys"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"previous run {previous.run_id}'s {listing.name} is unreadable ({exc})"
    if not isinstance(runs, list) or not runs or not all(isinstance(run, str) and run and "/" not in run and run not in (".", "..") for run in runs):
        return None, f"previous run {previous.run_id}'s {listing.name} lists no runs"
    locations = [directory.parent / run / ENTRY_KEYS_DIR for run in runs]
    for location in locations:
        if not (location / "_SUCCESS").is_file():
            return None, f"entry keys {location} are missing"
    return locations, f"the entry keys of {len(locations)} run(s)"


def _point_entry_keys(spark: Any, locations: list[Path] | None) -> None:
    """The previous runs' entry keys as one source (a view over a table per directory, each
    declared with the source's column: an empty directory reads as no rows, and no job infers
    a schema); empty when there are none."""
    from lakewarden.snapshot import source_ddl

    ddl = source_ddl("lakewarden", PREVIOUS_ENTRY_KEYS)
    if not locations:
        _point_table(spark, PREVIOUS_ENTRY_KEYS_TABLE, ddl, None)
        return
    parts = []
    for number, location in enumerate(locations):
        part = f"{PREVIOUS_ENTRY_KEYS_TABLE}_{number}"
        _point_table(spark, part, ddl, str(location))
        parts.append(f"select address_key from {part}")
    spark.sql(f"drop table if exists {PREVIOUS_ENTRY_KEYS_TABLE}")
    spark.sql(f"create or replace view {PREVIOUS_ENTRY_KEYS_TABLE} as " + " union all ".join(parts))


def _point_table(spark: Any, table: str, ddl: str, location: str | None) -> None:
    """(Re)create a runner-written source table: external over ``location``, or empty. Declared
    with the source's columns, so neither the models nor the runner reading it (the previous
    inventory: :func:`considered_of`, :func:`previous_inventory`) start a job to infer them from
    its files' footers (0.3 s of an optimized run's start at 1M objects)."""
    spark.sql(f"drop table if exists {table}")
    where = "" if location is None else " location '" + str(location).replace("\\", "\\\\").replace("'", "\\'") + "'"
    spark.sql(f"create table {table} ({ddl}) using parquet{where}")


#: dbt's id of the storage inventory source: the models reading it wait for its write
STORAGE_SOURCE = source_id("lakewarden", "storage_inventory")


@contextmanager
def write_storage_beside(spark: Any, storage: "Callable[[], Any]") -> Iterator[dict[str, "Future[None]"]]:
    """Write what storage holds (``storage()``: the inventory report read and cut, or listed) as
    the storage inventory table in a thread of its own, and give the build its future
    (:meth:`~lakewarden.runtime.compiled_models.ModelRunner.build`'s ``awaiting``): the models
    that do not read storage (the ranges listed and read, the entries of the ranges read, their
    keys, the staged entries) run meanwhile, and the models reading storage start once it is
    written. A clean run gains most (8.45M objects, runs in turn: 50.9-54.4 s against
    54.2-59.7 s with the write first). A report is read and cut in this thread too (validated
    before), so an optimized run's cut in the driver (lakewarden.inventories.cut) runs beside
    the models as well. A failed write (a report's data file missing) fails the build with its
    own error; leaving the block waits for the write, so nothing outlives it."""
    from concurrent.futures import ThreadPoolExecutor

    def write() -> None:
        spark.sparkContext.setJobDescription("lakewarden storage inventory")
        try:
            storage().write.mode("overwrite").format("parquet").saveAsTable(STORAGE_TABLE)
        finally:
            spark.sparkContext.setJobDescription(None)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lakewarden-storage") as pool:
        written = pool.submit(write)
        yield {STORAGE_SOURCE: written}
        written.result()  # written, or its error raised (a build that never needed it included)


def mark_uncommitted(
    context: JobContext,
    *,
    manifest: str | None = None,
    min_age: timedelta = timedelta(hours=24),
    clean: bool = False,
    report_dir: Path | None = None,
    s3_options: Mapping[str, Any] | None = None,
    store_options: "StoreOptions | None" = None,
    figures: bool = True,
    start: StorageStart | None = None,
) -> UncommittedGcResult:
    """Mark: read storage, run the models, write outputs, report and history; delete nothing.

    ``store_options`` reach the namespace's store (any store); ``s3_options`` are the older
    S3-only form, used when ``store_options`` is not given. ``figures=False``: no report figures
    (``lakewarden gc`` draws them once, over both marks). ``start``: what
    :func:`prepare_storage` settled while the JVM booted (None: all of it is done here)."""
    from pyspark.sql import functions as F

    from lakewarden.snapshot import source_ddl
    from lakewarden.stores import StoreOptions

    spark = context.spark
    repository = context.snapshot.repository
    options = store_options or StoreOptions.from_s3_options({k: v for k, v in (s3_options or {}).items() if v is not None})
    key = namespace_key(repository.storage_namespace)

    # Validate every input before anything is written: a bad manifest exits 2 and changes nothing,
    # and a snapshot that lacks a commit lakeFS's own GC keeps marks nothing (exit 1).
    context.check_lakefs_holds()
    previous, mode_reason = (None, "--clean") if clean else find_previous_run(context, key)
    mode = "optimized" if previous is not None else "clean"
    # the previous run's outputs as the source tables the models read (and the runner, below);
    # their columns as the sources declare them (models/sources.yml, lakewarden.snapshot.source_ddl)
    _point_table(spark, PREVIOUS_INVENTORY_TABLE, source_ddl("lakewarden", PREVIOUS_INVENTORY),
                 previous.uncommitted_inventory_location if previous else None)
    _point_table(spark, PREVIOUS_RANGES_TABLE, source_ddl("lakewarden", PREVIOUS_RANGES),
                 previous.scanned_ranges_location if previous else None)
    # the keys of the entries of every range read before, when the previous runs kept them all
    key_runs, keys_reason = kept_entry_key_runs(previous) if previous is not None else (None, "")
    # this run keys only the ranges it reads when it continues that chain, else every range
    continues_keys = key_runs is not None and len(key_runs) < MAX_ENTRY_KEY_RUNS
    _point_entry_keys(spark, key_runs)
    if previous is not None:
        mode_reason += f"; {keys_reason}"
    start = start if isinstance(start, StorageStart) else StorageStart()
    # the report located (validated, its manifest read once) while the JVM booted, else now:
    # a bad report exits 2 here, before anything is written
    located = start.report
    if manifest and located is None:
        located = locate_storage_report(manifest, repository.storage_namespace, options, now=context.now, min_age=min_age)
    fingerprint = located.fingerprint if located is not None else None
    same_report = previous is not None and fingerprint is not None and previous.inventory_fingerprint == fingerprint
    # an optimized run reads only what it considers of a new report (a plan: nothing is read
    # yet); a report read before is checked again (its age against --now) and then replaced by
    # that run's uncommitted inventory, so no cut of it is planned
    cut = previous is not None and not same_report and (manifest or KEEP_CONSIDERED_OF_LISTINGS)
    # the cut made while the JVM booted, if it continued the run this one continues (read again
    # under the lock: another run may have finished in between)
    made = start.cut if previous is not None and start.previous_run_id == previous.run_id else None
    considered = considered_of(spark, previous, made) if cut and previous is not None else None
    storage, observed_at = read_storage(context, located, options, considered)
    if same_report:
        assert previous is not None
        mode_reason += "; the same inventory report: its rows are that run's uncommitted inventory"

    base = output_base(context)
    output_dir = base / context.run_id
    directory = Path(report_dir) if report_dir else output_dir / "report"
    report = context.create_report(
        directory,
        run_mode=mode,
        run_mode_reason=mode_reason,
        min_age_seconds=int(min_age.total_seconds()),
        inventory=manifest,
        output_dir=str(output_dir),
    )
    try:
        phases = PhaseClock()
        if same_report:
            assert previous is not None

            def storage() -> Any:
                return previous_inventory(spark)
        variables: dict[str, Any] = {
            "gc_uncommitted_mode": mode,
            "gc_uncommitted_min_age_seconds": int(min_age.total_seconds()),
        }
        if previous is not None:
            variables["gc_uncommitted_storage_cutoff"] = rfc3339(previous.storage_cutoff)
            # storage holds only what this run considers already (the report cut by the same
            # test, or that run's uncommitted inventory): the models do not test it again
            variables["gc_uncommitted_storage_considered"] = bool(considered is not None or same_report)
            if previous.last_commit_created_at is not None:
                variables["gc_uncommitted_previous_last_commit_at"] = rfc3339(previous.last_commit_created_at)
            # objects written since are tested against the kept keys of the ranges read before
            variables["gc_uncommitted_kept_entry_keys"] = key_runs is not None
            variables["gc_uncommitted_entry_keys_continue"] = continues_keys
        # an optimized run's candidates are read by three queries (the keys written since, the
        # entries referencing them, the inventory): computed once (OPTIMIZED_TABLES). Storage is
        # written beside the models that do not read it (write_storage_beside)
        with write_storage_beside(spark, storage) as written:
            context.build_models(
                MARK_MODELS, as_tables=OPTIMIZED_TABLES if previous is not None else (), awaiting=written, **variables
            )
        phases.lap("storage_inventory_and_models")
        run = context.table("gc_uncommitted_run").first().asDict()
        marked = context.table("gc_uncommitted_marked_addresses")
        # kept: the uncommitted objects this run considered and keeps (staged, younger than
        # --min-age, or not deletable); the committed ones are kept by definition and not read
        # again for a figure. Marked objects are on no commit: no branch to trace.
        kept = (
            context.table("gc_uncommitted_inventory")
            .join(marked.select("physical_address"), "physical_address", "left_anti")
            .select(F.col("last_modified_at").alias("earliest_modified_at"), "size_bytes")
        )

        def draw() -> None:
            write_figures(
                report.directory, context.spark, job=JOB, marked=marked, snapshot_schema=SNAPSHOT_SCHEMA, now=context.now,
                kept=kept, kept_note=KEPT_UNCOMMITTED_NOTE, on_commits=False,
            )

        # lakeFS-style outputs: the uncommitted inventory file, the ranges read, what was marked;
        # the report's figures are drawn beside them (one phase: they overlap)
        inventory_dir = output_dir / "uncommitted"
        ranges_dir = output_dir / "ranges"
        with drawn_beside(draw if figures else None):
            report.write_addresses(
                marked.select("address", "address_type", "physical_address", "size_bytes", "last_modified_at", "candidate_source")
            )
            context.table("gc_uncommitted_inventory").select(
                "physical_address", F.col("size_bytes").alias("size"), F.col("last_modified_at").alias("last_modified")
            ).write.mode("overwrite").parquet(str(inventory_dir))
            context.table("gc_uncommitted_read_ranges").select("range_id").write.mode("overwrite").parquet(str(ranges_dir))
            marked.select("address").write.mode("overwrite").parquet(str(output_dir / "deleted"))
            # the keys of the entries of the ranges this run keyed, then the runs whose keys
            # cover every range it has read: the next optimized run's test of objects written since
            context.table("gc_uncommitted_entry_keys").write.mode("overwrite").parquet(str(output_dir / ENTRY_KEYS_DIR))
        key_chain = [location.parent.name for location in key_runs or ()] if continues_keys else []
        write_json_atomic(output_dir / ENTRY_KEY_RUNS_FILE, {"runs": [*key_chain, context.run_id]})
        phases.lap("report_and_outputs")
        last_commit_at = from_spark(run["last_commit_created_at"])
        bound = min(context.now, observed_at)
        cutoff = max(bound, last_commit_at + STORAGE_CLOCK_SKEW) if last_commit_at is not None else bound
        # the same read counts as lifecycle's summary: here every range read is one the
        # previous run had not read (new); no rule judges entries by age, so none is "crossed"
        read = int(run["newly_read_ranges"] or 0)
        run.update(
            ranges_new=read,
            ranges_crossed=0,
            ranges_read=read,
            run_at=rfc3339(context.now),
            last_commit_created_at=rfc3339(last_commit_at) if last_commit_at else None,
            storage_observed_at=rfc3339(observed_at),
            storage_cutoff=rfc3339(cutoff),
            previous_run_id=previous.run_id if previous else None,
            previous_storage_cutoff=rfc3339(previous.storage_cutoff) if previous else None,
            uncommitted_inventory_location=str(inventory_dir),
            scanned_ranges_location=str(ranges_dir),
            inventory_fingerprint=fingerprint,
            storage_read="previous uncommitted inventory (same inventory report)" if same_report else ("inventory report" if manifest else "listing"),
            mark_seconds=phases.elapsed(),
            phase_seconds=phases.pairs(),
        )
        write_json_atomic(output_dir / "summary.json", {**run, "dry_run": context.dry_run, "report": str(report.directory)})
        num_marked = int(run["marked_objects"] or 0)
        bytes_marked = int(run["marked_bytes"] or 0)
        _append_history(context, key, run, mode, observed_at, cutoff, last_commit_at, min_age, num_marked)
        report.update(
            num_marked=num_marked,
            bytes_marked=bytes_marked,
            **{k: v for k, v in run.items() if k not in ("run_id", "run_mode", "marked_objects", "marked_bytes")},
        )
        report.finish(success=True, status="marked" if context.dry_run else "marked, sweep pending")
        return UncommittedGcResult(report, mode, mode_reason, output_dir, run, num_marked, bytes_marked)
    except BadInput:
        report.finish(success=False, status="failed", error="bad input")
        raise
    except Exception as exc:
        report.finish(success=False, status="failed", error=error_line(exc))
        raise


def _append_history(
    context: JobContext,
    key: str,
    run: Mapping[str, Any],
    mode: str,
    observed_at: datetime,
    cutoff: datetime,
    last_commit_at: datetime | None,
    min_age: timedelta,
    num_marked: int,
) -> None:
    """Append this run to the history (append only: never updated or deleted)."""
    row = (
        context.run_id,
        context.snapshot.repository.repository_id,
        key,
        mode,
        context.dry_run,
        context.now,
        observed_at,
        cutoff,
        run["last_commit_id"],
        last_commit_at,
        int(min_age.total_seconds()),
        run["uncommitted_inventory_location"],
        run["scanned_ranges_location"],
        num_marked,
        datetime.now(timezone.utc),
        run.get("inventory_fingerprint"),
    )
    append_rows(context.spark, context.state, RUNS, [row])


def describe_result(result: UncommittedGcResult) -> list[str]:
    summary = result.report.summary
    run = result.run
    kind = "dry run" if summary["dry_run"] else "run"
    return [
        f"uncommitted GC {result.run_mode} {kind} {summary['run_id']} at {summary['now']} ({result.mode_reason}): "
        f"Last Commit {run.get('last_commit_id')}, {run.get('newly_read_ranges')} of {run.get('listed_ranges')} ranges read; "
        f"{run.get('uncommitted_objects')} uncommitted objects ({run.get('staged_objects')} staged, "
        f"{run.get('too_young_objects')} younger than --min-age); {result.num_marked} marked ({result.bytes_marked} bytes)",
        f"uncommitted inventory: {run.get('uncommitted_inventory_location')}",
    ]


__all__ = ["register", "parse_min_age", "mark_uncommitted", "namespace_key", "read_storage", "run_uncommitted"]
