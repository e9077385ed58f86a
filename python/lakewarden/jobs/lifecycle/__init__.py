"""``lakewarden lifecycle``: the lifecycle policy job (lakeFS's "Spark Job proposal").

Rules (prefix, days, per-branch days) expire objects by age. Every step is a dbt model under
``models/lifecycle`` (policy table, current_rule, per-branch last_deleted, potential commits,
addresses to remove, deduplications); this module validates the policy, records the run in the
ledger, runs the models, writes the report and the lakeFS-style outputs under
``<ns>/_lakefs/retention/lc/``, sweeps, and records how the run ended. Only a run whose sweep
deleted every marked address (its own, or for a dry run a later ``lakewarden sweep``) counts as
"the last run that deleted": the next run starts from its cutoffs (incremental) unless ``--full``.
"""

from __future__ import annotations

import argparse
import csv
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from lakewarden.errors import BadInput, error_line
from lakewarden.jobs.common import (
    SNAPSHOT_SCHEMA,
    JobContext,
    add_job_options,
    namespace_key,
    rfc3339,
    run_options_from_args,
)
from lakewarden.jobs.shape import Job, SweepOutcome, run_job
from lakewarden.jobs.lifecycle.policy import LifecyclePolicy, load_lifecycle_policy
from lakewarden.reports.directory import Report, default_report_dir
from lakewarden.reports.figures import READ_RANGES_KEPT_NOTE, drawn_beside, figures_document, kept_in_ranges, save_figures
from lakewarden.runtime import spark_session
from lakewarden.runtime.progress import PhaseClock
from lakewarden.runtime.spark_session import small_form_for
from lakewarden.snapshot import register_rows, source_columns, source_ddl
from lakewarden.state_tables import append_frame, append_rows, state_lock, within_this_hold
from lakewarden.timestamps import from_spark

if TYPE_CHECKING:  # pragma: no cover
    from lakewarden.jobs.options import RunOptions

log = logging.getLogger(__name__)

JOB = "lifecycle"
#: built first: everything up to the decision which ranges this run reads
READ_DECISION = ("int_lifecycle__read_ranges", "new_range_windows")
#: what the decision's form is taken from (rows_before_decision): the ranges metaranges list and
#: the windows earlier runs kept for them
WINDOWS_KEPT = ("stg_lakefs__metaranges", "stg_lakefs__repository", "stg_lakewarden__range_windows")
#: built next, each in its own form (JobContext.form_for): the newly expired entries of the ranges
#: read, then the one pass over every entry for their references
NEWLY_EXPIRED = "int_lifecycle__newly_expired_entries"
REFERENCES = "int_lifecycle__candidate_references"
#: the mart the report's figures draw: built first of the rest, so they are drawn beside the others
MARKED = "lifecycle_marked_addresses"
#: the run's own figures (the summary's): built beside the marked mart, from the same steps
RUN_FIGURES = "lifecycle_run_figures"
MARK_MODELS = "+lifecycle_marked_addresses +lifecycle_rule_stats +lifecycle_run_figures +new_range_windows"
RULES_TABLE = f"{SNAPSHOT_SCHEMA}.lifecycle_policy_rules"
EVENTS = "lifecycle_run_events"  # state tables (lakewarden.state_tables), kept across runs
POLICY_HISTORY = "lifecycle_policy_history"
POTENTIAL_MODES = ("complete", "seed")
STATS_COLUMNS = (
    "run_id", "run_status", "dry_run", "rule_id", "prefix", "branch_id", "date_to_be_deleted",
    "last_deleted", "num_marked", "bytes_marked",
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lifecycle",
        help="lifecycle policy job: expire objects by prefix and age, keeping shared data",
        description="Lifecycle policy job. Deletes the objects of paths a policy rule expires (prefix, days, "
        "per-branch days) unless a path that should survive references the same object. Incremental: only "
        "commits that may hold newly expired objects since the last run that deleted are read. Dry run with "
        "--dry-run, then 'lakewarden sweep --report DIR'; without --dry-run it marks and sweeps in one go.",
    )
    add_job_options(parser)
    parser.add_argument("--policy", type=Path, required=True, help="lifecycle policy JSON (docs/contract.md section 3.1)")
    parser.add_argument(
        "--potential-commits",
        choices=POTENTIAL_MODES,
        default="complete",
        help="complete (default): a commit is read when any branch reaching it may hold newly expired objects; "
        "seed: the design's intersection (reads less, can skip objects: see docs/lifecycle.md)",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="re-examine every commit from the beginning, ignoring earlier runs (retries addresses once kept for a duplicate)",
    )
    parser.set_defaults(func=run_lifecycle)


