"""lakeFS's own retention test cases, as facts (not code): the 11 cases of TestActiveCommits in
lakeFS's pkg/graveler/retention/active_commits_test.go, and the entries of the Spark client's
CommittedAddressListerSpec.

TestActiveCommits: every case has default retention 5 days; each head commit is the HEAD of a
branch of the same name with the given retention; commits are "days passed" before the GC's
clock; every commit is of the current version (parents[0] is the main parent); the dangling
starting points are the commits that are nobody's main parent and no branch's HEAD.
"""

from __future__ import annotations

#: case -> (commits: id -> (days passed, parents), heads: id -> retention days, lakeFS's active ids)
ACTIVE_COMMIT_CASES: dict[str, tuple[dict[str, tuple[int, list[str]]], dict[str, int], set[str]]] = {
    "two_branches": (
        {"a": (15, []), "b": (10, ["a"]), "c": (10, ["a"]), "d": (5, ["c"]), "e": (5, ["b"]), "f": (1, ["e"])},
        {"f": 7, "d": 3},
        {"b", "d", "e", "f"},
    ),
    "old_heads": (
        {"a": (15, []), "b": (20, []), "c": (20, ["a"]), "d": (20, ["a"])},
        {"b": 7, "c": 7, "d": 7},
        {"b", "c", "d"},
    ),
    "all_commits_active": (
        {"a": (5, []), "b": (4, ["a"]), "c": (3, ["b"]), "d": (2, ["b"]), "e": (1, ["b"])},
        {"d": 15, "e": 7, "c": 2},
        {"a", "b", "c", "d", "e"},
    ),
    "merge": (
        {"a": (7, []), "b": (6, ["a"]), "c": (7, []), "d": (6, ["c", "a"])},
        {"b": 3, "d": 10},
        {"b", "c", "d"},
    ),
    "two_branches_with_previously_expired": (
        {"a": (15, []), "b": (10, ["a"]), "c": (10, ["a"]), "d": (5, ["c"]), "e": (7, ["b"]), "f": (1, ["e"])},
        {"f": 7, "d": 3},
        {"d", "e", "f"},
    ),
    "merge_in_history": (
        {
            "e": (21, []), "d": (20, ["e"]), "f": (19, ["e"]), "c": (18, ["e"]), "b": (17, ["d"]),
            "a": (4, ["c"]), "g": (4, ["b", "e"]), "h": (3, ["a", "f"]),
        },
        {"h": 14, "g": 7, "f": 7},
        {"h", "a", "b", "c", "f", "g"},
    ),
    "dangling_commits_active": (
        {
            "a": (15, []), "b": (10, ["a"]), "c": (10, ["a"]), "d": (5, ["c"]), "e": (5, ["b"]),
            "f": (1, ["e"]), "g": (8, ["c"]), "h": (7, ["g"]), "i": (4, ["h"]),
        },
        {"f": 7, "d": 3},
        {"b", "d", "e", "f", "h", "i"},
    ),
    "dangling_commits_expired": (
        {
            "a": (15, []), "b": (10, ["a"]), "c": (10, ["a"]), "d": (5, ["c"]), "e": (5, ["b"]),
            "f": (1, ["e"]), "g": (8, ["c"]), "h": (7, ["g"]), "i": (6, ["h"]),
        },
        {"f": 7, "d": 3},
        {"b", "d", "e", "f"},
    ),
    "dangling_from_before_expired": (
        {
            "root": (20, []), "pre_expired": (20, ["root"]), "e1": (15, ["pre_expired"]), "b": (10, ["e1"]),
            "c": (10, ["e1"]), "d": (5, ["c"]), "e": (8, ["b"]), "f": (1, ["e"]), "g": (10, ["root"]),
            "h": (6, ["g"]),
        },
        {"f": 7, "d": 3},
        {"d", "e", "f"},
    ),
    "retained_by_non_leaf_head": (
        {"root": (20, []), "x": (14, ["root"]), "head2": (10, ["x"]), "head1": (9, ["head2"])},
        {"head1": 9, "head2": 12},
        {"head1", "head2", "x"},
    ),
    "reachable_previously_expired": (
        {
            "ep1": (8, []), "ep2": (8, []), "e5": (6, ["ep2"]), "e4": (7, ["ep1", "ep2"]), "e3": (6, ["e5"]),
            "e2": (6, ["ep2"]), "e1": (7, ["e4"]), "h3": (1, ["e3"]), "h2": (1, ["e2"]), "h1": (1, ["e1"]),
        },
        {"h1": 5, "h2": 5, "h3": 5},
        {"h1", "h2", "h3", "e1", "e2", "e3"},
    ),
}

