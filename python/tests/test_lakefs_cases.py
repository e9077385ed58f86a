"""lakeFS's own test cases run through lakewarden: the 11 TestActiveCommits cases (commit walk and
``gc committed`` end to end), the Spark client's CommittedAddressListerSpec, lakeFS's parent
order for version-0 merges, empty metaranges, and the cross-check against lakeFS's own answer
(``lakefs_gc_commits.csv``) that makes a job refuse to mark anything when it would keep less
than lakeFS."""

from __future__ import annotations

import csv
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from lakefs_cases import (
    ACTIVE_COMMIT_CASES,
    ADDRESS_LISTER_ENTRIES,
    ADDRESS_LISTER_EXPECTED,
    ADDRESS_LISTER_NAMESPACE,
    DEFAULT_RETENTION_DAYS,
    ORDER_DEPENDENT_CASE,
)
from lakewarden.cli import main
from lakewarden.commit_graph import CommitGraph, StartPoint
import report_files

DAY = 86_400.0
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
NOW_TEXT = "2026-01-01T00:00:00Z"
SEP = "__"

# A version-0 merge on main (lakeFS before its parent switch lists the main parent LAST): the
# walk must follow m2, not the merged side branch s1. And a commit that empties the tree.
EXTRA_CASES: dict[str, tuple[dict[str, tuple[int, list[str], int]], dict[str, int], set[str]]] = {
    "version0_merge": (
        {"m1": (20, [], 0), "m2": (10, ["m1"], 0), "s1": (9, ["m1"], 0), "M": (1, ["s1", "m2"], 0)},
        {"M": 7},
        {"M", "m2"},
    ),
    "empty_tree": (
        {"e0": (10, [], 1), "e1": (3, ["e0"], 1), "e2": (1, ["e1"], 1)},
        {"e2": 2},
        {"e2", "e1"},
    ),
}
EMPTY_TREE_COMMIT = f"empty_tree{SEP}e2"


def walk(commits: dict[str, tuple], heads: dict[str, int], versions: dict[str, int] | None = None) -> set[str]:
    """lakewarden's active set for one case, from the commit walk alone (no Spark)."""
    now = NOW.timestamp()
    ids = list(commits)
    graph = CommitGraph(
        ids,
        [commits[c][1] for c in ids],
        [now - commits[c][0] * DAY for c in ids],
        [(versions or {}).get(c, 1) for c in ids],
    )
    starts = [StartPoint(h, h, now - days * DAY) for h, days in sorted(heads.items())]
    starts += [StartPoint(c, None, now - DEFAULT_RETENTION_DAYS * DAY) for c in graph.dangling_commits(heads)]
    return {a.commit_id for a in graph.active_commits(starts)}


@pytest.mark.parametrize("case", sorted(ACTIVE_COMMIT_CASES))
def test_lakefs_active_commit_case_walk(case: str) -> None:
    commits, heads, expected = ACTIVE_COMMIT_CASES[case]
    assert walk(commits, heads) == expected


def test_lakefs_order_dependent_case_keeps_the_union() -> None:
    """The documented difference: lakeFS's answer depends on commit ids; lakewarden keeps more."""
    commits, heads, lakefs_answer, ours = ORDER_DEPENDENT_CASE
    assert walk(commits, heads) == ours
    assert lakefs_answer < ours


@pytest.mark.parametrize("case", sorted(EXTRA_CASES))
def test_extra_case_walk(case: str) -> None:
    commits, heads, expected = EXTRA_CASES[case]
    plain = {c: (days, parents) for c, (days, parents, _) in commits.items()}
    assert walk(plain, heads, {c: v for c, (_, _, v) in commits.items()}) == expected


