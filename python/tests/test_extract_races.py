"""lakeFS changes while extract runs: a branch deleted between the calls (lakeFS issue #9772).

lakeFS's own GC failed with ``404 branch not found`` when a branch went away during its scan.
Extract lists branches, asks lakeFS for its GC answer, reads staged entries (by diff + stat on
servers without prepare_uncommited) and dumps refs; a branch may disappear between any two of
those calls. The fake lakeFS runs the deletion right after the named call answered
(``FakeLakeFS.after_request``), and the expected answers come from the fake, not from extract.
"""

from __future__ import annotations

import csv
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from fake_lakefs import serve  # noqa: F401 - a fixture
from fake_lakefs import SCENARIO_NOW, FakeLakeFS, LocalNamespace, Scenario, build_scenario, use_scenario_credentials
from lakewarden.cli import main
from lakewarden.errors import BadInput
from lakewarden.extract import extract_repository
from lakewarden.lakefs.client import resolve_config

NOW = SCENARIO_NOW.isoformat().replace("+00:00", "Z")


@pytest.fixture
def creds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_scenario_credentials(monkeypatch, tmp_path)


@pytest.fixture
def scenario(tmp_path: Path) -> Scenario:
    return build_scenario(LocalNamespace(tmp_path / "storage" / "ns"))




def _doomed_branch(scenario: Scenario) -> tuple[str, str]:
    """A branch whose head is 30 days old (the default retention is 7) and alone references one
    object: lakeFS keeps that head while the branch exists, and lets it expire once deleted."""
    fake = scenario.fake
    fake.branch("doomed", scenario.commits["m1"])
    address = fake.upload("doomed", "d.csv", SCENARIO_NOW - timedelta(days=31))
    head = fake.commit("doomed", "doomed work", SCENARIO_NOW - timedelta(days=30))
    return head, address


def _extract(endpoint: str, out: Path) -> Any:
    return extract_repository(config=resolve_config(endpoint), repository="repo1", out=out, cache_dir=out.parent / "cache")


def _branches(snapshot: Path) -> dict[str, tuple[str, bool]]:
    return {r["branch_id"]: (r["commit_id"], r["hidden"]) for r in pq.read_table(snapshot / "branches.parquet").to_pylist()}


def _lakefs_kept(snapshot: Path) -> set[str]:
    with open(snapshot / "lakefs_gc_commits.csv", newline="", encoding="utf-8") as handle:
        return {row["commit_id"] for row in csv.DictReader(handle)}


def test_branch_deleted_after_lakefs_answered_is_kept_at_its_listed_head(
    scenario: Scenario, serve: Any, creds: None, tmp_path: Path
) -> None:
    """Deleted between lakeFS's GC answer and the dump: lakeFS's answer kept its head as a branch
    head; the dump no longer has the branch. The snapshot keeps it, so no job expires that head."""
    fake = scenario.fake
    head, _ = _doomed_branch(scenario)
    fake.after_request["prepare_commits_async"] = lambda _: fake.delete_branch("doomed")

    result = _extract(serve(fake), tmp_path / "snap")

    assert "doomed" not in fake.branches  # the race did happen
    assert head in _lakefs_kept(tmp_path / "snap")  # lakeFS's answer saw the branch
    assert _branches(tmp_path / "snap")["doomed"] == (head, True)  # not listed as visible any more
    assert result.deleted_branches == {"doomed": head}
    assert "branches deleted while extracting, kept at their listed heads: doomed" in result.summary()
    assert head in {r["commit_id"] for r in pq.read_table(tmp_path / "snap" / "commits.parquet").to_pylist()}


def test_branch_deleted_before_extract_is_a_dangling_tip(scenario: Scenario, serve: Any, creds: None, tmp_path: Path) -> None:
    """The control: a branch deleted before extract lists anything is not brought back."""
    fake = scenario.fake
    _doomed_branch(scenario)
    fake.delete_branch("doomed")
    result = _extract(serve(fake), tmp_path / "snap")
    assert "doomed" not in _branches(tmp_path / "snap") and result.deleted_branches == {}


def test_branch_deleted_while_staged_entries_are_read_by_diff(
    scenario: Scenario, serve: Any, creds: None, tmp_path: Path
) -> None:
    """A server without prepare_uncommited: extract diffs each listed branch. dev is deleted right
    after the listing, so its diff answers 404 "branch not found": its staged entries went with
    it (as in lakeFS), and the other branches' are read in full."""
    fake, addr = scenario.fake, scenario.addresses
    fake.disabled = {"prepare_uncommitted"}
    dev_head = fake.branches["dev"].commit_id
    fake.after_request["list_branches"] = lambda _: fake.delete_branch("dev")

    result = _extract(serve(fake), tmp_path / "snap")

    assert ("GET", "/api/v1/repositories/repo1/branches/dev/diff") in fake.requests  # dev answered 404
    staged = {(r["branch_id"], r["key"], r["address"]) for r in pq.read_table(tmp_path / "snap" / "staged.parquet").to_pylist()}
    assert staged == {("main", "b.csv", addr["B2"])}
    assert result.deleted_branches == {"dev": dev_head}


