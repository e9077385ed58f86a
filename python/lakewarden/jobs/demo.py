"""``lakewarden demo``: a sample repository on local disk, every job as a dry run then a sweep,
and a plain account of what was kept, what was deleted and why."""

from __future__ import annotations

import argparse
import csv
import json
import shutil
from collections import Counter
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlparse

from lakewarden.jobs.common import rfc3339
from lakewarden.sample import SampleConfig, generate
from lakewarden.spark_session import state_dir

DEMO_RULES = {"default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 21}]}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="build a sample repository and run every job on it (dry run, then sweep)",
        description="Builds a sample lakeFS repository (real object files + snapshot) under "
        "STATE/demo, runs each job as a dry run and then sweeps, and explains the outcome.",
    )
    parser.add_argument("--state", help="state directory (default ./.lakewarden or $LAKEWARDEN_HOME)")
    parser.add_argument("--seed", type=int, default=7, help="sample repository seed (default 7)")
    parser.add_argument("--entries", type=int, default=3000, help="approximate entries in the sample (default 3000)")
    parser.set_defaults(func=run)


def _count_files(root: Path) -> int:
    return sum(1 for p in root.rglob("*") if p.is_file() and "_lakefs" not in p.relative_to(root).parts)


def run(args: argparse.Namespace) -> int:
    from lakewarden.cli import main as cli

    state = state_dir(args.state)
    workdir = state / "demo"
    if workdir.exists():
        shutil.rmtree(workdir)
    sample = generate(workdir, SampleConfig(seed=args.seed, entries=args.entries))
    rules_path = workdir / "gc_rules.json"
    rules_path.write_text(json.dumps(DEMO_RULES, indent=2) + "\n")
    now = sample.end + timedelta(days=1)
    before = _count_files(sample.namespace_path)
    print(
        f"\n== sample repository '{sample.snapshot_dir.parent.name}' in {workdir}\n"
        f"   {sample.commit_count} commits, {sample.range_rows} range entries, branches {', '.join(sample.branches)}; "
        f"deleted branches (their commits dangle): {', '.join(sample.deleted_branches) or 'none'}\n"
        f"   {before} objects under {sample.storage_namespace}\n"
        f"   committed GC rules: {json.dumps(DEMO_RULES)}; clock --now {rfc3339(now)}\n"
    )

    report = workdir / "reports" / "gc-committed"
    print("== committed retention GC, dry run (mark)")
    code = cli(
        [
            "gc", "committed", "--snapshot", str(sample.snapshot_dir), "--rules", str(rules_path),
            "--now", rfc3339(now), "--dry-run", "--state", str(state), "--report", str(report),
        ]
    )
    if code != 0:
        return code
    _explain_committed(report, sample.namespace_path)
    print("\n== sweep: delete what the dry run marked")
    code = cli(["sweep", "--report", str(report), "--state", str(state)])
    after = _count_files(sample.namespace_path)
    summary = json.loads((report / "summary.json").read_text())
    print(
        f"\n== result: {before} objects before, {after} after; deleted {summary.get('num_deleted')}, "
        f"failed {summary.get('num_failed')}.\n"
        f"   Kept: everything an active commit (branch HEADs, commits inside each branch's retention, "
        f"the commit that was HEAD at the threshold, dangling commits inside the default retention, "
        f"tagged commits), a staged entry or a FULL address outside the namespace references, and _lakefs/.\n"
        f"   Reports: {report}"
    )
    return code


def _explain_committed(report: Path, namespace: Path) -> None:
    summary = json.loads((report / "summary.json").read_text())
    print(
        f"   {summary['commits']} commits: {summary['active_commits']} active, {summary['expired_commits']} expired; "
        f"{summary['num_marked']} objects marked ({summary['bytes_marked']} bytes)"
    )
    with open(report / "commits.csv", newline="", encoding="utf-8") as handle:
        reasons = Counter(
            row["reason"].split(" (")[0].replace("HEAD of branch", "HEAD of").replace("within the retention of branch", "within retention of")
            for row in csv.DictReader(handle)
        )
    for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
        print(f"   {count:4d} commits: {reason}")
    with open(report / "addresses.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    tables = Counter(row["example_path"].split("/")[0] for row in rows)
    if tables:
        print("   marked objects by table: " + ", ".join(f"{t} {n}" for t, n in sorted(tables.items())))
    for row in rows[:5]:
        path = Path(urlparse(row["physical_address"]).path)
        print(f"   - {row['address']} (was {row['example_path']}; only expired commits reference it; exists: {path.exists()})")
    if len(rows) > 5:
        print(f"   ... and {len(rows) - 5} more in {report / 'addresses.csv'}")
