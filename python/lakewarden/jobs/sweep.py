"""``lakewarden sweep --report DIR``: delete what an earlier dry run marked (docs/contract.md §1).

The report is validated first, so bad input exits 2 at once and touches nothing. Small reports
are swept in-process (no JVM); large ones, or under spark-submit, in Spark tasks (``--engine``
forces either). Exit 0 when every marked address is deleted; 1 when some failed (see
``DIR/sweep/outcomes.csv``), the sweep stopped part-way (run it again to finish), or another
sweep of the same report is running (one line on stderr says which process holds it).

The namespace's store is reached with the store options every job takes (``--s3-*``,
``--azure-*``, ``--gcs-*``, ``--local-blockstore``; see docs/stores/). When its deletes leave
recoverable copies (S3 versioning, Azure or GCS soft delete / versioning), a ``note:`` line and
the JSON line's ``recoverable``/``recoverability`` say so, and what to configure.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from lakewarden.runtime.state_dir import add_state_option, state_dir
from lakewarden.stores.options import add_store_arguments, store_options_from_args
from lakewarden.sweep import ENGINES, SweepFailed, load_report


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="delete what an earlier dry run marked in a report directory",
        description="Delete the addresses a dry run marked in DIR/addresses.csv, recording each outcome "
        "under DIR/sweep/. A sweep stopped part-way can be run again and finishes the rest.",
    )
    parser.add_argument(
        "--report", metavar="DIR",
        help="the report directory of a dry run (with --mark-id: where the mark's report goes; default under the namespace)",
    )
    add_state_option(parser, "the sweep's warehouse and the run history")
    add_store_arguments(parser)  # the namespace's store: S3, Azure, GCS or lakeFS's local blockstore
    parser.add_argument(
        "--engine", choices=ENGINES, default="auto",
        help="auto (default): in-process up to 500,000 marked addresses, Spark above or under spark-submit",
    )
    parser.add_argument("--parallelism", type=_positive, metavar="N", help="number of Spark tasks deleting at once (Spark engine)")
    parser.add_argument("--batch-size", type=_positive, default=1000, metavar="N", help="addresses per delete request (at most the store's batch limit: S3 1000, Azure 256, GCS 100)")
    parser.add_argument("--threads", type=_positive, metavar="N", help="delete requests in flight per process or task (default 8 on S3, Azure and GCS; 1 locally)")
    from lakewarden.jobs.sweep_mark import add_mark_options

    add_mark_options(parser)  # --mark-id: a mark lakeFS's GC made (lakewarden.jobs.sweep_mark)
    parser.set_defaults(func=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from lakewarden.runtime import spark_session
    from lakewarden.sweep import sweep_report
    from lakewarden.sweep.ledger import record_sweep

    from lakewarden.stores import check_store_options

    if args.mark_id is not None:
        from lakewarden.jobs.sweep_mark import run_mark

        return run_mark(args)
    if args.report is None:
        from lakewarden.errors import BadInput

        raise BadInput("give --report DIR (a dry run's report), or --mark-id ID with --snapshot or --repo", field="--report")
    report = load_report(args.report)  # bad input exits 2 before anything starts
    store_options = store_options_from_args(args)
    if store_options.local_blockstore is None and report.summary.get("local_blockstore"):
        from dataclasses import replace

        store_options = replace(store_options, local_blockstore=str(report.summary["local_blockstore"]))
    # options that cannot address the report's namespace: exit 2 naming the option, nothing deleted
    check_store_options(report.storage_namespace, store_options).close()
    state = state_dir(args.state)
    options = store_options.deleter_options()
    try:
        result = sweep_report(
            None,
            args.report,
            deleter_options=options,
            parallelism=args.parallelism,
            batch_size=args.batch_size,
            threads=args.threads,
            engine=args.engine,
            spark_factory=lambda: spark_session.get_or_create(state),
        )
    except SweepFailed as exc:
        print(f"lakewarden: {exc}", file=sys.stderr)
        return 1
    record_sweep(state, result)
    note = result.recoverability_note()
    if note:
        print(note)
    print(
        json.dumps(
            {
                "report": result.report_dir,
                "engine": result.engine,
                "num_marked": result.num_marked,
                "num_deleted": result.num_deleted,
                "num_failed": result.num_failed,
                "num_previously_deleted": result.num_previously_deleted,
                "success": result.success,
                "outcomes": result.outcomes_csv,
                "seconds": result.seconds,
                "recoverable": result.recoverable,
                "recoverability": result.recoverability,
            }
        )
    )
    return 0 if result.success else 1
