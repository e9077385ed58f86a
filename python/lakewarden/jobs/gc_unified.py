"""``lakewarden gc``: committed and uncommitted GC in one run, as lakeFS's default (unified) GC.

One Spark session, one snapshot, one listing or inventory, one report directory. The two marks
are the two jobs' own (:func:`lakewarden.jobs.gc_committed.mark_committed`,
:func:`lakewarden.jobs.gc_uncommitted.mark_uncommitted`), run one after the other on the same
session with the same run id, so the models they share (the snapshot's staging views) are
executed once (:class:`lakewarden.runtime.compiled_models.ModelRunner` skips a node this run already
built with the same code). Each keeps its own detail under the report directory
(``committed/``, ``uncommitted/``: their summaries, ``commits.csv``, the uncommitted run's
history entry that the next optimized run starts from); the run's own ``summary.json``,
``addresses.csv`` and ``report.html`` are over the union, each address with its reason:

* ``expired commits only``: what committed GC marks (only expired commits reference it);
* ``no reference``: what uncommitted GC marks (in storage, referenced by no commit and no staged
  entry, older than ``--min-age``).

The two sets are disjoint by construction (uncommitted GC subtracts every committed entry); an
address in both would be listed once, as ``expired commits only``. Nothing either job would keep
is in the union: each row is a row of the job its reason names.

The mark is also written where and as lakeFS's GC writes one (:mod:`lakewarden.stores.marks`):
``<namespace>/_lakefs/retention/gc/unified/<RUN_ID>/`` with ``deleted/`` (Parquet, ``address``
relative to the namespace), ``deleted.text/`` and ``summary.json`` (``run_id``, ``success``,
``first_slice``, ``start_time``, ``cutoff_time``, ``num_deleted_objects``). Its mark id is this
run's id (lakeFS's own ids are descending xids; a mark id is opaque to lakeFS's sweep).
"""

from __future__ import annotations

import argparse
import logging
import shutil
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakewarden.errors import error_line
from lakewarden.jobs.common import JobContext, StartingJob, add_job_options, run_options_from_args
from lakewarden.jobs.gc_committed import CommittedGcOptions, committed_options_from_args
from lakewarden.jobs.gc_uncommitted import UncommittedGcOptions, uncommitted_options_from_args
from lakewarden.jobs.shape import Job, run_job, with_blockstore
from lakewarden.reports.directory import Report, default_report_dir
from lakewarden.runtime.progress import PhaseClock

if TYPE_CHECKING:  # pragma: no cover
    from lakewarden.jobs.gc_committed.rules import GcRules
    from lakewarden.jobs.options import RunOptions
    from lakewarden.stores import StoreOptions

log = logging.getLogger(__name__)

JOB = "gc"
#: why an address is marked, per job (the ``reason`` column of addresses.csv)
REASON_COMMITTED = "expired commits only"
REASON_UNCOMMITTED = "no reference"
COLUMNS = ("address", "address_type", "physical_address", "size_bytes", "last_modified_at", "reason", "example_path", "candidate_source")
DESCRIPTION = (
    "Committed and uncommitted GC in one run, as lakeFS's default GC: one snapshot, one listing "
    "or inventory, one report (each address with its reason: 'expired commits only' or 'no "
    "reference'); the mark is also written as lakeFS's GC writes one, under "
    "<namespace>/_lakefs/retention/gc/unified/<RUN_ID>/. Dry run with --dry-run, then "
    "'lakewarden sweep --report DIR'. 'gc committed' and 'gc uncommitted' run one kind alone."
)


def add_options(parser: argparse.ArgumentParser) -> None:
    """The union of both jobs' options, from their own helpers."""
    from lakewarden.jobs.gc_committed import add_committed_options
    from lakewarden.jobs.gc_uncommitted import add_uncommitted_options

    add_job_options(parser)
    add_committed_options(parser)
    add_uncommitted_options(parser)
    parser.set_defaults(func=run_unified)


