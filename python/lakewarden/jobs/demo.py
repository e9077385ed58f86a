"""``lakewarden demo``: a sample repository on local disk, every job as a dry run then a sweep,
told as a tour: one short table per job (kept / marked / deleted, with reasons), then the path
of each job's report.html. The jobs' own output lines are kept out of the tour (``-v`` shows
them); progress goes to stderr."""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import logging
import shutil
from collections import Counter
from datetime import timedelta
from pathlib import Path

from lakewarden.jobs.common import rfc3339
from lakewarden.runtime.progress import human_bytes
from lakewarden.reports.figures import Group, read_figures
from lakewarden.reports.directory import REPORT_HTML
from lakewarden.reports.page import sweep_outcomes, write_report_html
from lakewarden.runtime.state_dir import add_state_option, state_dir

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
    add_state_option(parser, "the demo's sample repository and each job's state, under STATE/demo")
    parser.add_argument("--seed", type=int, default=7, help="sample repository seed (default 7)")
    parser.add_argument("--entries", type=int, default=3000, help="approximate entries in the sample (default 3000)")
    parser.set_defaults(func=run)


def _count_files(root: Path) -> int:
    return sum(1 for p in root.rglob("*") if p.is_file() and "_lakefs" not in p.relative_to(root).parts)


def _quietly(command: list[str], *, verbose: bool) -> int:
    """Run one lakewarden command in this process; its own stdout (per-job result lines, the
    sweep's JSON) is the tour's raw material, shown only with -v."""
    from lakewarden.cli import main as cli

    if verbose:
        return cli(command)
    with contextlib.redirect_stdout(io.StringIO()):
        return cli(command)


def run(args: argparse.Namespace) -> int:
    state = state_dir(args.state)
    verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
    workdir = state / "demo"
    if workdir.exists():
        shutil.rmtree(workdir)
    from lakewarden.sample import SampleConfig, generate  # pyarrow: only the demo pays it

    sample = generate(workdir, SampleConfig(seed=args.seed, entries=args.entries))
    rules_path = workdir / "gc_rules.json"
    rules_path.write_text(json.dumps(DEMO_RULES, indent=2) + "\n")
    policy_path = workdir / "lifecycle_policy.json"
    policy_path.write_text(json.dumps(DEMO_POLICY, indent=2) + "\n")
    now = sample.end + timedelta(days=1)
    before = _count_files(sample.namespace_path)
    print(
        f"lakewarden demo: a sample lakeFS repository in {workdir}\n"
        f"  {sample.commit_count} commits, {sample.range_rows} range entries, branches {', '.join(sample.branches)}; "
        f"deleted branches (their commits dangle): {', '.join(sample.deleted_branches) or 'none'}\n"
        f"  {before} objects in {sample.storage_namespace}; the clock (--now) is {rfc3339(now)}\n"
        f"  each job runs as a dry run (mark, report), then a sweep deletes what it marked"
    )
    # the jobs keep their ledgers and histories with the sample, not in the user's state dir: a
    # second demo starts afresh (lifecycle's ledger would otherwise make it an incremental run
    # that finds nothing new), and the sample's runs never enter the user's ledgers
    job_state = workdir / "state"
    snapshot = ["--snapshot", str(sample.snapshot_dir), "--now", rfc3339(now), "--state", str(job_state)]
    jobs = (
        ("gc-committed", f"committed retention GC, rules {json.dumps(DEMO_RULES)}", ["gc", "committed", *snapshot, "--rules", str(rules_path)], _kept_committed),
        ("gc-uncommitted", "uncommitted GC, --min-age 24h", ["gc", "uncommitted", *snapshot, "--min-age", "24h"], _kept_uncommitted),
        ("lifecycle", f"lifecycle policy {json.dumps(DEMO_POLICY)}", ["lifecycle", *snapshot, "--policy", str(policy_path)], _kept_lifecycle),
    )
    pages: list[Path] = []
    for slug, title, command, kept_reasons in jobs:
        report = workdir / "reports" / slug
        code = _quietly([*command, "--dry-run", "--report", str(report)], verbose=verbose)
        if code != 0:
            print(f"  {slug}: the dry run failed (exit {code}); see {report / 'summary.json'}")
            return code
        code = _quietly(["sweep", "--report", str(report), "--state", str(job_state)], verbose=verbose)
        remaining = _count_files(sample.namespace_path)
        print(f"\n{title}")
        print(_table(_rows(report, remaining, kept_reasons(report))))
        write_report_html(report, job_state)  # the page as the sweep left it (no-op if already current)
        pages.append(report / REPORT_HTML)
        if code != 0:
            print(f"  the sweep of {report} did not finish (exit {code}); its report says why")
            return code
    after = _count_files(sample.namespace_path)
    print(f"\n{before} objects before the jobs, {after} after. Why one object was kept or deleted: "
          f"lakewarden explain --report {pages[0].parent} ADDRESS_OR_PATH")
    print("reports:")
    for page in pages:
        print(f"  {page}")
    return 0