@dataclass(frozen=True)
class LifecycleOptions:
    """The lifecycle job's own options, for the Python API."""

    #: the lifecycle policy JSON (docs/contract.md section 3.1)
    policy: Path
    #: ``complete``: a commit is read when any branch reaching it may hold newly expired
    #: objects; ``seed``: the design's intersection (reads less, can skip objects)
    potential_commits: str = "complete"
    #: re-examine every commit from the beginning, ignoring earlier runs
    full: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.policy, Path):
            object.__setattr__(self, "policy", Path(self.policy))
        if self.potential_commits not in POTENTIAL_MODES:
            raise BadInput(f"{self.potential_commits!r} is not one of {', '.join(POTENTIAL_MODES)}", field="--potential-commits")


def lifecycle_options_from_args(args: argparse.Namespace) -> LifecycleOptions:
    """The command's ``--policy``, ``--potential-commits`` and ``--full`` as :class:`LifecycleOptions`."""
    return LifecycleOptions(policy=args.policy, potential_commits=args.potential_commits, full=args.full)


@dataclass(frozen=True)
class LifecycleResult:
    report: Report
    output_dir: Path
    figures: dict[str, Any]
    num_marked: int
    bytes_marked: int
    #: the lifecycle_rule_stats mart's rows (rules x branch contexts: small by construction),
    #: read within the mark (write_stats appends them once the sweep's status is known)
    rule_stats: tuple[dict[str, Any], ...] = ()


class Lifecycle(Job[LifecycleOptions, LifecyclePolicy, LifecycleResult]):
    """The lifecycle policy job in the one job shape (lakewarden.jobs.shape). A dry run writes
    its stats at once; a run records how its sweep ended in the ledger, then writes its stats."""

    name = JOB

    def read_inputs(self, options: LifecycleOptions, run: "RunOptions") -> LifecyclePolicy:
        return load_lifecycle_policy(options.policy)  # bad policy: exit 2 before Spark starts

    def incremental(self, options: LifecycleOptions) -> bool:
        return not options.full  # a later run reads the ranges new or crossed since the last one

    def mark(self, context: JobContext, inputs: LifecyclePolicy, options: LifecycleOptions) -> LifecycleResult:
        # the ledger and the policy history are read, then appended: one writer at a time
        with state_lock(context.state, f"lifecycle run {context.run_id}"):
            return mark_lifecycle(context, inputs, potential_mode=options.potential_commits, full=options.full, report_dir=context.report_dir)

    def describe(self, marked: LifecycleResult) -> list[str]:
        return describe_result(marked)

    def after_dry_run(self, context: JobContext, inputs: LifecyclePolicy, marked: LifecycleResult) -> None:
        write_stats(context, marked, run_status="marked (dry run)")

    def after_sweep(self, context: JobContext, inputs: LifecyclePolicy, marked: LifecycleResult, outcome: SweepOutcome) -> None:
        summary = marked.report.summary
        ledger = RunLedger(context, potential_mode=summary["potential_mode"], full=summary["full_run"])
        status = "swept" if outcome.success else "sweep_failed"
        ledger.record(
            status,
            num_marked=marked.num_marked,
            num_deleted=outcome.num_deleted if outcome.outcomes_csv else None,
            num_failed=outcome.num_failed if outcome.outcomes_csv else None,
            error=outcome.error,
        )
        write_stats(context, marked, run_status=status)


