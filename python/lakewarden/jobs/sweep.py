"""``lakewarden sweep --report DIR``: delete what an earlier dry run marked (CONTRACT section 1).

The report is validated before the JVM starts, so bad input exits 2 in a second and touches
nothing. Exit 0 when every marked address is deleted, 1 when some failed (see
``DIR/sweep/outcomes.csv``) or the sweep stopped part-way (run it again to finish).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from lakewarden.sweep import SweepFailed, load_report


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="delete what an earlier dry run marked in a report directory",
        description="Delete the addresses a dry run marked in DIR/addresses.csv, recording each outcome "
        "under DIR/sweep/. A sweep stopped part-way can be run again and finishes the rest.",
    )
    parser.add_argument("--report", required=True, metavar="DIR", help="the report directory of a dry run")
    parser.add_argument("--state", metavar="DIR", help="warehouse and run history (default ./.lakewarden or LAKEWARDEN_HOME)")
    parser.add_argument("--s3-endpoint", metavar="URL", help="S3 endpoint URL (default: AWS_ENDPOINT_URL or AWS)")
    parser.add_argument("--s3-region", metavar="REGION", help="S3 region (default: AWS_REGION or boto3's default)")
    parser.add_argument("--parallelism", type=_positive, metavar="N", help="number of Spark tasks deleting at once")
    parser.add_argument("--batch-size", type=_positive, default=1000, metavar="N", help="addresses per delete request (max 1000 for S3)")
    parser.add_argument("--threads", type=_positive, metavar="N", help="delete requests in flight per task (S3 default 8)")
    parser.set_defaults(func=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from lakewarden import spark_session
    from lakewarden.sweep import sweep_report

    load_report(args.report)  # bad input exits 2 before the JVM starts
    spark = spark_session.get_or_create(spark_session.state_dir(args.state))
    options = {"endpoint_url": args.s3_endpoint, "region_name": args.s3_region}
    try:
        result = sweep_report(
            spark,
            args.report,
            deleter_options=options,
            parallelism=args.parallelism,
            batch_size=args.batch_size,
            threads=args.threads,
        )
    except SweepFailed as exc:
        print(f"lakewarden: {exc}", file=sys.stderr)
        return 1
    print(
        json.dumps(
            {
                "report": result.report_dir,
                "num_marked": result.num_marked,
                "num_deleted": result.num_deleted,
                "num_failed": result.num_failed,
                "num_previously_deleted": result.num_previously_deleted,
                "success": result.success,
                "outcomes": result.outcomes_csv,
                "seconds": result.seconds,
            }
        )
    )
    return 0 if result.success else 1
