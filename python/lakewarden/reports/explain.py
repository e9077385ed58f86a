"""``lakewarden explain --report DIR ADDRESS_OR_PATH``: why one object is marked or kept.

An audit of a dry run asks, per object: which commits hold it and under which logical paths,
whether each of those commits is active or expired and why (branch HEAD, within the retention
of branch X, dangling within the default retention, tag), which staged entries reference it,
and which rule or retention applies. The answer is read from the report directory alone --
``summary.json``, ``addresses.csv`` and, for committed GC, ``commits.csv`` -- and from the
snapshot directory the summary records (pyarrow, ``ranges``/``staged`` streamed with a filter;
no Spark, no warehouse). The verdict itself (marked or not) is the run's, from addresses.csv:
explain shows the evidence, it does not decide again.

Exit status: 0 when the object is found (marked or kept), 1 when this run's snapshot and report
do not know it (the answer says so), 2 for bad input (no report, no recorded snapshot).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, TextIO

from lakewarden.errors import BadInput
from lakewarden.reports.directory import ADDRESSES, SUMMARY

#: At most this many commits per object are printed (``--json`` lists every one).
SHOWN_COMMITS = 12
#: A path query explains at most this many of the addresses the path has had.
MAX_ADDRESSES = 10

csv.field_size_limit(1 << 30)


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = subparsers.add_parser(
        "explain",
        help="why an object is marked or kept in a run (commits, paths, states, rules)",
        description="Explain one object of a run from its report directory: the commits and logical paths "
        "that hold it, each commit's state and reason, staged references, and the rule or retention "
        "that applies. ADDRESS_OR_PATH is an address as addresses.csv shows it, a physical address "
        "(URI) inside the namespace, or a logical path. Exit 0 found, 1 unknown to this run, 2 bad input.",
    )
    parser.add_argument("--report", required=True, type=Path, metavar="DIR", help="the run's report directory")
    parser.add_argument("target", metavar="ADDRESS_OR_PATH", help="an address, a physical address or a logical path")
    parser.add_argument("--json", action="store_true", help="print the explanation as JSON")
    parser.set_defaults(func=run)


@dataclass
class Holder:
    """One commit that holds the object, under one or more paths."""

    commit_id: str
    created_at: str
    paths: set[str] = field(default_factory=set)
    branches: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    state: str = ""
    reason: str = ""


@dataclass
class Explanation:
    address: str
    marked: bool
    marked_row: dict[str, str] | None
    holders: list[Holder]
    staged: list[dict[str, Any]]
    sizes: set[int]
    last_modified: set[str]
    verdict: str
    rules: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "marked": self.marked,
            "verdict": self.verdict,
            "rules": self.rules,
            "marked_row": self.marked_row,
            "commits": [
                {
                    "commit_id": h.commit_id,
                    "created_at": h.created_at,
                    "paths": sorted(h.paths),
                    "branches": h.branches,
                    "tags": h.tags,
                    "state": h.state,
                    "reason": h.reason,
                }
                for h in self.holders
            ],
            "staged": self.staged,
        }


def load_summary(report: Path) -> dict[str, Any]:
    path = report / SUMMARY
    if not path.is_file():
        raise BadInput("no summary.json: not a lakewarden report", source=str(report), field="--report")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BadInput(f"unreadable ({exc})", source=str(path)) from None
    if not isinstance(summary, dict):
        raise BadInput("not a JSON object", source=str(path))
    return summary


def snapshot_of(report: Path, summary: dict[str, Any]) -> Path:
    recorded = summary.get("snapshot_dir")
    if not recorded:
        raise BadInput("the run did not record its snapshot directory", source=str(report / SUMMARY), field="snapshot_dir")
    snapshot = Path(recorded)
    if not (snapshot / "repository.json").is_file():
        raise BadInput(f"{snapshot} is no longer a snapshot directory", source=str(report / SUMMARY), field="snapshot_dir")
    return snapshot


def candidate_addresses(target: str, namespace: str) -> set[str]:
    """The forms ``target`` may take in entries: as given, and relative to the namespace when it
    is a URI inside it (a RELATIVE entry holds it relative)."""
    forms = {target}
    root = namespace.rstrip("/") + "/"
    if target.startswith(root):
        forms.add(target[len(root) :])
    elif "://" not in target and not target.startswith("/"):
        forms.add(root + target)
    return forms


def marked_rows(report: Path, addresses: set[str]) -> Iterator[dict[str, str]]:
    """Rows of addresses.csv for ``addresses`` or their physical addresses (streamed)."""
    path = report / ADDRESSES
    if not path.is_file():
        return
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row.get("address") in addresses or row.get("physical_address") in addresses:
                yield row


def commit_states(report: Path, wanted: set[str]) -> dict[str, tuple[bool, str]]:
    """commit_id -> (is_active, reason) from committed GC's commits.csv, for ``wanted`` only."""
    states: dict[str, tuple[bool, str]] = {}
    path = report / "commits.csv"
    if path.is_file():
        with open(path, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                if row["commit_id"] in wanted:
                    states[row["commit_id"]] = (row["is_active"].lower() == "true", row["reason"])
    return states


def retention_days(summary: dict[str, Any], branch: str | None) -> int | None:
    rules = summary.get("rules")
    if not isinstance(rules, dict):
        return None
    if branch is not None and branch in (rules.get("branches") or {}):
        return int(rules["branches"][branch])
    return rules.get("default_retention_days")


def expired_reason(summary: dict[str, Any], branches: list[str]) -> str:
    """Why an expired commit expired, from the rules the run recorded."""
    if summary.get("rules") is None:
        return "expired"
    reached = [b for b in branches if not b.startswith("(")]
    if not reached:
        return f"expired: dangling (no branch reaches it) and older than the default retention ({retention_days(summary, None)} days)"
    parts = ", ".join(f"{b} ({retention_days(summary, b)} days)" for b in reached)
    return f"expired: before the retention threshold of every branch reaching it: {parts}"


def lifecycle_rules(summary: dict[str, Any], paths: set[str], branches: set[str]) -> list[str]:
    """The policy's rules covering ``paths``, with the days that apply on each branch."""
    policy = summary.get("policy") or {}
    lines = []
    for rule_id, rule in sorted(policy.items()):
        covered = sorted(p for p in paths if p.startswith(rule.get("prefix", "")))
        if not covered:
            continue
        if not rule.get("enabled", True):
            lines.append(f"rule {rule_id} (prefix {rule['prefix']!r}) covers it but is disabled")
            continue
        days = {b: rule.get("branch_days", {}).get(b, rule.get("days")) for b in sorted(branches) if not b.startswith("(")}
        per_branch = ", ".join(f"{b}: {'no expiry' if d is None else f'{d} days'}" for b, d in days.items())
        default = "no all-branches days" if rule.get("days") is None else f"{rule['days']} days elsewhere"
        lines.append(f"rule {rule_id} (prefix {rule['prefix']!r}; {default}) covers {covered[0]}" + (f"; on {per_branch}" if per_branch else ""))
    return lines or ["no lifecycle rule covers its paths: lifecycle never expires it"]


def explain(report: Path, target: str) -> list[Explanation]:
    """Explanations for every address ``target`` names (an address or a path); [] when unknown."""
    import pyarrow.dataset as ds

    from lakewarden.commit_graph import DANGLING
    from lakewarden.snapshot.scan import CommitIndex, rows

    report = Path(report)
    summary = load_summary(report)
    snapshot = snapshot_of(report, summary)
    namespace = str(summary.get("storage_namespace") or "")
    job = str(summary.get("job") or "")
    forms = candidate_addresses(target, namespace)

    # entries naming the target as an address, or holding it as a logical path
    entries = list(
        rows(
            snapshot,
            "ranges",
            ["range_id", "key", "address", "last_modified", "size"],
            ds.field("address").isin(sorted(forms)) | (ds.field("key") == target),
        )
    )
    staged_rows = list(
        rows(
            snapshot,
            "staged",
            ["branch_id", "key", "address", "last_modified"],
            ds.field("address").isin(sorted(forms)) | (ds.field("key") == target),
        )
    )
    addresses: list[str] = []
    for entry in sorted(entries, key=lambda e: str(e["last_modified"]), reverse=True):
        if entry["address"] not in addresses:
            addresses.append(entry["address"])
    for entry in staged_rows:
        if entry["address"] not in addresses:
            addresses.append(entry["address"])
    marked = {row["address"]: row for row in marked_rows(report, forms)}
    for address in marked:
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        return []
    addresses = addresses[:MAX_ADDRESSES]
    if set(addresses) - forms:  # a path: its addresses' entries under any path, and their marks
        wanted = set(addresses)
        entries = list(rows(snapshot, "ranges", ["range_id", "key", "address", "last_modified", "size"], ds.field("address").isin(sorted(wanted))))
        staged_rows = list(rows(snapshot, "staged", ["branch_id", "key", "address", "last_modified"], ds.field("address").isin(sorted(wanted))))
        marked = {row["address"]: row for row in marked_rows(report, wanted)}

    index = CommitIndex(snapshot)
    results = []
    for address in addresses:
        holders: dict[str, Holder] = {}
        sizes: set[int] = set()
        modified: set[str] = set()
        for entry in (e for e in entries if e["address"] == address):
            sizes.add(int(entry["size"] or 0))
            modified.add(str(entry["last_modified"]))
            for commit_id in index.commits_of_range.get(entry["range_id"], ()):
                commit = index.commits[commit_id]
                holder = holders.setdefault(commit_id, Holder(commit_id, str(commit.get("creation_date"))))
                holder.paths.add(entry["key"])
        states = commit_states(report, set(holders)) if job in ("gc-committed", "gc") else {}
        for holder in holders.values():
            holder.branches = sorted(index.branches_of.get(holder.commit_id) or {DANGLING})
            holder.tags = sorted(index.tags.get(holder.commit_id, ()))
            if holder.commit_id in states:
                active, reason = states[holder.commit_id]
                holder.state = "active" if active else "expired"
                holder.reason = reason if active else expired_reason(summary, holder.branches)
            else:
                heads = [b for b, head in index.heads.items() if head == holder.commit_id]
                holder.state = "head" if heads else "held"
                holder.reason = f"HEAD of branch {', '.join(sorted(heads))}" if heads else "on " + ", ".join(holder.branches)
        ordered = sorted(holders.values(), key=lambda h: (h.created_at, h.commit_id), reverse=True)
        staged = [
            {"branch_id": s["branch_id"], "key": s["key"], "last_modified": str(s["last_modified"])}
            for s in staged_rows
            if s["address"] == address
        ]
        row = marked.get(address)
        results.append(
            Explanation(
                address=address,
                marked=row is not None,
                marked_row=row,
                holders=ordered,
                staged=staged,
                sizes=sizes,
                last_modified=modified,
                verdict=verdict(job, summary, row, ordered, staged),
                rules=applicable_rules(job, summary, ordered, staged),
            )
        )
    return results


def applicable_rules(job: str, summary: dict[str, Any], holders: list[Holder], staged: list[dict[str, Any]]) -> list[str]:
    if job == "gc":  # lakewarden gc: committed GC's rules, then uncommitted GC's
        return applicable_rules("gc-committed", summary, holders, staged) + applicable_rules("gc-uncommitted", summary, holders, staged)
    if job == "gc-committed":
        rules = summary.get("rules")
        if rules is None:
            return ["no GC rules were given: nothing expires"]
        branches = sorted({b for h in holders for b in h.branches if not b.startswith("(")})
        lines = [f"default retention {rules.get('default_retention_days')} days (dangling commits, branches without a rule)"]
        lines += [f"branch {b}: {retention_days(summary, b)} days" for b in branches]
        if summary.get("retain_tags", True):
            lines.append("tagged commits are kept active (--retain-tags)")
        return lines
    if job == "lifecycle":
        paths = {p for h in holders for p in h.paths} | {s["key"] for s in staged}
        on_branches = {b for h in holders for b in h.branches}
        return lifecycle_rules(summary, paths, on_branches)
    if job == "gc-uncommitted":
        minimum = summary.get("min_age_seconds")
        return [f"objects younger than --min-age ({minimum} s) are never marked; referenced objects never are"]
    return []


def verdict(job: str, summary: dict[str, Any], row: dict[str, str] | None, holders: list[Holder], staged: list[dict[str, Any]]) -> str:
    if row is not None:
        if job == "gc":  # the row's reason says which of the two marks it is
            job = "gc-committed" if row.get("reason") == "expired commits only" else "gc-uncommitted"
        if job == "gc-committed":
            return f"MARKED: only expired commits reference it ({len(holders)} commits, all expired) and no staged entry does"
        if job == "lifecycle":
            return f"MARKED: expired by rule(s) {row.get('matched_rules')} on every branch that shows its path(s) {row.get('paths')}"
        if job == "gc-uncommitted":
            return f"MARKED: no commit and no staged entry references it (found in the {row.get('candidate_source')})"
        return "MARKED"
    reasons = []
    active = [h for h in holders if h.state in ("active", "head")]
    if active:
        reasons.append(f"{len(active)} active commit(s) hold it, e.g. {active[0].commit_id[:12]} ({active[0].reason})")
    if staged:
        reasons.append(f"staged on branch {', '.join(sorted({s['branch_id'] for s in staged}))}")
    if job == "lifecycle" and holders:
        reasons.append("no rule expires it on every branch that shows it, or another surviving path shares it")
    if job == "gc-uncommitted" and holders:
        reasons.append(f"{len(holders)} commit(s) reference it")
    if not reasons and holders and job in ("gc-committed", "gc"):
        reasons.append("its commits are expired, but the run did not mark it (outside the namespace, under _lakefs/, or shared with a live entry under another form)")
    return "KEPT: " + ("; ".join(reasons) if reasons else "this run did not mark it")


def print_text(explanations: list[Explanation], summary: dict[str, Any], stream: TextIO) -> None:
    print(f"run {summary.get('run_id')} ({summary.get('job')}, clock {summary.get('now')}, namespace {summary.get('storage_namespace')})", file=stream)
    for item in explanations:
        print(f"\n{item.address}", file=stream)
        print(f"  {item.verdict}", file=stream)
        details = []
        if item.sizes:
            details.append(f"size {', '.join(map(str, sorted(item.sizes)))} bytes")
        if item.last_modified:
            details.append(f"last modified {max(item.last_modified)}")
        if details:
            print(f"  {'; '.join(details)}", file=stream)
        paths = sorted({p for h in item.holders for p in h.paths})
        if paths:
            print(f"  logical paths: {', '.join(paths[:5])}" + (f" (+{len(paths) - 5} more)" if len(paths) > 5 else ""), file=stream)
        print(f"  held by {len(item.holders)} commit(s):", file=stream)
        for holder in item.holders[:SHOWN_COMMITS]:
            tags = f" tags {','.join(holder.tags)}" if holder.tags else ""
            print(
                f"    {holder.commit_id[:12]} {holder.created_at[:19]} {holder.state:<7} {holder.reason}"
                f" [branches: {', '.join(holder.branches)}{tags}]",
                file=stream,
            )
        if len(item.holders) > SHOWN_COMMITS:
            print(f"    ... and {len(item.holders) - SHOWN_COMMITS} more (--json lists all)", file=stream)
        for entry in item.staged:
            print(f"  staged on {entry['branch_id']} as {entry['key']}", file=stream)
        if item.rules:
            print("  applies: " + "\n           ".join(item.rules), file=stream)


def run(args: argparse.Namespace) -> int:
    report = Path(args.report)
    summary = load_summary(report)
    explanations = explain(report, args.target)
    if args.json:
        print(json.dumps({"run_id": summary.get("run_id"), "job": summary.get("job"), "target": args.target, "found": bool(explanations),
                          "objects": [e.to_json() for e in explanations]}, indent=2, default=str))
    elif explanations:
        print_text(explanations, summary, sys.stdout)
    if not explanations:
        print(
            f"lakewarden: {args.target} is not an address, physical address or path of run {summary.get('run_id')}: "
            "no entry in its snapshot, no staged entry and no marked address names it",
            file=sys.stderr,
        )
        return 1
    return 0
