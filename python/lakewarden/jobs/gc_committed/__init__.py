"""``lakewarden gc committed``: committed retention GC (the mark is dbt models under
``models/gc_committed``; this module loads inputs, runs them, writes the report and sweeps)."""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakewarden.errors import error_line
from lakewarden.jobs.gc_committed.rules import GcRules, load_gc_rules
from lakewarden.jobs.common import SNAPSHOT_SCHEMA, JobContext, add_job_options, run_options_from_args
from lakewarden.jobs.shape import Job, run_job
from lakewarden.reports.directory import Report, default_report_dir, write_single_csv
from lakewarden.reports.figures import drawn_beside, figures_document, save_figures
from lakewarden.runtime.progress import PhaseClock
from lakewarden.timestamps import rfc3339
from lakewarden.snapshot import register_rows

if TYPE_CHECKING:  # pragma: no cover
    from lakewarden.jobs.options import RunOptions

log = logging.getLogger(__name__)

JOB = "gc-committed"
MARK_MODELS = "+gc_committed_marked_addresses +gc_committed_commits +gc_committed_kept_addresses"
COMMITS_MODELS = "+gc_committed_commits"
MARKS = "committed_gc_marks"  # state table (lakewarden.state_tables), kept across runs
MARKED_COLUMNS = ("address", "address_type", "physical_address", "size_bytes", "last_modified_at", "example_path", "path_count")


def register(subparsers: argparse._SubParsersAction) -> None:
    from lakewarden.jobs import gc_uncommitted, gc_unified

    # ``lakewarden gc`` alone: committed and uncommitted GC in one run (lakewarden.jobs.gc_unified)
    gc = subparsers.add_parser(
        "gc",
        help="garbage collection: committed and uncommitted in one run (or one KIND alone)",
        description=gc_unified.DESCRIPTION,
    )
    gc_unified.add_options(gc)
    kinds = gc.add_subparsers(dest="gc_kind", metavar="KIND", required=False)
    committed = kinds.add_parser(
        "committed",
        help="committed retention GC: delete objects only expired commits reference",
        description="Committed retention GC (lakeFS semantics). Dry run with --dry-run, then "
        "'lakewarden sweep --report DIR'; without --dry-run it marks and sweeps in one go.",
    )
    add_job_options(committed)
    add_committed_options(committed)
    committed.set_defaults(func=run_committed)

    gc_uncommitted.register(kinds)


def add_committed_options(parser: argparse.ArgumentParser) -> None:
    """Committed GC's own options (``gc committed`` and ``gc``)."""
    parser.add_argument("--rules", type=Path, help="lakeFS GC rules JSON; without it nothing expires")
    parser.add_argument(
        "--retain-tags",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep tagged commits active (default on; lakeFS itself ignores tags)",
    )


@dataclass(frozen=True)
class CommittedGcOptions:
    """Committed GC's own options (``gc committed`` and ``gc``), for the Python API."""

    #: lakeFS GC rules JSON (docs/contract.md); None: nothing expires, every committed address is kept
    rules: Path | None = None
    #: keep tagged commits active (lakeFS itself ignores tags)
    retain_tags: bool = True

    def __post_init__(self) -> None:
        if self.rules is not None and not isinstance(self.rules, Path):
            object.__setattr__(self, "rules", Path(self.rules))


def committed_options_from_args(args: argparse.Namespace) -> CommittedGcOptions:
    """:func:`add_committed_options` as :class:`CommittedGcOptions`."""
    return CommittedGcOptions(rules=args.rules, retain_tags=args.retain_tags)


@dataclass(frozen=True)
class CommittedGcResult:
    report: Report
    commits: int
    active_commits: int
    expired_commits: int
    num_marked: int
    bytes_marked: int
    #: where the marked rows are (Parquet: this run's mark, or the earlier one it reused)
    location: str | None = None


class CommittedGc(Job[CommittedGcOptions, "GcRules | None", "CommittedGcResult"]):
    """Committed retention GC in the one job shape (lakewarden.jobs.shape)."""

    name = JOB

    def read_inputs(self, options: CommittedGcOptions, run: "RunOptions") -> GcRules | None:
        return load_gc_rules(options.rules) if options.rules else None  # bad rules fail before Spark starts

    def mark(self, context: JobContext, inputs: GcRules | None, options: CommittedGcOptions) -> "CommittedGcResult":
        return mark_committed(context, inputs, retain_tags=options.retain_tags, report_dir=context.report_dir)

    def describe(self, marked: "CommittedGcResult") -> list[str]:
        return describe_result(marked)


