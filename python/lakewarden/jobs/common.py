"""What every job shares: its options (docs/contract.md §1), the clock, run ids, Spark start-up
and snapshot loading. Everything here validates before anything is written or deleted."""

from __future__ import annotations

import argparse
import json
import logging
import re
import secrets
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterator, Mapping, Sequence

from lakewarden.blockstore import blockstore_root
from lakewarden.errors import BadInput
from lakewarden.lakefs_answer import LakeFSKept, read_lakefs_kept
from lakewarden.runtime.spark_session import (
    SparkStarter,
    is_small_snapshot,
    jit_mode,
    ranges_bytes,
    small_form_for,
    suit_session_to_size,
)
from lakewarden.runtime.state_dir import add_state_option, state_dir
from lakewarden.timestamps import parse_rfc3339, rfc3339

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import Future

    from pyspark.sql import SparkSession

    from lakewarden.runtime.compiled_models import BuildResult, ModelRunner
    from lakewarden.reports.directory import Report
    from lakewarden.snapshot import LoadedSnapshot
    from lakewarden.snapshot.check import CheckedSnapshot
    from lakewarden.jobs.options import RunOptions

log = logging.getLogger(__name__)

# A --now later than this machine's clock by more than this is refused outside dry runs:
# a clock in the future would expire objects before their time.
CLOCK_SKEW = timedelta(minutes=5)
SNAPSHOT_SCHEMA = "lakewarden_snapshot"
MODEL_SCHEMA = "lakewarden"


def add_job_options(parser: argparse.ArgumentParser) -> None:
    from lakewarden.extract.cli import add_lakefs_arguments
    from lakewarden.stores.options import add_store_arguments

    parser.add_argument(
        "--snapshot", type=Path, help="repository snapshot directory (docs/contract.md section 2); or --lakefs-endpoint/--repo"
    )
    add_lakefs_arguments(parser)
    # where the namespace's store is (S3, Azure, GCS, lakeFS's local blockstore): extract,
    # listing, inventories and the sweep all reach it with these
    add_store_arguments(parser)
    parser.add_argument("--now", help="the job's clock, RFC 3339 with offset (default: now)")
    parser.add_argument("--dry-run", action="store_true", help="compute and write the report; delete nothing")
    parser.add_argument("--report", type=Path, help="report directory (default under <namespace>/_lakefs/retention/...)")
    add_state_option(parser, "the run's warehouse, the state tables kept across runs, the run history")


def parse_now(text: str | None, *, dry_run: bool, wall_clock: datetime | None = None) -> datetime:
    """``--now``: an RFC 3339 time with an offset, in UTC (:func:`check_clock`); the current
    time when absent."""
    return check_clock(None if text is None else parse_rfc3339(text, field="--now"), dry_run=dry_run, wall_clock=wall_clock)


def check_clock(moment: datetime | None, *, dry_run: bool, wall_clock: datetime | None = None) -> datetime:
    """The job's clock: ``moment`` in UTC, or the current time when None. Later than this
    machine's clock (by more than :data:`CLOCK_SKEW`) only in a dry run: a clock in the future
    would expire objects before their time."""
    wall = wall_clock or datetime.now(timezone.utc)
    if moment is None:
        return wall
    moment = moment.astimezone(timezone.utc)
    if moment > wall + CLOCK_SKEW and not dry_run:
        raise BadInput(
            f"{rfc3339(moment)} is in the future of this machine's clock ({wall.isoformat()}); "
            "only a --dry-run may look ahead",
            field="--now",
        )
    return moment


def run_options_from_args(args: argparse.Namespace) -> "RunOptions":
    """The command line's :func:`add_job_options` as the API's :class:`RunOptions` (the one
    place a job's parsed arguments become values). A malformed option is bad input (exit 2)."""
    from lakewarden.extract.cli import lakefs_source_from_args
    from lakewarden.jobs.options import RunOptions
    from lakewarden.stores.options import store_options_from_args

    store = store_options_from_args(args)  # a malformed store option: exit 2 before Spark starts
    return RunOptions(
        snapshot=args.snapshot,
        lakefs=lakefs_source_from_args(args),
        now=None if args.now is None else parse_rfc3339(args.now, field="--now"),
        dry_run=args.dry_run,
        report=args.report,
        state=Path(args.state) if args.state else None,
        store=store,
    )