@dataclass(frozen=True)
class GcOptions:
    """``lakewarden gc``'s options for the Python API: committed GC's and uncommitted GC's."""

    committed: CommittedGcOptions = field(default_factory=CommittedGcOptions)
    uncommitted: UncommittedGcOptions = field(default_factory=UncommittedGcOptions)


def gc_options_from_args(args: argparse.Namespace) -> GcOptions:
    """Both jobs' options from ``lakewarden gc``'s arguments (:func:`add_options`)."""
    return GcOptions(committed=committed_options_from_args(args), uncommitted=uncommitted_options_from_args(args))


@dataclass(frozen=True)
class UnifiedInputs:
    rules: "GcRules | None"
    min_age: timedelta
    store_options: "StoreOptions"


@dataclass(frozen=True)
class UnifiedGcResult:
    report: Report
    num_marked: int
    bytes_marked: int
    num_committed: int
    num_uncommitted: int
    lakefs_mark: str | None
    committed: Any  # lakewarden.jobs.gc_committed.CommittedGcResult
    uncommitted: Any  # lakewarden.jobs.gc_uncommitted.UncommittedGcResult


class UnifiedGc(Job[GcOptions, UnifiedInputs, UnifiedGcResult]):
    """Committed + uncommitted GC in the one job shape (lakewarden.jobs.shape)."""

    name = JOB

    def read_inputs(self, options: GcOptions, run: "RunOptions") -> UnifiedInputs:
        from lakewarden.jobs.gc_committed.rules import load_gc_rules
        from lakewarden.jobs.gc_uncommitted import parse_min_age

        rules = load_gc_rules(options.committed.rules) if options.committed.rules else None  # bad input: before Spark starts
        min_age = parse_min_age(options.uncommitted.min_age, force=options.uncommitted.force)
        return UnifiedInputs(rules, min_age, run.store)

    def prepare(self, options: GcOptions, inputs: UnifiedInputs, starting: "StartingJob") -> Any:
        from lakewarden.jobs.gc_uncommitted import prepare_storage

        return prepare_storage(
            starting, manifest=options.uncommitted.inventory, min_age=inputs.min_age, clean=options.uncommitted.clean,
            store_options=inputs.store_options,
        )

    def mark(self, context: JobContext, inputs: UnifiedInputs, options: GcOptions) -> UnifiedGcResult:
        from lakewarden.state_tables import state_lock

        # uncommitted GC reads its run history (the previous run), then appends: one writer
        with state_lock(context.state, f"GC run {context.run_id}"):
            return mark_unified(
                context,
                inputs.rules,
                retain_tags=options.committed.retain_tags,
                manifest=options.uncommitted.inventory,
                min_age=inputs.min_age,
                clean=options.uncommitted.clean,
                report_dir=context.report_dir,
                store_options=with_blockstore(inputs.store_options, context),
                start=context.prepared,
            )

    def describe(self, marked: UnifiedGcResult) -> list[str]:
        summary = marked.report.summary
        mode = "dry run" if summary["dry_run"] else "run"
        lines = [
            f"GC {mode} {summary['run_id']} at {summary['now']}: {marked.num_marked} addresses marked "
            f"({marked.bytes_marked} bytes): {marked.num_committed} {REASON_COMMITTED}, "
            f"{marked.num_uncommitted} {REASON_UNCOMMITTED}"
        ]
        from lakewarden.jobs.gc_committed import describe_result as committed_lines
        from lakewarden.jobs.gc_uncommitted import describe_result as uncommitted_lines

        lines += ["  " + line for line in committed_lines(marked.committed) + uncommitted_lines(marked.uncommitted)]
        if marked.lakefs_mark:
            lines.append(f"lakeFS-format mark: {marked.lakefs_mark}")
        return lines


def run_unified(args: argparse.Namespace) -> int:
    return run_job(UnifiedGc(), run_options_from_args(args), gc_options_from_args(args)).exit_status


