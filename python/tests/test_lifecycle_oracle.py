"""The lifecycle oracle itself, on hand-built snapshots whose answers are worked out by hand."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from lifecycle_oracle import (
    commit_contexts,
    lifecycle_marked,
    normalise,
    physical_of,
    policy_rows,
    range_contexts,
    surviving_physicals,
)
from oracles import Snapshot

NOW = datetime(2026, 2, 1, tzinfo=timezone.utc)
NS = "s3://bucket/repo"


def when(days_ago: float) -> str:
    return (NOW - timedelta(days=days_ago)).isoformat().replace("+00:00", "Z")


def entry(key: str, address: str, days_ago: float, address_type: str = "RELATIVE") -> dict:
    return {"key": key, "address": address, "address_type": address_type, "last_modified": when(days_ago), "size": 1}


def snapshot(
    commits: dict[str, tuple[list[str], list[str]]],
    ranges: dict[str, list[dict]],
    branches: dict[str, str],
    staged: list[dict] | None = None,
    namespace: str = NS,
) -> Snapshot:
    """``commits``: id -> (parents, range ids of its metarange)."""
    return Snapshot(
        namespace=namespace,
        commits={
            commit: {
                "commit_id": commit,
                "parents": parents,
                "creation_date": when(30),
                "meta_range_id": f"mr-{commit}",
            }
            for commit, (parents, _) in commits.items()
        },
        branches=branches,
        tags={},
        metaranges={f"mr-{commit}": set(range_ids) for commit, (_, range_ids) in commits.items()},
        ranges={range_id: [dict(row, range_id=range_id) for row in rows] for range_id, rows in ranges.items()},
        staged=staged or [],
    )


def addr(name: str) -> str:
    return f"{NS}/{name}"


def test_design_dedup_example() -> None:
    snap = snapshot(
        {"c1": ([], ["r1"])},
        {
            "r1": [
                entry("foo/bar/a", "1", 10),
                entry("foo/bar/b", "4", 10),
                entry("foo/other/c", "2", 10),
                entry("foo/tar/a", "1", 10),
                entry("foo/tar/b", "2", 10),
            ]
        },
        {"main": "c1"},
    )
    policy = {"bar": {"prefix": "foo/bar", "days": 1}, "tar": {"prefix": "foo/tar", "days": 1}}
    assert lifecycle_marked(snap, policy, NOW, {}) == {
        addr("1"): {"paths": ["foo/bar/a", "foo/tar/a"], "matched_rules": ["bar", "tar"]},
        addr("4"): {"paths": ["foo/bar/b"], "matched_rules": ["bar"]},
    }
    assert surviving_physicals(snap, policy, NOW) == {addr("2")}


def test_rows_and_contexts() -> None:
    policy = {
        "r1": {"prefix": "foo/bar", "days": 10, "enabled": True, "branch_days": {"b1": 5, "b2": 8}},
        "r2": {"prefix": "foo/zoo", "enabled": True, "branch_days": {"b1": 5}},
        "off": {"prefix": "x", "days": 1, "enabled": False, "branch_days": {"b3": 1}},
    }
    assert [(r.rule_id, r.prefix, r.branch, NOW - r.date_to_be_deleted) for r in policy_rows(policy, NOW)] == [
        ("r1", "foo/bar", None, timedelta(days=10)),
        ("r1", "foo/bar", "b1", timedelta(days=5)),
        ("r1", "foo/bar", "b2", timedelta(days=8)),
        ("r2", "foo/zoo", "b1", timedelta(days=5)),
    ]
    # c0 <- c1 <- c2 (b1), c1 <- m (merge of c1 and side; main), side (b3, disabled rule only), d dangling
    snap = snapshot(
        {
            "c0": ([], ["ra"]),
            "c1": (["c0"], ["ra", "rb"]),
            "c2": (["c1"], ["rb"]),
            "side": ([], ["rc"]),
            "m": (["c1", "side"], ["rd"]),
            "d": (["c0"], ["re"]),
        },
        {"ra": [], "rb": [], "rc": [], "rd": [], "re": [], "orphan": []},
        {"b1": "c2", "main": "m", "b3": "side"},
    )
    assert commit_contexts(snap, policy) == {
        "c0": {"b1", "*"},
        "c1": {"b1", "*"},
        "c2": {"b1"},
        "side": {"*"},  # reached through the merge's second parent and by b3 (not named: rule disabled)
        "m": {"*"},
        "d": {"*"},  # dangling
    }
    contexts = range_contexts(snap, policy)
    assert contexts == {"ra": {"b1", "*"}, "rb": {"b1", "*"}, "rc": {"*"}, "rd": {"*"}, "re": {"*"}}


def test_branch_override_keeps_object_young_on_one_branch() -> None:
    policy = {"r": {"prefix": "data/", "days": 1, "branch_days": {"dev": 100}}}
    ranges = {"r1": [entry("data/x", "x", 10)], "r2": [entry("data/y", "y", 10)]}
    # main and dev both reach c1 (dev through its child c2): main expires data/x, dev keeps it.
    snap = snapshot({"c1": ([], ["r1"]), "c2": (["c1"], ["r1", "r2"])}, ranges, {"main": "c1", "dev": "c2"})
    assert lifecycle_marked(snap, policy, NOW, {}) == {}
    assert surviving_physicals(snap, policy, NOW) == {addr("x"), addr("y")}
    # Without dev reaching c1 the object goes, by the all-branches row.
    snap = snapshot({"c1": ([], ["r1"]), "c2": ([], ["r2"])}, ranges, {"main": "c1", "dev": "c2"})
    assert lifecycle_marked(snap, policy, NOW, {}) == {addr("x"): {"paths": ["data/x"], "matched_rules": ["r"]}}
    # The other way round: a short override on dev does not expire what main keeps.
    policy = {"r": {"prefix": "data/", "days": 100, "branch_days": {"dev": 1}}}
    snap = snapshot({"c1": ([], ["r1"]), "c2": (["c1"], ["r2"])}, ranges, {"main": "c1", "dev": "c2"})
    assert lifecycle_marked(snap, policy, NOW, {}) == {addr("y"): {"paths": ["data/y"], "matched_rules": ["r"]}}


def test_rule_without_override_falls_back_to_its_all_branches_row_on_a_named_branch() -> None:
    policy = {"long": {"prefix": "a/", "days": 1}, "named": {"prefix": "zzz/", "branch_days": {"dev": 100}}}
    snap = snapshot({"c1": ([], ["r1"])}, {"r1": [entry("a/x", "x", 10)]}, {"dev": "c1"})
    assert lifecycle_marked(snap, policy, NOW, {}) == {addr("x"): {"paths": ["a/x"], "matched_rules": ["long"]}}


def test_dangling_commit_uses_only_all_branches_rows() -> None:
    ranges = {"r1": [entry("data/x", "x", 10)], "r2": [entry("data/y", "y", 10)]}
    # d is no branch's HEAD and no branch reaches it (the tip of a deleted branch).
    snap = snapshot({"c1": ([], ["r1"]), "d": (["c1"], ["r2"])}, ranges, {"main": "c1"})
    with_days = {"r": {"prefix": "data/", "days": 5, "branch_days": {"main": 100, "gone": 100}}}
    assert lifecycle_marked(snap, with_days, NOW, {}) == {addr("y"): {"paths": ["data/y"], "matched_rules": ["r"]}}
    only_branches = {"r": {"prefix": "data/", "branch_days": {"main": 1, "gone": 1}}}
    assert lifecycle_marked(snap, only_branches, NOW, {}) == {
        addr("x"): {"paths": ["data/x"], "matched_rules": ["r"]}
    }
    assert addr("y") in surviving_physicals(snap, only_branches, NOW)


def test_last_deleted_makes_already_matched_pairs_non_candidates() -> None:
    policy = {"r": {"prefix": "data/", "days": 1}}
    snap = snapshot(
        {"c1": ([], ["r1"])},
        {
            "r1": [
                entry("data/old", "old", 10),  # matched last time
                entry("data/new", "new", 3),  # expired since
                entry("data/old-twin", "new", 10),  # matched last time, same address as a candidate
            ]
        },
        {"main": "c1"},
    )
    assert set(lifecycle_marked(snap, policy, NOW, {})) == {addr("old"), addr("new")}
    last = {("data/", None): NOW - timedelta(days=5)}
    assert lifecycle_marked(snap, policy, NOW, last) == {addr("new"): {"paths": ["data/new"], "matched_rules": ["r"]}}
    # The key is the applicable row's branch: a date recorded for another branch does not count.
    assert set(lifecycle_marked(snap, policy, NOW, {("data/", "main"): NOW - timedelta(days=5)})) == {
        addr("old"),
        addr("new"),
    }
    # Every occurrence of the pair must have been matched: a second, newer occurrence of
    # data/old (another range, same address) keeps the pair a candidate.
    snap.ranges["r2"] = [dict(entry("data/old", "old", 3), range_id="r2")]
    snap.metaranges["mr-c1"].add("r2")
    assert addr("old") in lifecycle_marked(snap, policy, NOW, last)


def test_staged_entry_protects() -> None:
    policy = {"r": {"prefix": "data/", "days": 1}}
    ranges = {"r1": [entry("data/x", "x", 10), entry("data/y", "y", 10)]}
    staged = [{"branch_id": "main", "key": "elsewhere", "address": "s3a://bucket//repo/x", "address_type": "FULL"}]
    snap = snapshot({"c1": ([], ["r1"])}, ranges, {"main": "c1"}, staged=staged)
    assert set(lifecycle_marked(snap, policy, NOW, {})) == {addr("y")}
    assert surviving_physicals(snap, policy, NOW) == {addr("x")}


def test_surviving_paths_orphans_and_namespace_protect() -> None:
    policy = {"r": {"prefix": "data/", "days": 1}}
    snap = snapshot(
        {"c1": ([], ["r1"]), "c2": (["c1"], ["r2"])},
        {
            "r1": [
                entry("data/a", "a", 10),
                entry("data/b", "b", 10),
                entry("data/c", "c", 10),
                entry("data/out", "s3://other-bucket/out", 10, "FULL"),
                entry("data/meta", "_lakefs/meta", 10),
                entry("data/rel", "//rel", 10),
                entry("data/full", "s3n://bucket/repo//full", 10, "FULL"),
            ],
            "r2": [entry("keep/a", "a", 10)],  # a surviving path shares address a
            "orphan": [entry("data/b", "b", 10)],  # written by a commit in progress
        },
        {"main": "c2"},
    )
    assert lifecycle_marked(snap, policy, NOW, {}) == {
        addr("c"): {"paths": ["data/c"], "matched_rules": ["r"]},
        addr("full"): {"paths": ["data/full"], "matched_rules": ["r"]},
        addr("rel"): {"paths": ["data/rel"], "matched_rules": ["r"]},
    }
    assert surviving_physicals(snap, policy, NOW) == {addr("a"), addr("b")}


def test_disabled_rules_and_young_objects_match_nothing() -> None:
    snap = snapshot({"c1": ([], ["r1"])}, {"r1": [entry("data/x", "x", 10), entry("data/y", "y", 0.5)]}, {"main": "c1"})
    assert lifecycle_marked(snap, {"r": {"prefix": "data/", "days": 1, "enabled": False}}, NOW, {}) == {}
    assert lifecycle_marked(snap, {"r": {"prefix": "data/", "days": 1}}, NOW, {}) == {
        addr("x"): {"paths": ["data/x"], "matched_rules": ["r"]}
    }
    # Exactly at the threshold is not expired (strictly before).
    exact = snapshot({"c1": ([], ["r1"])}, {"r1": [entry("data/x", "x", 1)]}, {"main": "c1"})
    assert lifecycle_marked(exact, {"r": {"prefix": "data/", "days": 1}}, NOW, {}) == {}


def test_normalisation() -> None:
    snap = snapshot({}, {}, {}, namespace="s3a://bucket//repo")
    assert normalise("s3a://b//x///y") == "s3://b/x/y"
    assert normalise("S3N://b/x") == "s3://b/x"
    assert normalise("file:///tmp//ns") == "file:///tmp/ns"
    assert physical_of(snap, "//x", "RELATIVE") == "s3://bucket/repo/x"
    assert physical_of(snap, "s3a://bucket/repo/x", "FULL") == "s3://bucket/repo/x"