def _rows(report: Path, remaining: int, kept: list[str]) -> list[tuple[str, str, str, str]]:
    """kept / marked / deleted (/ failed) rows: objects, bytes, why."""
    figures = read_figures(report)
    total = figures.total if figures is not None else Group()
    statuses, failures, _ = sweep_outcomes(report)
    reasons = sorted(figures.by_reason.rows(), key=lambda item: -item[1].objects) if figures is not None else []
    marked_why = "; ".join(f"{name} ({group.objects})" if len(reasons) > 1 else name for name, group in reasons) or "nothing qualifies"
    rows = [
        ("kept", f"{remaining:,}", "", "; ".join(kept)),
        ("marked", f"{total.objects:,}", human_bytes(total.bytes), marked_why),
        ("deleted", f"{statuses.get('deleted', 0):,}", "", "the sweep deleted what the dry run marked"),
    ]
    if failures:
        rows.append(("failed", f"{sum(failures.values()):,}", "", "; ".join(f"{r} ({n})" for r, n in failures.most_common(3))))
    return rows


def _table(rows: list[tuple[str, str, str, str]]) -> str:
    width = max(len(row[1]) for row in rows)
    lines = [f"  {'':8} {'objects':>{max(width, 7)}} {'bytes':>9}  why"]
    for what, count, size, why in rows:
        lines.append(f"  {what:8} {count:>{max(width, 7)}} {size:>9}  {why}")
    return "\n".join(lines)


def _kept_committed(report: Path) -> list[str]:
    with open(report / "commits.csv", newline="", encoding="utf-8") as handle:
        reasons = Counter(
            _reason_kind(row["reason"]) for row in csv.DictReader(handle) if row["is_active"].lower() == "true"
        )
    held = ", ".join(f"{kind} ({count})" for kind, count in reasons.most_common())
    return [f"an active commit holds them: {held}", "or a staged entry, or outside the namespace, or _lakefs/"]


def _reason_kind(reason: str) -> str:
    for prefix in ("HEAD of branch", "within the retention of branch", "dangling", "tagged"):
        if reason.startswith(prefix):
            return {"HEAD of branch": "branch HEAD", "within the retention of branch": "within a branch's retention",
                    "dangling": "dangling within the default retention", "tagged": "tagged"}[prefix]
    return reason


def _kept_uncommitted(report: Path) -> list[str]:
    summary = json.loads((report / "summary.json").read_text())
    return [
        f"a commit or a staged entry references them ({summary.get('staged_objects')} staged)",
        f"younger than --min-age ({summary.get('too_young_objects')})",
    ]


def _kept_lifecycle(report: Path) -> list[str]:
    summary = json.loads((report / "summary.json").read_text())
    return [
        "no rule covers their paths, or younger than the rule's days on a branch that shows them",
        f"shared with a surviving path or staged entry ({summary.get('addresses_kept_for_duplicates')})",
    ]