def mark_unified(
    context: JobContext,
    rules: "GcRules | None",
    *,
    retain_tags: bool = True,
    manifest: str | None = None,
    min_age: timedelta = timedelta(hours=24),
    clean: bool = False,
    report_dir: Path | None = None,
    store_options: "StoreOptions | None" = None,
    start: Any = None,
) -> UnifiedGcResult:
    """Both marks on this session, the union as one report, the lakeFS-format mark; deletes
    nothing. ``start``: what uncommitted GC settled about storage while the JVM booted
    (lakewarden.jobs.gc_uncommitted.prepare_storage)."""
    from pyspark.sql import functions as F

    from lakewarden.jobs.gc_committed import kept_figures, mark_committed
    from lakewarden.jobs.gc_uncommitted import mark_uncommitted
    from lakewarden.stores import StoreOptions

    options = store_options or StoreOptions()
    directory = Path(report_dir or default_report_dir(context.storage_namespace, context.state, "gc", context.run_id)).resolve()
    report = context.create_report(
        directory,
        rules=None if rules is None else {"default_retention_days": rules.default_retention_days, "branches": rules.branch_retention_days},
        retain_tags=retain_tags,
        min_age_seconds=int(min_age.total_seconds()),
        inventory=manifest,
        reasons=[REASON_COMMITTED, REASON_UNCOMMITTED],
    )
    clock = PhaseClock()  # each mark's phases are in its own part's summary; these are the whole's
    try:
        # one model runner for both marks: the nodes they share are executed once
        context.model_runner()
        committed = mark_committed(
            replace(context, job="gc-committed"), rules, retain_tags=retain_tags,
            report_dir=directory / "committed", figures=False,
        )
        assert committed.location is not None  # a mark (fresh or reused) always has its location
        clock.lap("committed_mark")
        uncommitted = mark_uncommitted(
            replace(context, job="gc-uncommitted"), manifest=manifest, min_age=min_age, clean=clean,
            report_dir=directory / "uncommitted", store_options=options, figures=False, start=start,
        )
        clock.lap("uncommitted_mark")
        # committed GC's commits (their state and reason) are what explain reads
        shutil.copyfile(directory / "committed" / "commits.csv", directory / "commits.csv")
        committed_mark = context.spark.read.parquet(committed.location)
        # the ranges holding each committed object (the figures' branches); a mark kept by an
        # earlier version has none: the figures then find them in the snapshot
        committed_ranges = F.col("range_ids") if "range_ids" in committed_mark.columns else F.lit(None).cast("array<string>")
        committed_rows = committed_mark.select(
            "address", "address_type", "physical_address", "size_bytes", "last_modified_at",
            F.lit(REASON_COMMITTED).alias("reason"), "example_path", F.lit(None).cast("string").alias("candidate_source"),
            committed_ranges.alias("range_ids"),
        )
        uncommitted_rows = context.table("gc_uncommitted_marked_addresses").select(
            "address", "address_type", "physical_address", "size_bytes", "last_modified_at",
            F.lit(REASON_UNCOMMITTED).alias("reason"), F.lit(None).cast("string").alias("example_path"), "candidate_source",
            F.lit(None).cast("array<string>").alias("range_ids"),
        )
        # disjoint by construction; were an address in both, it is listed once, as committed GC's
        marked = committed_rows.unionByName(
            uncommitted_rows.join(committed_rows.select("physical_address"), "physical_address", "left_anti")
            .select(*COLUMNS, "range_ids")
        ).cache()
        try:
            # per reason: the counts, and an order-free fingerprint of the addresses (figures key)
            address_hash = F.xxhash64("physical_address")
            by_reason = marked.groupBy("reason").agg(
                F.count("*").alias("n"), F.sum("size_bytes").alias("bytes"),
                F.bit_xor(address_hash).alias("xor"), F.sum(address_hash.cast("decimal(38,0)")).alias("sum"),
            ).collect()
            totals = {row["reason"]: (int(row["n"]), int(row["bytes"] or 0)) for row in by_reason}
            fingerprint = ";".join(sorted(f"{r['reason']}:{r['n']}:{r['bytes']}:{r['xor']}:{r['sum']}" for r in by_reason))
            num_committed, bytes_committed = totals.get(REASON_COMMITTED, (0, 0))
            num_uncommitted, bytes_uncommitted = totals.get(REASON_UNCOMMITTED, (0, 0))
            report.write_addresses(marked.select(*COLUMNS), rows=sum(n for n, _ in totals.values()))
            # kept with the committed mark, keyed by the whole marked set and the clock: a run
            # again on the same state draws nothing
            kept_figures(context, report, marked, committed.location, job=JOB, marked_fingerprint=fingerprint)
            lakefs_mark = write_lakefs_mark(context, report, marked, options, min_age)
        finally:
            marked.unpersist()
        clock.lap("union_report_and_outputs")
        report.update(
            phase_seconds=clock.pairs(),
            num_marked=num_committed + num_uncommitted,
            bytes_marked=bytes_committed + bytes_uncommitted,
            num_marked_by_reason={REASON_COMMITTED: num_committed, REASON_UNCOMMITTED: num_uncommitted},
            bytes_marked_by_reason={REASON_COMMITTED: bytes_committed, REASON_UNCOMMITTED: bytes_uncommitted},
            commits=committed.commits,
            active_commits=committed.active_commits,
            expired_commits=committed.expired_commits,
            ranges_read=_ranges_read(committed.report.summary, uncommitted.run),
            run_mode=uncommitted.run_mode,
            run_mode_reason=uncommitted.mode_reason,
            parts={"committed": str(directory / "committed"), "uncommitted": str(directory / "uncommitted")},
            lakefs_mark=lakefs_mark,
            lakefs_mark_id=context.run_id,
        )
        report.finish(success=True, status="marked" if context.dry_run else "marked, sweep pending")
        return UnifiedGcResult(
            report, num_committed + num_uncommitted, bytes_committed + bytes_uncommitted,
            num_committed, num_uncommitted, lakefs_mark, committed, uncommitted,
        )
    except Exception as exc:
        from lakewarden.errors import BadInput

        report.finish(success=False, status="failed", error="bad input" if isinstance(exc, BadInput) else error_line(exc))
        raise


