"""The busy history (``benchmarks/busy_history.py``) has the shape its benchmark claims.

The committed-GC benchmark's ``--history`` figures are only worth something if the repository
really is what its description says: this many commits and branches, dangling tips, merges of
both commit versions, one new range per commit, entries no newer than their commits, and
tables lakewarden's own check accepts. A tiny history is generated and read back; no Spark.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from benchmark_modules import load_benchmark

from lakewarden.snapshot import SNAPSHOT_TABLES, arrow_schemas
from lakewarden.snapshot.check import check_snapshot

SHAPE = {"commits": 300, "branches": 30, "open_branches": 6, "slots": 8, "entries": 6_000}


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory):
    return load_benchmark("busy_history").busy_history(tmp_path_factory.mktemp("busy") / "history", **SHAPE)


def _rows(history, table: str) -> list[dict]:
    return pq.read_table(history.snapshot_dir / f"{table}.parquet").to_pylist()


def test_tables_have_the_declared_schemas_and_pass_the_check(history) -> None:
    for table in SNAPSHOT_TABLES:
        assert pq.read_schema(history.snapshot_dir / f"{table}.parquet").remove_metadata() == arrow_schemas()[table]
    checked = check_snapshot(history.snapshot_dir, cache_dir=None)
    assert checked.row_counts["commits"] == SHAPE["commits"] == history.commit_count
    assert checked.row_counts["ranges"] == history.range_rows > 0
    repository = json.loads((history.snapshot_dir / "repository.json").read_text())
    assert repository["storage_namespace"] == history.storage_namespace == history.namespace_path.as_uri()


def test_branches_merges_and_dangling_tips(history) -> None:
    commits = _rows(history, "commits")
    branches = {row["branch_id"]: row["commit_id"] for row in _rows(history, "branches")}
    assert len(branches) == SHAPE["open_branches"] + 1 and "main" in branches
    assert branches == history.branches
    assert len(history.deleted_branches) == SHAPE["branches"] - SHAPE["open_branches"]
    assert commits[0]["meta_range_id"] == "" and commits[0]["parents"] == []  # "Repository created"
    parents = {parent for commit in commits for parent in commit["parents"]}
    dangling = [c for c in commits if c["commit_id"] not in parents and c["commit_id"] not in branches.values()]
    assert dangling  # the tips of branches deleted unmerged
    merges = [c for c in commits if len(c["parents"]) == 2]
    assert len(merges) == (SHAPE["branches"] - SHAPE["open_branches"]) // 2
    by_version = defaultdict(list)
    for merge in merges:
        by_version[merge["version"]].append(merge)
    assert len(by_version[0]) == len(merges) // 2 and by_version[1]
    heads = {c["commit_id"]: c for c in commits}
    for merge in merges:  # main's parent: first, or last for version 0 (lakeFS's parent switch)
        main_parent = merge["parents"][-1] if merge["version"] == 0 else merge["parents"][0]
        other = merge["parents"][0] if merge["version"] == 0 else merge["parents"][-1]
        assert heads[other]["message"].startswith("work on feature-")
        assert not heads[main_parent]["message"].startswith("work on feature-")


def test_each_commit_replaces_one_range_of_its_parent(history) -> None:
    commits = _rows(history, "commits")
    listed: dict[str, list[str]] = defaultdict(list)
    for row in _rows(history, "metaranges"):
        listed[row["meta_range_id"]].append(row["range_id"])
    by_id = {c["commit_id"]: c for c in commits}
    with_metarange = [c for c in commits if c["meta_range_id"]]
    assert len(with_metarange) == SHAPE["commits"] - 1
    assert all(len(listed[c["meta_range_id"]]) == SHAPE["slots"] for c in with_metarange)
    compared = 0
    for commit in with_metarange:
        if len(commit["parents"]) != 1 or not by_id[commit["parents"][0]]["meta_range_id"]:
            continue  # merges, and the initial import (its parent has no metarange)
        mine, theirs = listed[commit["meta_range_id"]], listed[by_id[commit["parents"][0]]["meta_range_id"]]
        assert sum(a != b for a, b in zip(mine, theirs)) == 1 and len(set(mine) - set(theirs)) == 1
        compared += 1
    assert compared == SHAPE["commits"] - 2 - len([c for c in commits if len(c["parents"]) == 2])


def test_entries_share_addresses_and_are_no_newer_than_their_commits(history) -> None:
    ranges = pq.read_table(history.snapshot_dir / "ranges.parquet")
    addresses = ranges.column("address")
    assert len(pc.unique(addresses)) < len(addresses) / 4  # most entries are inherited
    newest = pc.max(ranges.column("last_modified")).as_py()
    introduced: dict[str, object] = {}  # range -> creation date of the first commit listing it
    listed = defaultdict(list)
    for row in _rows(history, "metaranges"):
        listed[row["meta_range_id"]].append(row["range_id"])
    for commit in sorted(_rows(history, "commits"), key=lambda c: c["creation_date"]):
        for range_id in listed.get(commit["meta_range_id"], ()):
            introduced.setdefault(range_id, commit["creation_date"])
    modified = pq.read_table(history.snapshot_dir / "ranges.parquet", columns=["range_id", "last_modified"])
    latest = modified.group_by("range_id").aggregate([("last_modified", "max")]).to_pylist()
    assert len(latest) == len(introduced)
    assert all(row["last_modified_max"] <= introduced[row["range_id"]] for row in latest)
    assert newest <= history.end


def test_the_history_is_cached_by_its_parameters(history, tmp_path: Path) -> None:
    busy = load_benchmark("busy_history")
    directory = history.snapshot_dir.parent
    written = (history.snapshot_dir / "ranges.parquet").stat().st_mtime_ns
    assert busy.busy_history(directory, **SHAPE) == history
    assert (history.snapshot_dir / "ranges.parquet").stat().st_mtime_ns == written  # reused
    other = busy.busy_history(tmp_path / "other", **{**SHAPE, "seed": 2})
    assert other.commit_count == history.commit_count and other.branches != history.branches
    with pytest.raises(ValueError, match="cannot hold"):
        busy.HistoryShape(commits=20, branches=30, open_branches=6)