def run_lifecycle(args: argparse.Namespace) -> int:
    return run_job(Lifecycle(), run_options_from_args(args), lifecycle_options_from_args(args)).exit_status


class RunLedger:
    """Appends this run's statuses to the ledger table (append only; lifecycle_runs folds it)."""

    def __init__(self, context: JobContext, *, potential_mode: str, full: bool) -> None:
        self.context = context
        self.potential_mode = potential_mode
        self.full = full
        self.columns = [name for name, _ in source_columns("lakewarden")["lifecycle_run_events"]]
        self.ddl = source_ddl("lakewarden", "lifecycle_run_events")

    def record(
        self,
        status: str,
        *,
        num_marked: int | None = None,
        num_deleted: int | None = None,
        num_failed: int | None = None,
        error: str | None = None,
    ) -> None:
        repository = self.context.snapshot.repository
        values = {
            "run_id": self.context.run_id,
            "repository_id": repository.repository_id,
            "storage_namespace": namespace_key(repository.storage_namespace),
            "status": status,
            "dry_run": self.context.dry_run,
            "is_full_run": self.full,
            "potential_mode": self.potential_mode,
            "run_at": self.context.now,
            "recorded_at": datetime.now(timezone.utc),
            "num_marked": num_marked,
            "num_deleted": num_deleted,
            "num_failed": num_failed,
            "error": error,
        }
        append_rows(self.context.spark, self.context.state, EVENTS, [tuple(values[name] for name in self.columns)])


def _keep_state(context: JobContext) -> int:
    """What a marked run keeps in the state dir for later runs: its policy (the policy history)
    and the age windows it computed; how many windows (:meth:`JobContext.keep_range_windows`)."""
    record_policy(context)
    return context.keep_range_windows()


def record_policy(context: JobContext) -> None:
    """Append this run's rows of ``lifecycle_policy`` to the state dir's policy history, the
    table later runs read their predecessors' policies from."""
    from pyspark.sql import functions as F

    this_run = context.table("lifecycle_policy").where(F.col("run_id") == context.run_id)
    append_frame(context.spark, context.state, POLICY_HISTORY, this_run)


def write_policy_table(context: JobContext, policy: LifecyclePolicy) -> None:
    """This run's policy as the ``lifecycle_policy_rules`` source table; warn about branch_days
    naming branches the repository does not have (a rule for a deleted branch is harmless)."""
    for rule_id, branch_id in policy.unknown_branches(context.branch_ids()):
        log.warning("lifecycle policy: rule %r: branch_days names branch %r, which does not exist; ignored", rule_id, branch_id)
    register_rows(context.spark, RULES_TABLE, "lakewarden", "lifecycle_policy_rules", policy.rows())


def output_base(context: JobContext) -> Path:
    """``<ns>/_lakefs/retention/lc`` for a local namespace; under the state dir for a remote one
    (this Spark has no object-store filesystem to write outputs with)."""
    return context.output_dir("lc")