DEFAULT_RETENTION_DAYS = 5

#: A deliberate difference. lakeFS visits start points in commit-id order and stops a walk at a
#: commit an earlier walk processed with an older-or-equal threshold, even when that earlier walk
#: had already passed its own retention there. Here "a" (30 days) is visited first: its walk
#: passes x (its child y is 50 days old, so x is not active for "a") and records x; the walk of
#: "b" (7 days) then stops at x, so lakeFS leaves x expired although b, 2 days old, was made on
#: x. Renamed so that "b" came first, lakeFS would keep x. lakewarden keeps the union of every
#: walk and keeps x whatever the names.
ORDER_DEPENDENT_CASE = (
    {"r": (100, []), "x": (90, ["r"]), "y": (50, ["x"]), "a": (1, ["y"]), "b": (2, ["x"])},
    {"a": 30, "b": 7},
    {"a", "y", "b"},  # lakeFS's answer
    {"a", "y", "b", "x"},  # lakewarden's: one more, never one less
)

#: CommittedAddressListerSpec ("should filter managed addresses"): entries of several ranges in
#: the namespace s3://test-bucket/lfs/ -> (key, address, address_type).
ADDRESS_LISTER_NAMESPACE = "s3://test-bucket/lfs/"
ADDRESS_LISTER_ENTRIES = [
    ("committed_undeleted.json", "data/gqv3epl4fd2o8m3men70/ce8co454fd2o8m3menag", "RELATIVE"),
    ("link_undeleted.json", "s3://test-bucket/lfs/data/gqv3epl4fd2o8m3men70/ce8cob54fd2o8m3menbg", "FULL"),
    ("committed_undeleted.json", "d20cfd37cd0a4dcc80e3ce95446d11eb", "RELATIVE"),
    ("not_deleted/0.json", "s3://some-test/0.json", "FULL"),
    ("committed_deleted.json", "5078f67ece2d495fbe056d5d6bdc93a2", "BY_PREFIX_DEPRECATED"),
    ("committed_undeleted.json", "cf4abf678fe54bfebd342a4d93ff05a0", "BY_PREFIX_DEPRECATED"),
    ("committed_deleted.json", "5b72f534f8014e55af18bd59b9235a27", "RELATIVE"),
    ("committed_undeleted.json", "482aaffe969747b7a83c2d08816c5c22", "RELATIVE"),
    (
        "link_undeleted.json",
        "s3://test-bucket/lfs/data/gc-migrate-lakefs-0-40-1:b40b9540-91f0-4add-96ba-205f17e03c57/77I_VsbUg1vU05hWRnTlw",
        "FULL",
    ),
    ("committed_deleted.json", "data/gqv3epl4fd2o8m3men70/ce8co6d4fd2o8m3menb0", "RELATIVE"),
    ("committed_undeleted.json", "data/gqv3epl4fd2o8m3men70/ce8co454fd2o8m3menag", "RELATIVE"),
    ("link_undeleted.json", "s3://test-bucket/lfs/data/gqv3epl4fd2o8m3men70/ce8cob54fd2o8m3menbg", "FULL"),
]
#: The addresses the spec expects under management (relative to the namespace): every entry but
#: the FULL address outside the namespace.
ADDRESS_LISTER_EXPECTED = {
    "data/gc-migrate-lakefs-0-40-1:b40b9540-91f0-4add-96ba-205f17e03c57/77I_VsbUg1vU05hWRnTlw",
    "data/gqv3epl4fd2o8m3men70/ce8co454fd2o8m3menag",
    "5078f67ece2d495fbe056d5d6bdc93a2",
    "cf4abf678fe54bfebd342a4d93ff05a0",
    "5b72f534f8014e55af18bd59b9235a27",
    "data/gqv3epl4fd2o8m3men70/ce8cob54fd2o8m3menbg",
    "d20cfd37cd0a4dcc80e3ce95446d11eb",
    "482aaffe969747b7a83c2d08816c5c22",
    "data/gqv3epl4fd2o8m3men70/ce8co6d4fd2o8m3menb0",
}
