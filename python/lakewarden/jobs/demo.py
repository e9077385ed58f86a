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

from lakewarden.jobs.common import rfc3339
from lakewarden.sample import SampleConfig, generate
from lakewarden.spark_session import state_dir

DEMO_RULES = {"default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 21}]}
DEMO_POLICY = {
    "logs": {"prefix": "logs/", "days": 14, "enabled": True},
    "events": {"prefix": "events/", "days": 30, "enabled": True, "branch_days": {"main": 20}},
}


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

    policy_path = workdir / "lifecycle_policy.json"
    policy_path.write_text(json.dumps(DEMO_POLICY, indent=2) + "\n")
    snapshot = ["--snapshot", str(sample.snapshot_dir), "--now", rfc3339(now), "--state", str(state)]
    jobs = (
        (
            "gc-committed",
            "committed retention GC",
            ["gc", "committed", *snapshot, "--rules", str(rules_path)],
            _explain_committed,
            "Kept: everything an active commit (branch HEADs, commits inside each branch's retention, the commit "
            "that was HEAD at the threshold, dangling commits inside the default retention, tagged commits), a "
            "staged entry or a FULL address outside the namespace references, and _lakefs/.",
        ),
        (
            "gc-uncommitted",
            "uncommitted GC",
            ["gc", "uncommitted", *snapshot, "--min-age", "24h"],
            _explain_uncommitted,
            "Kept: every object a commit (from genesis) or a staged entry references, objects younger than "
            "--min-age (uploads that may still be committed), and _lakefs/.",
        ),
        (
            "lifecycle",
            f"lifecycle policy {json.dumps(DEMO_POLICY)}",
            ["lifecycle", *snapshot, "--policy", str(policy_path)],
            _explain_lifecycle,
            "Kept: paths no rule covers, objects younger than their rule's days on some branch that shows them, "
            "objects another surviving path or a staged entry shares, and _lakefs/.",
        ),
    )
    code = 0
    for slug, name, command, explain, kept in jobs:
        report = workdir / "reports" / slug
        files_before = _count_files(sample.namespace_path)
        print(f"\n== {name}: dry run (mark)")
        code = cli([*command, "--dry-run", "--report", str(report)])
        if code != 0:
            return code
        explain(report)
        print(f"\n== {name}: sweep (delete what the dry run marked)")
        code = cli(["sweep", "--report", str(report), "--state", str(state)])
        summary = json.loads((report / "summary.json").read_text())
        print(
            f"   {files_before} objects before, {_count_files(sample.namespace_path)} after: deleted "
            f"{summary.get('num_deleted')}, failed {summary.get('num_failed')}.\n   {kept}\n   Report: {report}"
        )
        if code != 0:
            return code
    print(f"\n== result: {before} objects before the jobs, {_count_files(sample.namespace_path)} after. Reports: {workdir / 'reports'}")
    return code


def _explain_committed(report: Path) -> None:
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
    _show_marked(report, "only expired commits reference it (was {example_path})")


def _explain_uncommitted(report: Path) -> None:
    summary = json.loads((report / "summary.json").read_text())
    print(
        f"   {summary['run_mode']} run: {summary.get('uncommitted_objects')} objects no commit references "
        f"({summary.get('staged_objects')} of them staged, {summary.get('too_young_objects')} younger than --min-age); "
        f"{summary['num_marked']} marked ({summary['bytes_marked']} bytes)"
    )
    _show_marked(report, "no commit and no staged entry references it")


def _explain_lifecycle(report: Path) -> None:
    summary = json.loads((report / "summary.json").read_text())
    print(
        f"   {summary['potential_commits']} of {summary['commits']} commits read; {summary['paths_newly_expired']} "
        f"paths expired; {summary['addresses_kept_for_duplicates']} objects kept because a surviving path or a "
        f"staged entry shares them; {summary['num_marked']} marked ({summary['bytes_marked']} bytes)"
    )
    _show_marked(report, "expired by rule(s) {matched_rules} as {paths}")


def _show_marked(report: Path, why: str) -> None:
    with open(report / "addresses.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    first_paths = [(row.get("example_path") or row.get("paths") or "").split(";")[0] for row in rows]
    tables = Counter(path.split("/")[0] for path in first_paths if path)
    if tables:
        print("   marked objects by table: " + ", ".join(f"{t} {n}" for t, n in sorted(tables.items())))
    for row in rows[:5]:
        print(f"   - {row['address']}: {why.format(**row)}")
    if len(rows) > 5:
        print(f"   ... and {len(rows) - 5} more in {report / 'addresses.csv'}")