def mark_lifecycle(
    context: JobContext,
    policy: LifecyclePolicy,
    *,
    potential_mode: str = "complete",
    full: bool = False,
    report_dir: Path | None = None,
) -> LifecycleResult:
    """Mark: record the run, run the models, write report and outputs; delete nothing."""
    if potential_mode not in POTENTIAL_MODES:
        raise ValueError(f"potential_mode must be one of {POTENTIAL_MODES}, not {potential_mode!r}")
    repository = context.snapshot.repository
    directory = report_dir or default_report_dir(repository.storage_namespace, context.state, "lc", context.run_id)
    report = context.create_report(
        directory,
        policy=policy.to_json(),
        potential_mode=potential_mode,
        full_run=full,
    )
    ledger = RunLedger(context, potential_mode=potential_mode, full=full)
    # where the mark's time goes, for the summary (phase_seconds): benchmarks/lifecycle.py
    # subtracts a no-op run's phases from an incremental run's
    clock = PhaseClock()
    try:
        write_policy_table(context, policy)
        # dry runs swept completely since by 'lakewarden sweep' count as deleting runs
        from lakewarden.sweep.ledger import import_lifecycle_sweeps

        import_lifecycle_sweeps(context.spark, context.state, EVENTS, ledger.columns)
        ledger.record("running")
        clock.lap("policy_and_ledger")
        variables: dict[str, Any] = {"lifecycle_potential_commits": potential_mode, "lifecycle_full": full}
        # one compilation serves every stretch of the run (on a large snapshot the staging views
        # first: the decision's form is taken from the windows kept, rows_before_decision)
        def build_up_to(models: tuple[str, ...]) -> None:
            context.build_models(MARK_MODELS, only_upstream_of=models, lifecycle_reads_ranges=True, **variables)

        with context.form_for(rows_before_decision(context, build_up_to)):
            build_up_to(READ_DECISION)
        ranges, entries, read_ids = ranges_read(context)
        clock.lap("before_decision")
        reads_ranges = ranges > 0
        rest_rows: int | None = 0  # a run that reads no range: every step after the decision is empty
        if not reads_ranges:
            log.info("lifecycle: this run reads no range (nothing new, no age crossed a rule's threshold): no scan planned")
        else:
            # each stretch of the run in the form its rows want (JobContext.form_for): the ranges
            # read, then the one pass over every entry, then what that pass found
            with context.form_for(entries) as held:
                context.build_models(MARK_MODELS, only_upstream_of=(NEWLY_EXPIRED,), lifecycle_reads_ranges=True, part="models", **variables)
            clock.lap("newly_expired")
            # the pass reads every entry (the session's own form), and what it finds is held in
            # memory when the newly expired entries' stretch was (ModelRunner.holding: at most
            # HELD_ROWS entries read): the references of those entries' paths and objects, which
            # the steps after it read from there (counted as they are held: the rest's form is
            # taken from their count)
            with context.model_runner().holding(held, counting=(REFERENCES,)):
                context.build_models(MARK_MODELS, only_upstream_of=(REFERENCES,), lifecycle_reads_ranges=True, part="models", **variables)
            rest_rows = rows_after_references(context, entries)
            clock.lap("references")
        with context.form_for(rest_rows):
            return _mark_rest(context, report, ledger, clock, reads_ranges=reads_ranges, read_ids=read_ids, **variables)
    except Exception as exc:
        error = error_line(exc)
        report.finish(success=False, status="failed", error=error)
        try:
            ledger.record("failed", error=error)
        except Exception:  # noqa: BLE001 - the original error is the one to report
            log.exception("could not record the failed run in the ledger")
        raise