def run_committed(args: argparse.Namespace) -> int:
    return run_job(CommittedGc(), run_options_from_args(args), committed_options_from_args(args)).exit_status


def write_rules_table(context: JobContext, rules: GcRules | None) -> None:
    if rules is not None:
        for branch_id in rules.unknown_branches(context.branch_ids()):
            log.warning("GC rules: branch %r does not exist in the repository; its rule is ignored", branch_id)
    rows = rules.rows() if rules is not None else []
    register_rows(context.spark, f"{SNAPSHOT_SCHEMA}.gc_rules", "lakewarden", "gc_rules", rows)


def mark_committed(
    context: JobContext,
    rules: GcRules | None,
    *,
    retain_tags: bool = True,
    report_dir: Path | None = None,
    figures: bool = True,
) -> CommittedGcResult:
    """Run the mark models and write the report; deletes nothing. ``figures=False``: no
    report figures (``lakewarden gc`` draws them once, over both marks)."""
    from pyspark.sql import functions as F

    repository = context.snapshot.repository
    directory = report_dir or default_report_dir(repository.storage_namespace, context.state, "gc", context.run_id)
    report = context.create_report(
        directory,
        rules=None if rules is None else {"default_retention_days": rules.default_retention_days, "branches": rules.branch_retention_days},
        retain_tags=retain_tags,
    )
    clock = PhaseClock()  # where the mark's time goes, for the summary (phase_seconds)
    try:
        context.check_lakefs_holds()
        write_rules_table(context, rules)
        # the commits first (no range is read for them): when the snapshot, the models and the
        # active set are those of an earlier mark on this state dir, that mark is the answer
        context.build_models(COMMITS_MODELS, retain_tags=retain_tags)
        commits = context.table("gc_committed_commits")
        # a function of the snapshot, the project and the active set alone: the mark's build
        # below reads the same gc_committed_commits, so this identity is also the one it keeps
        identity = mark_identity(context, commits)
        reused = find_reusable_mark(context, identity)
        clock.lap("rules_and_commits")
        if reused is not None:
            reused_run_id, location = reused
            report.update(mark_reused_from_run_id=reused_run_id, ranges_read=0)
            log.info("committed GC: same snapshot, models and active commits as run %s: its mark is reused", reused_run_id)
            written = None
        else:
            # the whole mark; its safety tests run below, beside the report's figures
            written = mark_location(context)
            context.build_models(
                MARK_MODELS, locations={"gc_committed_marked_addresses": written}, retain_tags=retain_tags, part="models"
            )
            location = str(written)
            clock.lap("mark")
        marked = context.spark.read.parquet(location)

        def draw() -> MarkFigures:
            return mark_figures(context, marked, location)

        # the figures are computed beside the safety tests and the writes, and saved only once
        # the tests passed and the outputs are written
        with drawn_beside(draw if figures else None, lambda drawn: save_mark_figures(report, drawn)):
            if written is not None:
                # the safety tests (they need gc_committed_commits in the same build); the mark is
                # kept for reuse once they passed
                context.build_models(
                    MARK_MODELS, locations={"gc_committed_marked_addresses": written}, retain_tags=retain_tags, part="tests"
                )
                keep_mark(context, identity, written)
                report.update(mark_reused_from_run_id=None)
            if context.lakefs_kept is not None:  # before any address is written: nothing to sweep
                from lakewarden.lakefs_answer import check_active_covers_kept

                check_active_covers_kept(context.spark, context.lakefs_kept, commits)
            counts = commits.agg(
                F.count("*").alias("commits"), F.sum(F.col("is_active").cast("int")).alias("active")
            ).first()
            totals = marked.agg(F.count("*").alias("n"), F.sum("size_bytes").alias("bytes")).first()
            assert counts is not None and totals is not None  # aggregates without grouping: one row each
            report.write_addresses(marked.select(*MARKED_COLUMNS), rows=int(totals["n"]))
            write_single_csv(
                commits.select("commit_id", "created_at", "is_active", "reason"),
                report.directory / "commits.csv",
                sort_by=["created_at", "commit_id"],
                rows=int(counts["commits"]),
            )
            write_lakefs_outputs(context, commits, marked)
        result = CommittedGcResult(
            report=report,
            commits=int(counts["commits"] or 0),
            active_commits=int(counts["active"] or 0),
            expired_commits=int(counts["commits"] or 0) - int(counts["active"] or 0),
            num_marked=int(totals["n"] or 0),
            bytes_marked=int(totals["bytes"] or 0),
            location=location,
        )
        clock.lap("tests_report_and_outputs")
        report.update(
            phase_seconds=clock.pairs(),
            num_marked=result.num_marked,
            bytes_marked=result.bytes_marked,
            commits=result.commits,
            active_commits=result.active_commits,
            expired_commits=result.expired_commits,
        )
        report.finish(success=True, status="marked" if context.dry_run else "marked, sweep pending")
        return result
    except Exception as exc:
        report.finish(success=False, status="failed", error=error_line(exc))
        raise


