"""Commit-graph walks: the design's worked examples, bad graphs, and properties over random DAGs."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakewarden.commit_graph import CommitGraph, StartPoint, branch_set_id
from lakewarden.errors import BadInput

DAY = 86_400.0


def at(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=timezone.utc).timestamp()


def graph_of(commits: dict[str, tuple[list[str], str]]) -> CommitGraph:
    ids = list(commits)
    return CommitGraph(ids, [commits[c][0] for c in ids], [at(commits[c][1]) for c in ids])


# Design example 1 (main only): GC on 2024-03-31 with 7 days -> threshold 2024-03-24.
MAIN_ONLY = {
    "c1": ([], "2024-03-01"),
    "c2": (["c1"], "2024-03-10"),
    "c3": (["c2"], "2024-03-20"),
    "c4": (["c3"], "2024-03-25"),
    "c5": (["c4"], "2024-03-30"),
}

# Design example 2: main m1-m2-m3 (7 days), feature from m2 f1-f2-f3 (3 days), and a deleted
# branch forked from m2 that left C-D behind (D dangling). GC on 2024-03-31.
MAIN_AND_FEATURE = {
    "m1": ([], "2024-03-01"),
    "m2": (["m1"], "2024-03-20"),
    "f1": (["m2"], "2024-03-22"),
    "m3": (["m2"], "2024-03-26"),
    "C": (["m2"], "2024-03-26"),
    "D": (["C"], "2024-03-27"),
    "f2": (["f1"], "2024-03-27"),
    "f3": (["f2"], "2024-03-29"),
}
NOW = at("2024-03-31")


def active_ids(graph: CommitGraph, starts: list[StartPoint]) -> set[str]:
    return {a.commit_id for a in graph.active_commits(starts)}


def test_main_only_keeps_the_commit_that_was_head_at_the_threshold() -> None:
    graph = graph_of(MAIN_ONLY)
    active = active_ids(graph, [StartPoint("c5", "main", NOW - 7 * DAY)])
    assert active == {"c5", "c4", "c3"}  # c3 was HEAD on 2024-03-24


def test_main_only_without_rules_keeps_everything() -> None:
    graph = graph_of(MAIN_ONLY)
    assert active_ids(graph, [StartPoint("c5", "main", None)]) == set(MAIN_ONLY)


def test_zero_days_keeps_head_and_its_parent_only_when_head_is_fresh() -> None:
    graph = graph_of(MAIN_ONLY)
    assert active_ids(graph, [StartPoint("c5", "main", NOW)]) == {"c5"}


@pytest.mark.parametrize(
    ("default_days", "expected_dangling_active"),
    [(7, {"C", "D"}), (3, set())],
)
def test_main_and_feature_with_dangling_commits(default_days: int, expected_dangling_active: set[str]) -> None:
    graph = graph_of(MAIN_AND_FEATURE)
    assert graph.dangling_commits(["m3", "f3"]) == ["D"]
    starts = [
        StartPoint("m3", "main", NOW - 7 * DAY),
        StartPoint("f3", "feature", NOW - 3 * DAY),
        StartPoint("D", None, NOW - default_days * DAY),
    ]
    active = active_ids(graph, starts)
    assert active == {"m3", "m2", "f3", "f2"} | expected_dangling_active
    assert "f1" not in active and "m1" not in active


def test_activation_reports_the_branch_that_kept_the_commit() -> None:
    graph = graph_of(MAIN_AND_FEATURE)
    by_commit = {
        a.commit_id: a
        for a in graph.active_commits(
            [StartPoint("m3", "main", NOW - 7 * DAY), StartPoint("D", None, NOW - 7 * DAY)]
        )
    }
    assert by_commit["m2"].branch_id == "main" and not by_commit["m2"].is_start
    assert by_commit["D"].branch_id is None and by_commit["D"].is_start
    assert by_commit["C"].start_commit_id == "D"


def test_missing_parent_is_bad_input() -> None:
    with pytest.raises(BadInput, match="parent 'ghost'.*not in the snapshot"):
        CommitGraph(["a", "b"], [[], ["ghost"]], [0, 1])


def test_duplicate_commit_is_bad_input() -> None:
    with pytest.raises(BadInput, match="duplicate commit 'a'"):
        CommitGraph(["a", "a"], [[], []], [0, 1])


def test_cycle_is_bad_input() -> None:
    graph = CommitGraph(["a", "b"], [["b"], ["a"]], [0, 1])
    with pytest.raises(BadInput, match="cycle"):
        graph.reachability({"main": "a"})


def test_reachability_follows_every_parent_and_interns_sets() -> None:
    graph = graph_of(MAIN_AND_FEATURE | {"merge": (["m3", "f3"], "2024-03-30")})
    reach = graph.reachability({"main": "merge", "feature": "f3"})
    assert reach.branches_reaching("f1") == ("feature", "main")  # main reaches f1 through the merge
    assert reach.branches_reaching("merge") == ("main",)
    assert reach.branches_reaching("D") == ()  # dangling: no branch reaches it
    assert len(set(reach.set_ids)) == 3
    assert branch_set_id(["main", "feature"]) == branch_set_id(["feature", "main"])


# -- properties over random histories ---------------------------------------------------------


@st.composite
def random_histories(draw):
    """A random DAG: commit i's parents are earlier commits; dates increase or repeat."""
    count = draw(st.integers(min_value=1, max_value=40))
    parents: list[list[str]] = [[]]
    dates = [0.0]
    for index in range(1, count):
        first = draw(st.integers(min_value=0, max_value=index - 1))
        extra = draw(st.lists(st.integers(min_value=0, max_value=index - 1), max_size=2))
        parents.append([f"c{first}"] + [f"c{e}" for e in extra if e != first])
        dates.append(dates[-1] + draw(st.sampled_from([0.0, 0.5, 1.0, 3.0])) * DAY)
    ids = [f"c{i}" for i in range(count)]
    heads = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=4, unique=True))
    days = draw(st.lists(st.one_of(st.none(), st.integers(0, 10)), min_size=len(heads), max_size=len(heads)))
    default = draw(st.one_of(st.none(), st.integers(0, 10)))
    return ids, parents, dates, dict(zip((f"b{i}" for i in range(len(heads))), heads)), days, default