def _ranges_read(committed: dict[str, Any], uncommitted: dict[str, Any]) -> int | None:
    """Ranges this run read, as the parts' reports count them; None when the committed part
    does not count them (a mark computed afresh reads the ranges it needs without counting)."""
    if committed.get("ranges_read") is None:
        return None
    return int(committed["ranges_read"]) + int(uncommitted.get("ranges_read") or 0)


def write_lakefs_mark(context: JobContext, report: Report, marked: Any, options: "StoreOptions", min_age: timedelta) -> str:
    """This run's mark as lakeFS's GC writes one (lakewarden.stores.marks), on the namespace's
    store: addresses relative to the namespace, as lakeFS lists them (a FULL address inside the
    namespace is written relative too). ``start_time`` is when the run started, ``cutoff_time``
    the clock minus ``--min-age`` (lakeFS: objects newer than it are not listed)."""
    from lakewarden.safety import resolve_physical
    from lakewarden.stores import store_for
    from lakewarden.stores.marks import mark_prefix, write_mark
    from lakewarden.timestamps import parse_rfc3339

    prefix = resolve_physical("", "RELATIVE", context.storage_namespace)

    def relative() -> Any:
        for row in marked.select("address", "address_type", "physical_address").orderBy("address").toLocalIterator():
            if row["address_type"] == "RELATIVE":
                yield row["address"]
            elif row["physical_address"].startswith(prefix):
                yield row["physical_address"][len(prefix):]
            else:  # never: committed GC marks only addresses inside the namespace
                raise ValueError(f"marked address outside the namespace: {row['physical_address']}")

    with store_for(context.storage_namespace, options) as store:
        write_mark(
            store, context.run_id, relative(),
            start_time=parse_rfc3339(report.summary["started_at"], field="started_at"),
            cutoff_time=context.now - min_age,
        )
        return mark_prefix(store, context.run_id)