@dataclass(frozen=True)
class MarkIdentity:
    """Everything a committed GC mark is a function of. The marked set depends only on the
    snapshot (ranges, staged entries, namespace), the models that compute it, and which commits
    are active (rules, --now and --retain-tags act through that set alone). Equal identities
    therefore give equal marks; any doubt (no fingerprint) means no identity, and a fresh mark."""

    storage_namespace: str
    snapshot_fingerprint: str
    project_fingerprint: str
    active_commits_digest: str


def mark_identity(context: JobContext, commits) -> MarkIdentity | None:
    from pyspark.sql import functions as F

    from lakewarden.jobs.common import namespace_key
    from lakewarden.runtime.project import project_dir, project_fingerprint

    if not context.snapshot_fingerprint:
        return None
    row = (
        commits.where(F.col("is_active"))
        .agg(
            F.count("*").alias("n"),
            F.sha2(F.concat_ws(",", F.array_sort(F.collect_list("commit_id"))), 256).alias("digest"),
        )
        .first()
    )
    return MarkIdentity(
        storage_namespace=namespace_key(context.storage_namespace),
        snapshot_fingerprint=context.snapshot_fingerprint,
        project_fingerprint=project_fingerprint(project_dir()),
        active_commits_digest=f"{row['n']}:{row['digest']}",
    )


def find_reusable_mark(context: JobContext, identity: MarkIdentity | None) -> tuple[str, str] | None:
    """The newest earlier mark on this state dir with the same identity whose rows are still
    there (their ``_SUCCESS`` file: a mark written whole), as (run id, location); else None."""
    from pyspark.sql import functions as F

    from lakewarden.state_tables import qualified, register_state_tables

    if identity is None:
        return None
    register_state_tables(context.spark, context.state)
    rows = (
        context.spark.table(qualified(MARKS))
        .where(
            (F.col("storage_namespace") == identity.storage_namespace)
            & (F.col("snapshot_fingerprint") == identity.snapshot_fingerprint)
            & (F.col("project_fingerprint") == identity.project_fingerprint)
            & (F.col("active_commits_digest") == identity.active_commits_digest)
        )
        .orderBy(F.col("finished_at").desc(), F.col("run_id").desc())
        .collect()
    )
    for row in rows:
        if (Path(row["marked_location"]) / "_SUCCESS").is_file():
            return row["run_id"], row["marked_location"]
    return None


@dataclass(frozen=True)
class MarkFigures:
    """A mark's figures for this clock: the document (None: not computed, already logged),
    where a copy is kept with the mark, and whether it was that copy (reused)."""

    document: dict[str, Any] | None
    kept: Path
    reused: bool


def kept_figures(
    context: JobContext, report: Report, marked, location: str, *, job: str = JOB, marked_fingerprint: str = ""
) -> None:
    """:func:`mark_figures`, then :func:`save_mark_figures` (see there)."""
    save_mark_figures(report, mark_figures(context, marked, location, job=job, marked_fingerprint=marked_fingerprint))