def naive_active(ids, parents, dates, starts: list[StartPoint]) -> set[str]:
    """Independent oracle: walk every start point fully, no memoisation."""
    first = {c: (p[0] if p else None) for c, p in zip(ids, parents)}
    created = dict(zip(ids, dates))
    active: set[str] = set()
    for start in starts:
        threshold = float("-inf") if start.threshold is None else start.threshold
        if start.branch_id is None and not created[start.commit_id] > threshold:
            continue
        current = start.commit_id
        while True:
            active.add(current)
            if first[current] is None or not created[current] > threshold:
                break
            current = first[current]
    return active


def start_points(graph: CommitGraph, heads: dict, days: list, default, now: float) -> list[StartPoint]:
    """Every branch HEAD with its retention, and every dangling commit with the default."""
    starts = [
        StartPoint(head, branch, None if d is None else now - d * DAY)
        for (branch, head), d in zip(heads.items(), days)
    ]
    return starts + [
        StartPoint(c, None, None if default is None else now - default * DAY)
        for c in graph.dangling_commits(heads.values())
    ]


@settings(max_examples=300, deadline=None)
@given(random_histories())
def test_memoised_walk_equals_naive_walk_and_keeps_heads(history) -> None:
    ids, parents, dates, heads, days, default = history
    graph = CommitGraph(ids, parents, dates)
    now = dates[-1] + DAY
    starts = start_points(graph, heads, days, default, now)
    active = active_ids(graph, starts)
    assert active == naive_active(ids, parents, dates, starts)
    assert set(heads.values()) <= active  # a branch HEAD is always active