# -- end to end through `lakewarden gc committed` ------------------------------------------------


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _stamp(days: float) -> str:
    return (NOW - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def all_cases() -> dict[str, tuple[dict[str, tuple[int, list[str], int]], dict[str, int], set[str]]]:
    """Every case in one repository: ids prefixed ``<case>__`` (one disjoint DAG per case)."""
    cases: dict[str, tuple[dict[str, tuple[int, list[str], int]], dict[str, int], set[str]]] = {}
    for name, (commits, heads, expected) in ACTIVE_COMMIT_CASES.items():
        cases[name] = ({c: (d, p, 1) for c, (d, p) in commits.items()}, heads, expected)
    commits, heads, _, ours = ORDER_DEPENDENT_CASE
    cases["order_dependent"] = ({c: (d, p, 1) for c, (d, p) in commits.items()}, heads, ours)
    cases.update(EXTRA_CASES)
    return cases


def write_cases_snapshot(directory: Path) -> tuple[Path, dict, dict[str, set[str]]]:
    """Snapshot of every case: commit X holds one object ``data/X`` in its own range; the
    empty-tree commit has an empty metarange (one row, range_id null)."""
    snapshot, namespace = directory / "snapshot", directory / "namespace"
    snapshot.mkdir(parents=True)
    (namespace / "data").mkdir(parents=True)
    (snapshot / "repository.json").write_text(
        json.dumps({"repository_id": "cases", "storage_namespace": namespace.as_uri(), "default_branch": "main"})
    )
    commits, metaranges, ranges, branches, rules_branches = [], [], [], [], []
    expected: dict[str, set[str]] = {}
    for case, (case_commits, heads, active) in all_cases().items():
        expected[case] = {f"{case}{SEP}{c}" for c in active}
        for commit, (days, parents, version) in case_commits.items():
            cid = f"{case}{SEP}{commit}"
            commits.append(
                {
                    "commit_id": cid, "parents": [f"{case}{SEP}{p}" for p in parents], "creation_date": _stamp(days),
                    "meta_range_id": f"mr-{cid}", "committer": "lakeFS tests", "message": cid, "version": version,
                }
            )
            if cid == EMPTY_TREE_COMMIT:
                metaranges.append({"meta_range_id": f"mr-{cid}", "range_id": None})
                continue
            metaranges.append({"meta_range_id": f"mr-{cid}", "range_id": f"r-{cid}"})
            ranges.append(
                {
                    "range_id": f"r-{cid}", "key": f"tables/{cid}", "address": f"data/{cid}", "address_type": "RELATIVE",
                    "last_modified": _stamp(days), "size": 8, "etag": cid,
                }
            )
            (namespace / "data" / cid).write_bytes(b"contents")
        for head, days in heads.items():
            branch = f"{case}{SEP}{head}"
            branches.append({"branch_id": branch, "commit_id": branch, "hidden": False})
            rules_branches.append({"branch_id": branch, "retention_days": days})
    _jsonl(snapshot / "commits.jsonl", commits)
    _jsonl(snapshot / "metaranges.jsonl", metaranges)
    _jsonl(snapshot / "ranges.jsonl", ranges)
    _jsonl(snapshot / "branches.jsonl", branches)
    _jsonl(snapshot / "tags.jsonl", [])
    _jsonl(snapshot / "staged.jsonl", [])
    rules = {"default_retention_days": DEFAULT_RETENTION_DAYS, "branches": rules_branches}
    return snapshot, rules, expected


def run_dry(snapshot: Path, state: Path, report: Path, rules: dict, job: tuple[str, ...] = ("gc", "committed")) -> int:
    rules_path = report.parent / f"{report.name}-rules.json"
    rules_path.write_text(json.dumps(rules))
    args = [*job, "--snapshot", str(snapshot), "--state", str(state), "--report", str(report), "--now", NOW_TEXT, "--dry-run"]
    if job == ("gc", "committed"):
        args += ["--rules", str(rules_path)]
    return main(args)


def write_lakefs_answer(snapshot: Path, kept: dict[str, str]) -> None:
    """lakeFS's prepare_commits CSV as extract keeps it: commit_id,expired,metarange_id."""
    with open(snapshot / "lakefs_gc_commits.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["commit_id", "expired", "metarange_id"])
        for commit_id, metarange_id in sorted(kept.items()):
            writer.writerow([commit_id, "false", metarange_id])
    (snapshot / "lakefs_gc_commits.json").write_text(json.dumps({"run_id": "gc-test", "prepared_at": NOW_TEXT, "gc_rules": {}}))


@pytest.fixture(scope="module")
def cases_run(spark, test_state_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    workdir = tmp_path_factory.mktemp("lakefs-cases")
    snapshot, rules, expected = write_cases_snapshot(workdir)
    lakefs_kept = {cid: f"mr-{cid}" for case in ACTIVE_COMMIT_CASES for cid in expected[case]}
    write_lakefs_answer(snapshot, lakefs_kept)  # lakeFS's own answer for its 11 cases
    report = workdir / "report"
    assert run_dry(snapshot, test_state_dir, report, rules) == 0
    with open(report / "commits.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    with open(report / "addresses.csv", newline="", encoding="utf-8") as handle:
        marked = {row["address"] for row in csv.DictReader(handle)}
    return {"workdir": workdir, "snapshot": snapshot, "rules": rules, "expected": expected, "commits": rows, "marked": marked}


@pytest.mark.spark
@pytest.mark.parametrize("case", sorted(all_cases()))
def test_gc_committed_agrees_with_lakefs_case(cases_run, case: str) -> None:
    prefix = f"{case}{SEP}"
    active = {r["commit_id"] for r in cases_run["commits"] if r["commit_id"].startswith(prefix) and r["is_active"].lower() == "true"}
    everything = {r["commit_id"] for r in cases_run["commits"] if r["commit_id"].startswith(prefix)}
    assert active == cases_run["expected"][case]
    # exactly the objects of expired commits are marked (the empty-tree commit holds none)
    marked = {a for a in cases_run["marked"] if a.startswith(f"data/{prefix}")}
    assert marked == {f"data/{c}" for c in everything - active}


@pytest.mark.spark
def test_dry_run_changed_nothing(cases_run) -> None:
    namespace = cases_run["workdir"] / "namespace" / "data"
    assert len(list(namespace.iterdir())) == len([r for r in cases_run["commits"] if r["commit_id"] != EMPTY_TREE_COMMIT])


@pytest.mark.spark
def test_job_refuses_when_it_would_keep_less_than_lakefs(cases_run, test_state_dir: Path, capsys) -> None:
    """lakeFS keeps a commit lakewarden expires: nothing is marked, exit 1, the commit named."""
    snapshot = cases_run["snapshot"]
    kept = {cid: f"mr-{cid}" for cid in cases_run["expected"]["two_branches"]}
    kept["two_branches__a"] = "mr-two_branches__a"  # expired in lakewarden's answer
    write_lakefs_answer(snapshot, kept)
    report = cases_run["workdir"] / "refused"
    assert run_dry(snapshot, test_state_dir, report, cases_run["rules"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "two_branches__a" in err[0] and "refusing to mark anything" in err[0]
    summary = report_files.summary(report)
    assert summary["success"] is False and "two_branches__a" in summary["error"]
    assert not (report / "addresses.csv").exists(), "a refused run must leave nothing to sweep"


@pytest.mark.spark
def test_uncommitted_gc_refuses_a_snapshot_missing_a_commit_lakefs_keeps(cases_run, test_state_dir: Path, capsys) -> None:
    snapshot = cases_run["snapshot"]
    write_lakefs_answer(snapshot, {"gone-from-the-snapshot": "mr-x", "two_branches__f": "mr-two_branches__f"})
    report = cases_run["workdir"] / "refused-uncommitted"
    code = main(
        ["gc", "uncommitted", "--snapshot", str(snapshot), "--state", str(test_state_dir), "--report", str(report),
         "--now", NOW_TEXT, "--dry-run"]
    )
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gone-from-the-snapshot" in err[0] and "not in the snapshot" in err[0]
    assert not (report / "addresses.csv").exists()


def test_bad_lakefs_answer_is_bad_input(tmp_path: Path, capsys) -> None:
    snapshot, rules, _ = write_cases_snapshot(tmp_path)
    (snapshot / "lakefs_gc_commits.csv").write_text("commit,expired\nx,false\n")
    report = tmp_path / "report"
    assert run_dry(snapshot, tmp_path / "state", report, rules) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lakefs_gc_commits.csv" in err[0]
    assert not report.exists()


@pytest.mark.spark
def test_committed_address_lister_spec(spark, test_state_dir: Path, tmp_path: Path) -> None:
    """CommittedAddressListerSpec's entries, held only by an expired commit whose child emptied
    the tree: every managed address is marked (RELATIVE, BY_PREFIX_DEPRECATED and FULL inside
    the namespace), the FULL address outside the namespace never is."""
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    (snapshot / "repository.json").write_text(
        json.dumps({"repository_id": "spec", "storage_namespace": ADDRESS_LISTER_NAMESPACE, "default_branch": "main"})
    )
    _jsonl(
        snapshot / "commits.jsonl",
        [
            {"commit_id": "old", "parents": [], "creation_date": _stamp(10), "meta_range_id": "mr-old",
             "committer": "spec", "message": "data", "version": 1},
            {"commit_id": "emptied", "parents": ["old"], "creation_date": _stamp(5), "meta_range_id": "mr-empty",
             "committer": "spec", "message": "delete everything", "version": 1},
        ],
    )
    ranges = []
    for index, (key, address, address_type) in enumerate(ADDRESS_LISTER_ENTRIES):
        ranges.append(
            {"range_id": f"r{index % 3}", "key": f"{key}#{index}", "address": address, "address_type": address_type,
             "last_modified": _stamp(12), "size": 130, "etag": "e1ed577998f2d4425ccb1f3d014a6ca3"}
        )
    _jsonl(snapshot / "ranges.jsonl", ranges)
    _jsonl(
        snapshot / "metaranges.jsonl",
        [{"meta_range_id": "mr-old", "range_id": f"r{i}"} for i in range(3)] + [{"meta_range_id": "mr-empty", "range_id": None}],
    )
    _jsonl(snapshot / "branches.jsonl", [{"branch_id": "main", "commit_id": "emptied", "hidden": False}])
    _jsonl(snapshot / "tags.jsonl", [])
    _jsonl(snapshot / "staged.jsonl", [])
    report = tmp_path / "report"
    rules = {"default_retention_days": 1, "branches": [{"branch_id": "main", "retention_days": 1}]}
    assert run_dry(snapshot, test_state_dir, report, rules) == 0
    with open(report / "addresses.csv", newline="", encoding="utf-8") as handle:
        physical = {row["physical_address"] for row in csv.DictReader(handle)}
    root = ADDRESS_LISTER_NAMESPACE.rstrip("/") + "/"
    assert all(p.startswith(root) for p in physical)
    assert {p[len(root):] for p in physical} == ADDRESS_LISTER_EXPECTED