def mark_figures(context: JobContext, marked, location: str, *, job: str = JOB, marked_fingerprint: str = "") -> MarkFigures:
    """The report's figures: those kept with the mark for this clock when the mark is reused
    (figures are a function of the snapshot, the mark and the clock: a run again on the same
    state reads no range for them), else computed (:func:`save_mark_figures` keeps them with the
    mark). The copy lives in the mark's directory under a name Spark and the row count ignore
    (``_figures-<key>.json``).

    ``lakewarden gc`` draws its figures over the committed mark and the uncommitted one: it
    keeps them with the committed mark (``location``) under a key that also holds ``job`` and
    ``marked_fingerprint``, a fingerprint of the whole marked set it draws (its addresses and
    reasons), so a run whose uncommitted mark changed computes them again."""
    import hashlib
    import json

    # committed GC's own key is the clock alone (as before ``lakewarden gc`` kept figures too)
    drawn = rfc3339(context.now) if job == JOB else f"{job}\n{marked_fingerprint}\n{rfc3339(context.now)}"
    key = hashlib.sha256(drawn.encode()).hexdigest()[:16]
    kept = Path(location) / f"_figures-{key}.json"
    if kept.is_file():
        try:
            document = json.loads(kept.read_text())
            log.info("report figures kept with the mark for this clock are reused")
            return MarkFigures(document, kept, reused=True)
        except (OSError, ValueError) as exc:  # computed again below
            log.debug("figures kept with the mark not read: %s", exc)
    # the objects this run keeps, when its own build computed them (a reused mark did not)
    built = context.models is not None and context.models.built("gc_committed_kept_addresses")
    document = figures_document(
        context.spark, job=job, marked=marked, snapshot_schema=SNAPSHOT_SCHEMA, now=context.now,
        kept=context.table("gc_committed_kept_addresses") if built else None,
    )
    return MarkFigures(document, kept, reused=False)


def save_mark_figures(report: Report, figures: MarkFigures) -> None:
    """Write the figures in the report, and keep a copy with the mark when they were computed
    (never a reason to fail the run)."""
    import shutil

    written = save_figures(report.directory, figures.document)
    if written is None or figures.reused or not figures.kept.parent.is_dir():
        return
    try:
        temporary = figures.kept.parent / f".{figures.kept.name}.tmp"
        shutil.copyfile(written, temporary)
        temporary.replace(figures.kept)
    except OSError as exc:  # the figures of a later run: never a reason to fail this one
        log.debug("figures not kept with the mark: %s", exc)


def mark_location(context: JobContext) -> Path:
    """Where this run's mark is written (the mart's own table files, ``STATE/retention/gc/marks/
    <run_id>``): a later run with the same inputs reads it from there."""
    return context.state / "retention" / "gc" / "marks" / context.run_id


def keep_mark(context: JobContext, identity: MarkIdentity | None, location: Path) -> str:
    """Record this run's mark (written whole at ``location`` by the build, its safety test
    passed) with its identity, so a later run with the same inputs can reuse it. Returns the
    location (the report reads the rows back from it: one computation of the mark)."""
    from datetime import datetime, timezone

    from lakewarden.state_tables import append_rows, parquet_rows

    if identity is not None:
        append_rows(
            context.spark,
            context.state,
            MARKS,
            [(
                context.run_id, identity.storage_namespace, identity.snapshot_fingerprint, identity.project_fingerprint,
                identity.active_commits_digest, str(location), parquet_rows(location), datetime.now(timezone.utc),
            )],
        )
    return str(location)


def write_lakefs_outputs(context: JobContext, commits, marked) -> None:
    """lakeFS-style outputs under ``<ns>/_lakefs/retention/gc/``: the commits' expiry
    (``commits/run_id=<id>/commits.csv``) and the marked addresses (``addresses/mark_id=<id>/``,
    Parquet), so tools that read lakeFS's GC output can read ours. Local namespaces only:
    remote ones keep them in the report directory."""
    base = context.output_dir("gc")
    (
        commits.select("commit_id", "is_expired")
        .withColumnRenamed("is_expired", "expired")
        .repartition(1)
        .sortWithinPartitions("commit_id")
        .write.mode("overwrite")
        .option("header", True)
        .csv(str(base / "commits" / f"run_id={context.run_id}"))
    )
    marked.select("address").write.mode("overwrite").parquet(str(base / "addresses" / f"mark_id={context.run_id}"))


def describe_result(result: CommittedGcResult) -> list[str]:
    summary = result.report.summary
    mode = "dry run" if summary["dry_run"] else "run"
    return [
        f"committed GC {mode} {summary['run_id']} at {summary['now']}: "
        f"{result.commits} commits, {result.active_commits} active, {result.expired_commits} expired; "
        f"{result.num_marked} addresses marked ({result.bytes_marked} bytes)"
        + (f"; mark reused from run {summary['mark_reused_from_run_id']} (same snapshot, models and active commits)"
           if summary.get("mark_reused_from_run_id") else "")
    ]