@settings(max_examples=200, deadline=None)
@given(random_histories())
def test_reachability_matches_ancestor_search(history) -> None:
    ids, parents, dates, heads, _, _ = history
    graph = CommitGraph(ids, parents, dates)
    reach = graph.reachability(heads)
    parent_map = dict(zip(ids, parents))
    for branch, head in heads.items():
        ancestors, stack = set(), [head]
        while stack:
            commit = stack.pop()
            if commit not in ancestors:
                ancestors.add(commit)
                stack.extend(parent_map[commit])
        for commit in ids:
            assert (branch in reach.branches_reaching(commit)) == (commit in ancestors)


# -- lakeFS's parent order and threshold comparison ------------------------------------------


def test_version_zero_merge_is_walked_by_its_last_parent() -> None:
    """lakeFS's CommitVersionParentSwitch: a version-0 merge lists its main parent last."""
    ids = ["m1", "m2", "x1", "merge"]
    parents = [[], ["m1"], ["m1"], ["x1", "m2"]]  # version 0: main line is m2, the merged branch x1
    dates = [at("2024-03-01"), at("2024-03-25"), at("2024-03-26"), at("2024-03-30")]
    old = CommitGraph(ids, parents, dates, [1, 1, 1, 0])
    assert old.first_parent[old.index["merge"]] == old.index["m2"]
    assert old.dangling_commits(["merge"]) == ["x1"]
    assert active_ids(old, [StartPoint("merge", "main", NOW - 7 * DAY)]) == {"merge", "m2", "m1"}
    new = CommitGraph(ids, parents, dates, [1, 1, 1, 1])
    assert new.first_parent[new.index["merge"]] == new.index["x1"]
    assert active_ids(new, [StartPoint("merge", "main", NOW - 7 * DAY)]) == {"merge", "x1", "m1"}


def test_a_commit_exactly_at_the_threshold_is_not_after_it() -> None:
    """lakeFS keeps a parent only when the child was created strictly After the threshold."""
    graph = graph_of({"a": ([], "2024-03-01"), "b": (["a"], "2024-03-24"), "c": (["b"], "2024-03-30")})
    threshold = at("2024-03-24")
    assert active_ids(graph, [StartPoint("c", "main", threshold)]) == {"c", "b"}
    assert active_ids(graph, [StartPoint("c", "main", threshold - 1)]) == {"c", "b", "a"}
    # a dangling commit created exactly at the default threshold has expired
    assert active_ids(graph, [StartPoint("b", None, threshold)]) == set()
    assert active_ids(graph, [StartPoint("b", None, threshold - 1)]) == {"b", "a"}


@st.composite
def versioned_histories(draw):
    """Random histories whose commits are of version 0 or 1 (pre/post parent switch)."""
    history = draw(random_histories())
    versions = draw(st.lists(st.sampled_from([0, 1]), min_size=len(history[0]), max_size=len(history[0])))
    return history, versions


@settings(max_examples=200, deadline=None)
@given(versioned_histories())
def test_walk_follows_the_version_aware_main_parent(drawn) -> None:
    (ids, parents, dates, heads, days, default), versions = drawn
    graph = CommitGraph(ids, parents, dates, versions)
    main = {c: (None if not p else (p[-1] if v == 0 else p[0])) for c, p, v in zip(ids, parents, versions)}
    now = dates[-1] + DAY
    starts = start_points(graph, heads, days, default, now)
    assert set(graph.dangling_commits(heads.values())) == {
        c for c in ids if c not in set(main.values()) and c not in heads.values()
    }
    reordered = [[main[c]] + [p for p in ps if p != main[c]] if main[c] else [] for c, ps in zip(ids, parents)]
    assert active_ids(graph, starts) == naive_active(ids, reordered, dates, starts)