def namespace_key(storage_namespace: str) -> str:
    """The namespace root as the models normalise it (scheme aliases, slashes folded, no trailing
    slash): run history (uncommitted GC's, lifecycle's) is looked up by it."""
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*://)?(.*)$", storage_namespace.rstrip("/"))
    assert match is not None
    scheme = re.sub(r"^s3[an]://", "s3://", (match.group(1) or "").lower())
    return scheme + re.sub(r"/{2,}", "/", match.group(2))


def new_run_id(job: str) -> str:
    """Unique, sortable run id: job, wall-clock time, random suffix."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{job}-{stamp}-{secrets.token_hex(3)}"


@dataclass
class JobContext:
    job: str
    run_id: str
    now: datetime
    dry_run: bool
    state: Path
    spark: "SparkSession"
    snapshot: "LoadedSnapshot"
    #: lakeFS's own GC answer kept with the snapshot by extract (None when there is none)
    lakefs_kept: LakeFSKept | None = None
    #: the lakeFS server's blockstore.local.path, for a local:// namespace (None otherwise)
    local_blockstore: str | None = None
    snapshot_dir: Path | None = None
    #: the snapshot's files' fingerprint (lakewarden.snapshot.check): same files, same value
    snapshot_fingerprint: str | None = None
    #: executes the compiled models; remembers what this run built (lakewarden.runtime.compiled_models)
    models: "ModelRunner | None" = None
    #: the report directory asked for (None: the job's default under the namespace)
    report_dir: Path | None = None
    #: bytes of the snapshot's range rows (spark_session.ranges_bytes; None: unknown): the run's size
    ranges_bytes: int | None = None
    #: what the job prepared while its JVM booted (:meth:`lakewarden.jobs.shape.Job.prepare`)
    prepared: Any = None

    def report_fields(self) -> dict[str, str]:
        """Where the snapshot and the state dir are, for the summary: report.html and
        ``lakewarden explain`` read them after the run, without Spark; and, for a local://
        namespace, the blockstore directory the sweep deletes under."""
        fields = {"state_dir": str(self.state)}
        if self.local_blockstore is not None:  # the sweep's way to a local:// namespace
            fields["local_blockstore"] = self.local_blockstore
        if self.snapshot_dir is not None:
            fields["snapshot_dir"] = str(Path(self.snapshot_dir).resolve())
        return fields

    def output_dir(self, *parts: str) -> Path:
        """Where this job's outputs go (lakewarden.reports.directory.retention_dir)."""
        from lakewarden.reports.directory import retention_dir

        return retention_dir(self.storage_namespace, self.state, *parts)

    def create_report(self, directory: Path, **job_fields: Any) -> "Report":
        """This run's report directory, its summary saying the run started (``success: false``):
        the fields every job's summary has, then the job's own."""
        from lakewarden.reports.directory import Report

        repository = self.snapshot.repository
        return Report.create(
            directory,
            run_id=self.run_id,
            job=self.job,
            dry_run=self.dry_run,
            now=rfc3339(self.now),
            repository_id=repository.repository_id,
            storage_namespace=repository.storage_namespace,
            **self.report_fields(),
            **job_fields,
        )

    @property
    def storage_namespace(self) -> str:
        return self.snapshot.repository.storage_namespace

    def dbt_vars(self, **extra: object) -> dict[str, object]:
        # lakewarden_runner: the session already holds every source (on-run-start does nothing)
        return {
            "now": rfc3339(self.now),
            "run_id": self.run_id,
            "snapshot_schema": SNAPSHOT_SCHEMA,
            "lakewarden_runner": True,
            **extra,
        }

    def table(self, name: str):
        """A model's rows: its table, or where the runner holds it (a small snapshot's intermediates)."""
        return self.spark.table(self.model_runner().relation(f"{MODEL_SCHEMA}.{name}"))

    def branch_ids(self) -> list[str]:
        """The snapshot's branch names (a rule naming another branch is worth a warning), read
        with pyarrow from the checked snapshot's Parquet: a few names need no Spark job."""
        files = self.snapshot.table_files
        if "branches" in files:
            import pyarrow.parquet as pq

            return [str(name) for name in pq.read_table(files["branches"], columns=["branch_id"]).column("branch_id").to_pylist()]
        return [row[0] for row in self.spark.table(f"{SNAPSHOT_SCHEMA}.branches").select("branch_id").collect()]

    def has_commit(self, commit_id: str) -> bool:
        """Whether the snapshot holds ``commit_id``: read with pyarrow from the checked snapshot's
        Parquet (the commit_id column, filtered as it is read), else asked of Spark."""
        found = commit_in_parquet(self.snapshot.table_files.get("commits"), commit_id)
        if found is not None:
            return found
        from pyspark.sql import functions as F

        table = self.spark.table(f"{SNAPSHOT_SCHEMA}.commits")
        return table.where(F.col("commit_id") == commit_id).limit(1).count() > 0

    def check_lakefs_holds(self) -> None:
        """Refuse (exit 1) when a commit lakeFS's GC keeps is missing from the snapshot or has
        another metarange there (see lakewarden.lakefs_answer)."""
        if self.lakefs_kept is not None:
            from lakewarden.lakefs_answer import check_snapshot_holds_kept

            check_snapshot_holds_kept(self.spark, self.lakefs_kept, self.spark.table(f"{SNAPSHOT_SCHEMA}.commits"))

    def keep_range_windows(self) -> int:
        """Append the age windows this run computed (the ``new_range_windows`` mart) to the
        ``range_windows`` state table, so no later run on this state dir scans those ranges
        to learn them again. A range id names its content, so a kept window never goes stale;
        keeping it even for a run that fails later is right. Returns how many were kept."""
        from lakewarden.state_tables import append_frame

        new = self.table("new_range_windows").cache()
        try:
            count = new.count()
            if count:
                append_frame(self.spark, self.state, "range_windows", new)
            return count
        finally:
            new.unpersist()

    def end(self) -> None:
        """The run is over: what it made in the session for its own statements goes (the key
        lists' views and the held intermediates' views:
        :meth:`~lakewarden.runtime.compiled_models.ModelRunner.drop_key_lists`,
        :meth:`~lakewarden.runtime.compiled_models.ModelRunner.drop_held`), so that a
        long-lived session (the engine's, a notebook's) does not keep every run's."""
        if self.models is None:
            return
        try:
            self.models.drop_key_lists()
            self.models.drop_held()
        except Exception:  # noqa: BLE001 - a session gone with the run's own error: that error is the one to see
            log.warning("could not drop the run's key list and held views", exc_info=True)

    def model_runner(self) -> "ModelRunner":
        """This run's model runner, made on first use and kept (a node executed once is not
        executed again), :data:`~lakewarden.runtime.compiled_models.NODES_AT_ONCE` nodes at once.
        A large snapshot's run puts range lists in as literals; a small one's holds its
        intermediate tables in the session's memory instead of writing them (both forms:
        lakewarden.runtime.compiled_models)."""
        from lakewarden.runtime.compiled_models import NODES_AT_ONCE, ModelRunner

        if self.models is None:
            small = is_small_snapshot(self.ranges_bytes)
            self.models = ModelRunner(self.spark, range_lists=not small, concurrency=NODES_AT_ONCE, hold_intermediates=small)
        return self.models

    @contextmanager
    def form_for(self, rows: int | None) -> Iterator[bool]:
        """A stretch of the run in the form of the rows its queries read: at most
        :data:`~lakewarden.runtime.spark_session.SMALL_FORM_ROWS`, the small form's session
        settings (:func:`~lakewarden.runtime.spark_session.small_form_for`); at most
        :data:`~lakewarden.runtime.spark_session.HELD_ROWS` (the small form's rows among them),
        its intermediate tables held in memory (:meth:`ModelRunner.holding`). Yields whether
        they are held."""
        from lakewarden.runtime.spark_session import HELD_ROWS

        with small_form_for(self.spark, rows) as small:
            held = small or (rows is not None and rows <= HELD_ROWS)
            with self.model_runner().holding(held):
                yield held

    def build_models(
        self,
        selection: str,
        *,
        locations: "Mapping[str, Path] | None" = None,
        only_upstream_of: "Sequence[str] | None" = None,
        as_tables: "Collection[str]" = (),
        part: str = "all",
        awaiting: "Mapping[str, Future[Any]] | None" = None,
        **variables: object,
    ) -> "BuildResult":
        """Build a job's models with this run's variables, plus the singular safety tests whose
        parents are all among them (cautious selection: another job's safety test never runs on
        this job's partial build): dbt compiles them, lakewarden.runtime.compiled_models executes them
        on this session. Generic and unit tests run in CI's full ``dbt build``. A node an
        earlier build of this run executed with the same compiled code is not executed again.
        ``only_upstream_of``: build only those models and what they depend on (the selection is
        compiled whole, so a later build of the rest compiles nothing new). ``as_tables``: views
        this run computes once as tables (:meth:`ModelRunner.build`). ``part``: ``models`` builds
        the models only and ``tests`` then runs the safety tests (``all``: both), so a job can
        compute what only its report reads beside them (lakewarden.reports.figures.drawn_beside).
        ``awaiting``: sources the job is still writing, by dbt's unique id
        (:func:`~lakewarden.runtime.compiled_models.source_id`), each with its write's future:
        the models that read one wait for it, the others run meanwhile."""
        from lakewarden.runtime.compiled_models import compile_selection, upstream_of
        from lakewarden.runtime.project import SENT

        runner = self.model_runner()
        nodes = compile_selection(selection, state=self.state, variables=self.dbt_vars(**variables))
        whole = None
        if only_upstream_of is not None:
            whole = nodes
            nodes = upstream_of(nodes, only_upstream_of)
            selection = f"{selection} (up to {', '.join(only_upstream_of)})"
        if part not in ("all", "models", "tests"):
            raise ValueError(f"part must be all, models or tests, not {part!r}")
        if part == "models":
            whole = whole if whole is not None else nodes
            nodes = [node for node in nodes if node.resource_type != "test"]
        if part != "all":
            # the tests' part is the whole selection again: the models this run built are reused
            selection = f"{selection} ({'models' if part == 'models' else 'safety tests'})"
        result = runner.build(nodes, label=selection, locations=locations, selection=whole, as_tables=as_tables, awaiting=awaiting)
        SENT["queries"] += result.statements
        log.info(
            "models %s: %d executed, %d already built, %d statements in %.1fs",
            selection, len(result.executed), len(result.reused), result.statements, result.seconds,
        )
        return result


