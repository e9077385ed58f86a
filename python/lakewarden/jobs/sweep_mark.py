"""``lakewarden sweep --mark-id ID``: sweep a mark lakeFS's GC made in mark-only mode.

lakeFS's GC (``lakefs.gc.do_sweep=false``) leaves its mark under
``<namespace>/_lakefs/retention/gc/unified/<ID>/`` (lakewarden.stores.marks reads it as lakeFS's
own sweep-only mode does: a missing mark, or one whose summary says it did not succeed, is bad
input). Before anything is deleted, every address is re-checked against the snapshot
(``--snapshot`` or ``--lakefs-endpoint``/``--repo``) by the model ``lakefs_mark_recheck``: an
address an active commit references (committed GC's own ``gc_committed_commits``, with ``--rules``,
``--retain-tags`` and ``--now``; without rules nothing expires, so every committed address is
kept), one a staged entry references, and one outside the namespace or under ``_lakefs/`` is
kept, its reason written to ``kept.csv``. The rest becomes an ordinary report directory
(``addresses.csv``, ``summary.json``, ``report.html``) that the one sweep deletes, re-checking
each row and recording each outcome as for any report; ``--dry-run`` stops before the sweep
(``lakewarden sweep --report DIR`` finishes it later).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Iterator

from lakewarden.errors import BadInput, error_line

JOB = "lakefs-mark"
MARK_TABLE = "lakefs_mark"
KEPT_CSV = "kept.csv"


def add_mark_options(parser: argparse.ArgumentParser) -> None:
    """The options only ``sweep --mark-id`` takes (the sweep's own are shared)."""
    from pathlib import Path as _Path

    group = parser.add_argument_group("sweeping a mark lakeFS's GC made (--mark-id)")
    group.add_argument("--mark-id", metavar="ID", help="a mark lakeFS's GC wrote in mark-only mode (_lakefs/retention/gc/unified/ID/)")
    group.add_argument("--snapshot", type=_Path, help="the repository's snapshot, to re-check every address against")
    group.add_argument("--lakefs-endpoint", metavar="URL", help="lakeFS server to extract the snapshot from (with --repo)")
    group.add_argument("--repo", metavar="NAME", help="the repository (with --lakefs-endpoint)")
    group.add_argument("--cache-dir", metavar="DIR", help="decoded-range cache for the extract (default: STATE/range-cache)")
    group.add_argument("--jobs", type=int, default=1, metavar="N", help=argparse.SUPPRESS)
    group.add_argument("--rules", type=_Path, help="lakeFS GC rules JSON the mark was made with; without it nothing expires (every committed address is kept)")
    group.add_argument("--retain-tags", action=argparse.BooleanOptionalAction, default=True, help="keep tagged commits active (default on)")
    group.add_argument("--now", help="the clock the rules are applied at, RFC 3339 (default: now)")
    group.add_argument("--dry-run", action="store_true", help="re-check and write the report directory; delete nothing")


def run_mark(args: argparse.Namespace) -> int:
    """Read lakeFS's mark, re-check it, write a report directory, sweep it."""
    from lakewarden.jobs.gc_committed.rules import load_gc_rules
    from dataclasses import replace

    from lakewarden.jobs.common import run_options_from_args, start_job
    from lakewarden.jobs.shape import with_blockstore
    from lakewarden.stores import check_store_options
    from lakewarden.stores.marks import mark_prefix, read_mark

    if args.report is not None and (Path(args.report) / "summary.json").exists():
        raise BadInput("already holds a report; choose an empty directory", source=str(args.report), field="--report")
    rules = load_gc_rules(args.rules) if args.rules else None  # bad rules: before anything starts
    run = replace(run_options_from_args(args), dry_run=True)  # the re-check only reads
    context = start_job(run, JOB)
    context.dry_run = args.dry_run
    options = with_blockstore(run.store, context)
    # every file of the mark is read and checked before anything is written or deleted
    scratch = context.state / "work" / f"lakefs-mark-{context.run_id}"
    with check_store_options(context.storage_namespace, options) as store:
        mark_summary, streamed = read_mark(store, args.mark_id)
        count = stage_addresses(streamed, scratch)
        prefix = mark_prefix(store, args.mark_id)
    report = recheck(context, rules, args.mark_id, prefix, mark_summary, scratch, retain_tags=args.retain_tags, report_dir=args.report)
    kept = report.summary["num_kept"]
    print(f"lakeFS mark {args.mark_id}: {count} addresses, {kept} kept after the re-check "
          f"(see {report.directory / KEPT_CSV}), {report.summary['num_marked']} to delete", file=sys.stdout)
    print(f"report: {report.directory}", file=sys.stdout)
    if args.dry_run:
        return 0
    from lakewarden.sweep import SweepFailed, sweep_report
    from lakewarden.sweep.ledger import record_sweep

    try:
        result = sweep_report(context.spark, report.directory, deleter_options=options.deleter_options())
    except SweepFailed as exc:
        print(f"lakewarden: {exc}", file=sys.stderr)
        return 1
    record_sweep(context.state, result)
    note = result.recoverability_note()
    if note:
        print(note)
    print(json.dumps({
        "report": result.report_dir, "engine": result.engine, "mark_id": args.mark_id, "num_marked": result.num_marked,
        "num_kept": kept, "num_deleted": result.num_deleted, "num_failed": result.num_failed,
        "num_previously_deleted": result.num_previously_deleted, "success": result.success, "outcomes": result.outcomes_csv,
        "seconds": result.seconds, "recoverable": result.recoverable, "recoverability": result.recoverability,
    }))
    return 0 if result.success else 1


#: addresses per Parquet row group while a mark is copied into the state dir (bounded memory)
STAGE_BATCH = 100_000


def stage_addresses(addresses: "Iterator[str]", scratch: Path) -> int:
    """The mark's addresses, streamed into one Parquet file under ``scratch`` a batch at a
    time (a mark may hold millions: never a list in memory); how many there were. Every file
    of the mark is read, so a malformed one is bad input before anything is written elsewhere."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    scratch.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([("address", pa.string())])
    count = 0
    with pq.ParquetWriter(scratch / "part-00000.parquet", schema) as writer:
        batch: list[str] = []
        for address in addresses:
            batch.append(address)
            if len(batch) >= STAGE_BATCH:
                writer.write_table(pa.table({"address": pa.array(batch, pa.string())}, schema=schema))
                count += len(batch)
                batch = []
        if batch or count == 0:
            writer.write_table(pa.table({"address": pa.array(batch, pa.string())}, schema=schema))
            count += len(batch)
    return count


def recheck(
    context: Any, rules: Any, mark_id: str, prefix: str, mark_summary: Any, scratch: Path, *,
    retain_tags: bool, report_dir: Path | None,
) -> Any:
    """The mark's addresses through ``lakefs_mark_recheck``; the report directory the sweep reads."""
    from pyspark.sql import functions as F

    from lakewarden.jobs.common import SNAPSHOT_SCHEMA
    from lakewarden.jobs.gc_committed import write_rules_table
    from lakewarden.reports.directory import default_report_dir, write_single_csv
    from lakewarden.snapshot import sql_string

    directory = Path(report_dir or default_report_dir(context.storage_namespace, context.state, "gc", f"lakefs-mark-{mark_id}-{context.run_id}"))
    report = context.create_report(
        directory,
        lakefs_mark_id=mark_id,
        lakefs_mark=prefix,
        lakefs_mark_summary=mark_summary.__dict__,
        rules=None if rules is None else {"default_retention_days": rules.default_retention_days, "branches": rules.branch_retention_days},
        retain_tags=retain_tags,
    )
    try:
        table = f"{SNAPSHOT_SCHEMA}.{MARK_TABLE}"
        context.spark.sql(f"drop table if exists {table}")
        context.spark.sql(f"create table {table} (address string) using parquet location {sql_string(str(scratch))}")
        write_rules_table(context, rules)
        context.build_models("+lakefs_mark_recheck", retain_tags=retain_tags)
        rechecked = context.table("lakefs_mark_recheck").cache()
        report.write_addresses(rechecked.where(F.col("kept_reason").isNull()).select("address", "address_type", "physical_address"))
        kept = rechecked.where(F.col("kept_reason").isNotNull())
        write_single_csv(kept.select("address", "physical_address", F.col("kept_reason").alias("reason")), report.directory / KEPT_CSV, sort_by=["address"])
        counts = rechecked.agg(F.count("*").alias("n"), F.count("kept_reason").alias("kept")).first()
        by_reason = {row["reason"]: int(row["n"]) for row in kept.groupBy(F.regexp_replace("kept_reason", r" \(.*\)$", "").alias("reason")).count().withColumnRenamed("count", "n").collect()}
        rechecked.unpersist()
        report.update(num_marked=int(counts["n"]) - int(counts["kept"]), num_kept=int(counts["kept"]), kept_by_reason=by_reason)
        report.finish(success=True, status="marked" if context.dry_run else "marked, sweep pending")
        return report
    except Exception as exc:
        report.finish(success=False, status="failed", error="bad input" if isinstance(exc, BadInput) else error_line(exc))
        raise