def _after_diff_of(fake: FakeLakeFS, branch: str, action: Any) -> None:
    """Run ``action`` once, right after ``branch``'s diff answered (other branches' diffs pass)."""

    def step(params: dict[str, str]) -> None:
        # the request that answered, not the last one recorded: extract reads branches in parallel
        if params.get("branch") == branch:
            action()
        else:
            fake.after_request["diff_branch"] = step

    fake.after_request["diff_branch"] = step


def test_entry_unstaged_between_diff_and_stat_is_skipped(scenario: Scenario, serve: Any, creds: None, tmp_path: Path) -> None:
    """The stat of an entry the diff listed answers 404 (reset since): no longer staged, skipped."""
    fake, addr = scenario.fake, scenario.addresses
    fake.disabled = {"prepare_uncommitted"}
    _after_diff_of(fake, "dev", lambda: fake.branches["dev"].staging.pop("new/d.csv"))

    result = _extract(serve(fake), tmp_path / "snap")

    assert ("GET", "/api/v1/repositories/repo1/refs/dev/objects/stat") in fake.requests
    rows = pq.read_table(tmp_path / "snap" / "staged.parquet").to_pylist()
    assert {(r["branch_id"], r["key"]) for r in rows} == {("dev", "ext.csv"), ("main", "b.csv")}
    assert addr["D1"] not in {r["address"] for r in rows} and result.deleted_branches == {}


def test_branch_gone_and_back_is_refused_in_one_line(
    scenario: Scenario, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """dev is deleted after the listing and created again right after its diff answered 404:
    lakeFS lists it again, so extract cannot tell what its staged entries are. Exit 2, one line,
    nothing written."""
    fake = scenario.fake
    fake.disabled = {"prepare_uncommitted"}
    dev = fake.branches["dev"]

    def arm() -> None:
        fake.after_request["list_branches"] = lambda _: fake.delete_branch("dev")
        _after_diff_of(fake, "dev", lambda: fake.branches.__setitem__("dev", dev))

    endpoint = serve(fake)
    arm()
    with pytest.raises(BadInput, match="branch 'dev' answered 404 .* still lists it"):
        _extract(endpoint, tmp_path / "snap")
    arm()
    out = tmp_path / "out"
    code = main(["extract", "--lakefs-endpoint", endpoint, "--repo", "repo1", "--out", str(out), "--cache-dir", str(tmp_path / "c")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "run extract again" in err[0] and not out.exists(), err


@pytest.mark.spark
def test_gc_committed_keeps_what_lakefs_kept_for_the_deleted_branch(
    spark: Any, test_state_dir: Path, scenario: Scenario, serve: Any, creds: None, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """End to end: after the race, gc committed marks nothing the deleted branch's head held and
    agrees with lakeFS's answer. Without the kept branch (removed by hand below) the same
    snapshot would expire that head while lakeFS keeps it, and the job refuses (exit 1)."""
    fake = scenario.fake
    head, address = _doomed_branch(scenario)
    fake.after_request["prepare_commits_async"] = lambda _: fake.delete_branch("doomed")
    snapshot = tmp_path / "snap"
    _extract(serve(fake), snapshot)

    def gc(snap: Path, report: Path) -> int:
        return main(["gc", "committed", "--snapshot", str(snap), "--rules", str(snap / "gc_rules.json"), "--state",
                     str(test_state_dir), "--report", str(report), "--now", NOW, "--dry-run"])

    assert gc(snapshot, tmp_path / "report") == 0, capsys.readouterr().err
    with open(tmp_path / "report" / "addresses.csv", newline="", encoding="utf-8") as handle:
        marked = {row["address"] for row in csv.DictReader(handle)}
    # lakeFS's answer, taken while doomed existed, keeps its head and so everything its tree
    # holds (d.csv, and A1 it shares with m1); now that doomed is gone lakeFS would expire them
    held = fake.addresses({head})
    assert address in held and held & scenario.committed_marked == {address, scenario.addresses["A1"]}
    assert marked == scenario.committed_marked - held == {scenario.addresses["F1"]}

    dropped = tmp_path / "dropped"
    dropped.mkdir()
    for item in snapshot.iterdir():
        if item.name != "branches.parquet":
            (dropped / item.name).symlink_to(item)
    table = pq.read_table(snapshot / "branches.parquet")
    pq.write_table(table.filter([b != "doomed" for b in table.column("branch_id").to_pylist()]), dropped / "branches.parquet")
    capsys.readouterr()
    assert gc(dropped, tmp_path / "report-dropped") == 1
    assert head[:12] in capsys.readouterr().err