def resolve_snapshot(run: "RunOptions", state: Path) -> Path:
    """The snapshot directory, or a fresh extract of ``run.lakefs`` into ``STATE/snapshots/REPO``."""
    if run.snapshot is not None:
        return run.snapshot
    if run.lakefs is None:
        raise BadInput("give --snapshot DIR, or --repo NAME (with --lakefs-endpoint or lakectl's config)", field="--snapshot")
    from lakewarden.extract.cli import extract_source

    out = state / "snapshots" / run.lakefs.repo
    result = extract_source(run.lakefs, state=state, store=run.store, out=out, force=True)
    log.info("%s", result.summary())
    return out


def commits_table_path(snapshot_dir: Path) -> Path:
    """The snapshot's commits table (``commits.jsonl`` or ``commits.parquet``), else the directory."""
    for suffix in (".jsonl", ".parquet"):
        candidate = snapshot_dir / f"commits{suffix}"
        if candidate.exists():
            return candidate
    return snapshot_dir


def commit_in_parquet(commits: Path | None, commit_id: str) -> bool | None:
    """Whether the commits table's Parquet file holds ``commit_id`` (the commit_id column,
    filtered as it is read with pyarrow: no Spark); None when the table is not one file of
    Parquet (then ask Spark)."""
    if commits is None or commits.suffix != ".parquet":
        return None
    import pyarrow.dataset as ds

    found = ds.dataset(commits, format="parquet").to_table(columns=["commit_id"], filter=ds.field("commit_id") == commit_id)
    return found.num_rows > 0