def _mark_rest(
    context: JobContext, report: Report, ledger: "RunLedger", clock: PhaseClock, *, reads_ranges: bool,
    read_ids: "list[str] | None" = None, **variables: Any,
) -> LifecycleResult:
    """The mark after the pass over every entry: the decisions on what it found, the safety
    tests, the report's figures and the outputs. ``read_ids``: the ranges read, as the read
    decision's query gathered them (:func:`ranges_read`), for the report's kept objects;
    ``clock``: the mark's phases so far (the summary's ``phase_seconds``)."""
    from pyspark.sql import functions as F

    # the marked mart first (with the run's figures, which need the same steps and not the
    # mart: the runner builds the two at once): the report's figures draw it while the other
    # marts, the safety tests and the writes run (1M entries, an incremental run: the figures
    # took 1.9 s, 1.3 s of it after the safety tests when they started after every mart)
    context.build_models(
        MARK_MODELS, only_upstream_of=(MARKED, RUN_FIGURES), lifecycle_reads_ranges=reads_ranges, part="models", **variables
    )
    clock.lap("marks")
    marked = context.table(MARKED)
    # kept: the objects of the ranges this run read (none in a run that reads no range)
    read_ranges = context.table("int_lifecycle__read_ranges").where("is_read").select("range_id")

    def draw() -> dict[str, Any] | None:
        return figures_document(
            context.spark, job=JOB, marked=marked, snapshot_schema=SNAPSHOT_SCHEMA, now=context.now,
            kept=lambda: kept_in_ranges(context.spark, SNAPSHOT_SCHEMA, read_ranges, marked, gathered=read_ids),
            kept_note=READ_RANGES_KEPT_NOTE,
            # the graph models walked this snapshot's commit graph already (the marked mart is built on them)
            reachability=context.model_runner().reachability.computed(),
            may_mark=reads_ranges,  # no range read, no newly expired path: nothing marked
        )

    base = output_base(context)
    run_date = context.now.astimezone(timezone.utc).date().isoformat()
    # the figures are computed beside the other marts, the safety tests and the writes, and
    # saved only once the tests passed and the outputs are written
    with drawn_beside(draw, lambda document: save_figures(report.directory, document)):
        # the other mart and the safety tests at once (a test starts once the marts it reads
        # are built); nothing is written before both are done and the tests passed
        context.build_models(MARK_MODELS, lifecycle_reads_ranges=reads_ranges, **variables)
        # the state tables' appends (this run's policy, the windows it computed) on a thread
        # beside the report's figures and outputs below: neither reads what the other writes,
        # and each is a few statements whose planning and small jobs overlap the other's
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lifecycle-state") as pool:
            windows_kept = pool.submit(within_this_hold(lambda: _keep_state(context)))  # mark holds the state lock
            figures = _figures(context)
            totals = marked.agg(F.count("*").alias("n"), F.sum("size_bytes").alias("bytes")).first()
            num_marked, bytes_marked = int(totals["n"] or 0), int(totals["bytes"] or 0)
            report.write_addresses(
                marked.select(
                    "address",
                    "address_type",
                    "physical_address",
                    "size_bytes",
                    "last_modified_at",
                    F.array_join("paths", ";").alias("paths"),
                    F.array_join("matched_rules", ";").alias("matched_rules"),
                    "path_count",
                ),
                rows=num_marked,
            )
            (
                marked.select("run_id", "address", "physical_address", "paths", "matched_rules", F.lit(run_date).alias("date"))
                .write.mode("append")
                .partitionBy("date")
                .parquet(str(base / "addresses"))
            )
            # the stats' rows now, beside the figures (an incremental run's longest thread here),
            # not after the sweep, where they were a query of their own on every run's way out
            rule_stats = tuple(row.asDict() for row in context.table("lifecycle_rule_stats").orderBy("rule_id", "branch_id").collect())
            figures["range_windows_computed"] = windows_kept.result()
    clock.lap("tests_report_and_outputs")
    ledger.record("marked", num_marked=num_marked)
    report.update(
        num_marked=num_marked, bytes_marked=bytes_marked, stats=str(stats_path(context, base)), phase_seconds=clock.pairs(), **figures
    )
    report.finish(success=True, status="marked" if context.dry_run else "marked, sweep pending")
    return LifecycleResult(report, base, figures, num_marked, bytes_marked, rule_stats)


def ranges_read(context: JobContext) -> tuple[int, int | None, list[str] | None]:
    """How many ranges ``int_lifecycle__read_ranges`` (built) reads, how many entries they
    hold (their windows' counts; None when a window lacks its count), and their ids when at
    most :data:`~lakewarden.runtime.compiled_models.RANGE_LIST_LIMIT` (else None): one query
    for all three.

    With no range to read, no path is newly expired, so the steps after the decision are empty:
    the runner says so with the var ``lifecycle_reads_ranges`` and they plan no scan (macro
    ``lifecycle_unless_no_range_read``); the steps before it are the same nodes either way and
    are not built twice. Else the entries are the rows the newly expired entries are found in,
    and choose that stretch's form; the ids are the ranges whose objects the report's kept ages
    count (:func:`~lakewarden.reports.figures.kept_in_ranges`, which would otherwise ask for
    them again: 0.24 s of an incremental run's figures at 1M entries). Why one query: each
    query costs its planning whatever it reads (about 0.3 s at this point of a run on 1M
    entries), and a no-op run asks only this. Range ids, never addresses: at most the limit
    reach the driver."""
    from pyspark.sql import functions as F

    from lakewarden.runtime.compiled_models import RANGE_LIST_LIMIT

    # one row per range a potential commit lists: at most the snapshot's metarange rows
    with small_form_for(context.spark, context.snapshot.row_counts.get("metaranges")):
        row = (
            context.table("int_lifecycle__read_ranges").where("is_read")
            .agg(
                F.count(F.lit(1)).alias("ranges"), F.count("entry_count").alias("counted"), F.sum("entry_count").alias("entries"),
                F.slice(F.collect_list("range_id"), 1, RANGE_LIST_LIMIT + 1).alias("ids"),
            )
            .first()
        )
    ranges = int(row["ranges"]) if row is not None else 0
    ids = sorted(row["ids"]) if row is not None and ranges <= RANGE_LIST_LIMIT else None
    if row is None or row["counted"] != ranges:
        return ranges, None, ids
    return ranges, int(row["entries"] or 0), ids