@dataclass(frozen=True)
class StartingJob:
    """What a job may use while its JVM boots (:meth:`lakewarden.jobs.shape.Job.prepare`): the
    run's clock and state dir, the checked snapshot, the run's options. No Spark yet."""

    run: "RunOptions"
    now: datetime
    state: Path
    snapshot: "CheckedSnapshot"
    #: the lakeFS server's blockstore.local.path, for a local:// namespace (None otherwise)
    local_blockstore: str | None = None

    @property
    def storage_namespace(self) -> str:
        return self.snapshot.repository.storage_namespace

    def has_commit(self, commit_id: str) -> bool | None:
        """Whether the snapshot holds ``commit_id``, when that takes no Spark (None: it would)."""
        table = self.snapshot.tables.get("commits")
        return commit_in_parquet(None if table is None else table.data, commit_id)


def start_job(
    run: "RunOptions", job: str, *, incremental: bool = False, prepare: "Callable[[StartingJob], Any] | None" = None
) -> JobContext:
    """Validate the clock and the snapshot, then point the source tables at the snapshot.

    The JVM boots on a background thread (~6 s) while this thread checks the snapshot (pyarrow,
    no Spark job): a run pays the longer of the two, not their sum. dbt itself is imported only
    when a selection has no cached compilation (lakewarden.runtime.compiled_models). A bad snapshot
    raises BadInput (exit 2) without waiting for the JVM.

    ``incremental``: the job reads only what changed when it continues from an earlier run
    (:meth:`lakewarden.jobs.shape.Job.incremental`). ``prepare``: the job's own work that
    takes no Spark, run once the snapshot is checked and while the JVM still boots; what it
    returns is the context's ``prepared`` (:meth:`lakewarden.jobs.shape.Job.prepare`)."""
    now = check_clock(run.now, dry_run=run.dry_run)
    state = state_dir(run.state)
    # the JVM's compiler suits the run's size (spark_session.jit_mode): the snapshot given, or
    # the one the last extract of this repository left (a first extract starts quick), and
    # whether the run continues from an earlier one (it then reads what changed since)
    hint = run.snapshot if run.snapshot is not None else (state / "snapshots" / run.lakefs.repo if run.lakefs else None)
    if hint is None:
        resolve_snapshot(run, state)  # neither a snapshot nor a repository: BadInput before any JVM starts
    hint_size = ranges_bytes(hint)
    follows_run = incremental and hint is not None and _ran_before_on(state, job, hint)
    # a bad LAKEWARDEN_JVM_JIT exits 2 here
    starter = SparkStarter(state, jit=jit_mode(hint_size, follows_run=follows_run))
    # a snapshot given is the one the job reads: its size is known; an extract writes a new one
    size = hint_size if run.snapshot is not None else None
    try:
        return _started_job(run, job, now, state, starter, size, prepare)
    except BaseException:
        starter.abandon()  # bad input, an extract that failed, Ctrl-C: no JVM left behind for nothing
        raise


def _ran_before_on(state: Path, job: str, snapshot_dir: Path) -> bool:
    """Whether the run history holds a finished run of ``job`` on the namespace of the
    repository in ``snapshot_dir`` (lakewarden.reports.history.ran_before). Asked before the
    JVM starts, so its ``repository.json`` is read here as plain JSON (the snapshot package
    would import pyarrow first, ~0.4 s): a hint for the JVM's compiler only. A snapshot not
    there yet, or one whose repository.json does not read, is no earlier run; the snapshot's
    own check then reports what is wrong with it."""
    from lakewarden.reports.history import ran_before

    try:
        namespace = json.loads((snapshot_dir / "repository.json").read_text(encoding="utf-8"))["storage_namespace"]
    except (OSError, ValueError, LookupError, TypeError):
        return False
    return isinstance(namespace, str) and ran_before(state, job, namespace)


def _started_job(
    run: "RunOptions", job: str, now: datetime, state: Path, starter: SparkStarter, size: int | None,
    prepare: "Callable[[StartingJob], Any] | None" = None,
) -> JobContext:
    """start_job's part that runs while the JVM boots (the snapshot's check, the job's own
    ``prepare``), and the snapshot's registration after. ``size``: the snapshot's range rows in
    bytes when already known (None: stat it here)."""
    snapshot_dir = resolve_snapshot(run, state)
    lakefs_kept = read_lakefs_kept(snapshot_dir)  # bad input fails before Spark is needed
    from lakewarden.snapshot import register_snapshot  # pyarrow: only jobs pay it
    from lakewarden.snapshot.check import check_snapshot

    checked = check_snapshot(snapshot_dir, cache_dir=state / "snapshot-cache")
    root = blockstore_root(checked.repository.storage_namespace, run.store.local_blockstore)
    if checked.newest_commit_epoch is not None and checked.newest_commit_epoch > now.timestamp():
        newest = datetime.fromtimestamp(checked.newest_commit_epoch, timezone.utc)
        raise BadInput(
            f"{rfc3339(now)} is before the newest commit ({rfc3339(newest)}): the clock or the snapshot is wrong",
            source=str(commits_table_path(snapshot_dir)),
            field="--now",
        )
    local_blockstore = None if root is None else str(root)
    prepared = None if prepare is None else prepare(StartingJob(run, now, state, checked, local_blockstore))
    spark = starter.session()
    if size is None:
        size = ranges_bytes(snapshot_dir)
    # a small snapshot: interpreted expressions, one shuffle partition, no adaptive execution;
    # a large one: the session's own settings (spark_session.suit_session_to_size)
    suit_session_to_size(spark, size)
    snapshot = register_snapshot(spark, checked, schema=SNAPSHOT_SCHEMA)
    return JobContext(
        job=job,
        run_id=new_run_id(job),
        now=now,
        dry_run=run.dry_run,
        state=state,
        spark=spark,
        snapshot=snapshot,
        lakefs_kept=lakefs_kept,
        local_blockstore=local_blockstore,
        snapshot_dir=snapshot_dir,
        snapshot_fingerprint=checked.fingerprint,
        report_dir=run.report,
        ranges_bytes=size,
        prepared=prepared,
    )