def rows_before_decision(context: JobContext, build_up_to: Callable[[tuple[str, ...]], None]) -> int | None:
    """The rows the steps up to the decision which ranges to read go through: the commits, the
    metarange rows and the entries of the ranges no earlier run kept a window for (their windows
    are computed now, int_graph__range_windows), estimated as the snapshot's entries times the
    share of listed ranges without a window; None when a count is unknown.

    Why: a first run (or a full one on a new state dir) computes every range's window, millions
    of entries on a large repository, and takes the large form; a run after it computes the
    windows of a few new ranges, and its steps see commits and metarange rows only. Measured on
    1M entries (13,959 metarange rows), those steps took 7.3-8.3 s in the large form and
    5.0-6.2 s in the small one, in a no-op run and in an incremental one alike. The estimate only
    chooses a form: the rows are the same either way. A snapshot small as a whole is answered
    from its counts (no query); else ``build_up_to`` builds the staging views the count reads
    (:data:`WINDOWS_KEPT`) first."""
    from pyspark.sql import functions as F

    counts = context.snapshot.row_counts
    commits, metaranges, entries = (counts.get(table) for table in ("commits", "metaranges", "ranges"))
    if commits is None or metaranges is None or entries is None:
        return None
    if commits + metaranges + entries <= spark_session.SMALL_FORM_ROWS:
        return commits + metaranges + entries
    build_up_to(WINDOWS_KEPT)
    repository = context.table("stg_lakefs__repository").select("storage_namespace_root")
    kept = (
        context.table("stg_lakewarden__range_windows")
        .join(repository, F.col("storage_namespace") == F.col("storage_namespace_root"), "left_semi")
        .select("range_id", F.lit(True).alias("is_kept"))  # one row a range: the staging model groups by it
    )
    # one row per range a metarange lists (and the windows kept, one per range seen): at most
    # the metarange rows beside a table of their size
    with small_form_for(context.spark, metaranges):
        row = (
            context.table("stg_lakefs__metaranges").where(F.col("range_id").isNotNull()).select("range_id").distinct()
            .join(kept, "range_id", "left")
            .agg(F.count(F.lit(1)).alias("listed"), F.count("is_kept").alias("kept"))
            .first()
        )
    listed = int(row["listed"]) if row is not None else 0
    unknown = listed - (int(row["kept"]) if row is not None else 0)
    new_entries = -(-entries * unknown // listed) if listed else 0  # rounded up
    return commits + metaranges + new_entries


def rows_after_references(context: JobContext, entries: int | None) -> int | None:
    """The rows the rest of the mark reads (:func:`_mark_rest`): the references the pass over
    every entry found, the entries of the ranges read (the report's kept ages) and the
    metarange rows (the report traces marked objects to their branches through them); None
    when a count is unknown. ``entries``: the entries of the ranges read (:func:`ranges_read`).
    The references are counted only when the rest could be held in memory without them
    (:data:`~lakewarden.runtime.spark_session.HELD_ROWS`). The entries read are then few
    enough that the pass's stretch held the references in memory (unless a view reads them),
    counted by the job that computed them (ModelRunner.held_rows): no query of its own (else
    one, which reads no file either)."""
    metaranges = context.snapshot.row_counts.get("metaranges")
    if entries is None or metaranges is None:
        return None
    known = entries + int(metaranges)
    if known > spark_session.HELD_ROWS:
        return known  # the large form, its tables written, whatever the pass found
    references = context.model_runner().held_rows(REFERENCES)
    return (context.table(REFERENCES).count() if references is None else references) + known


def _figures(context: JobContext) -> dict[str, Any]:
    """What the run looked at, for the summary and the console (the lifecycle_run_figures mart)."""
    row = context.table(RUN_FIGURES).first()
    figures = row.asDict() if row is not None else {}
    return {
        "commits": int(figures.get("commits") or 0),
        "potential_commits": int(figures.get("potential_commits") or 0),
        "ranges": int(figures.get("ranges") or 0),
        "potential_ranges": int(figures.get("potential_ranges") or 0),
        "ranges_new": int(figures.get("ranges_new") or 0),
        "ranges_crossed": int(figures.get("ranges_crossed") or 0),
        "ranges_read": int(figures.get("ranges_read") or 0),
        "paths_newly_expired": int(figures.get("paths_newly_expired") or 0),
        "addresses_kept_for_duplicates": int(figures.get("addresses_kept_for_duplicates") or 0),
        "last_deleting_run_id": figures.get("last_deleting_run_id"),
    }


def write_stats(context: JobContext, result: LifecycleResult, *, run_status: str) -> Path:
    """Append this run's per-rule, per-branch counts to ``<base>/stats/<date>.csv`` (one file a
    day, one block of rows a run). The table is rules x branch contexts: small by construction.
    The report's summary is not touched here: after a sweep, the sweep owns it. The rows are
    those the mark read (LifecycleResult.rule_stats): no query here."""
    rows = result.rule_stats
    path = stats_path(context, result.output_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    new_file = not path.exists()
    with open(path, "a", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        if new_file:
            writer.writerow(STATS_COLUMNS)
        for row in rows:
            writer.writerow(
                [
                    context.run_id,
                    run_status,
                    str(context.dry_run).lower(),
                    row["rule_id"],
                    row["prefix"],
                    row["branch_id"] or "",
                    _stamp(row["date_to_be_deleted"]),
                    _stamp(row["last_deleted"]),
                    row["num_marked"],
                    row["bytes_marked"],
                ]
            )
    return path


def stats_path(context: JobContext, base: Path) -> Path:
    return base / "stats" / f"{context.now.astimezone(timezone.utc).date().isoformat()}.csv"


def _stamp(moment: datetime | None) -> str:
    utc = from_spark(moment)
    return "" if utc is None else rfc3339(utc)


def describe_result(result: LifecycleResult) -> list[str]:
    summary = result.report.summary
    figures = result.figures
    mode = "dry run" if summary["dry_run"] else "run"
    since = (
        "from the beginning (--full)" if summary.get("full_run")
        else f"since run {figures['last_deleting_run_id']}" if figures.get("last_deleting_run_id")
        else "from the beginning (no earlier run deleted)"
    )
    return [
        f"lifecycle {mode} {summary['run_id']} at {summary['now']} ({summary['potential_mode']} mode, {since}): "
        f"{figures['potential_commits']} of {figures['commits']} commits potential, "
        f"{figures['potential_ranges']} of {figures['ranges']} ranges potential, {figures['ranges_read']} read "
        f"({figures['ranges_new']} new, {figures['ranges_crossed']} crossed a rule's threshold); "
        f"{figures['paths_newly_expired']} paths newly expired, {figures['addresses_kept_for_duplicates']} addresses "
        f"kept for a surviving reference; {result.num_marked} addresses marked ({result.bytes_marked} bytes)"
    ]


__all__ = ["register", "run_lifecycle", "mark_lifecycle"]
