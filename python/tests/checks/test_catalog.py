"""The snapshot catalog: ref resolution and action files at a commit, JSONL and Parquet."""

from __future__ import annotations

import pytest

from checks_support import REPO
from lakewarden.checks.catalog import SnapshotCatalog
from lakewarden.checks.errors import NotFound
from lakewarden.errors import BadInput

ACTION = "checks:\n  - {id: a, type: webhook, properties: {url: 'http://127.0.0.1:9'}}\n"


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_resolves_branches_tags_commits_and_reads_actions(snapshot, fmt: str) -> None:
    first = snapshot.commit({"_lakefs_actions/a.yaml": ACTION, "data/x.csv": "1"}, message="first", branch="main")
    second = snapshot.commit(
        {
            "_lakefs_actions/a.yaml": ACTION,
            "_lakefs_actions/b.yml": ACTION.replace("id: a", "id: b"),
            "_lakefs_actions/nested/ignored.yaml": "not: loaded",
            "_lakefs_actions/README.md": "not an action",
        },
        message="second",
        parents=[first],
        branch="dev",
        full_address=True,
    )
    snapshot.tags["v1"] = first
    catalog = SnapshotCatalog(snapshot.write(fmt))

    main = catalog.resolve(REPO, "main")
    assert (main.kind, main.commit_id, main.message, main.branch_id) == ("branch", first, "first", "main")
    assert catalog.resolve(REPO, "v1").kind == "tag"
    by_id = catalog.resolve(REPO, second)
    assert (by_id.kind, by_id.commit_id, by_id.branch_id) == ("commit", second, None)
    assert [p for p, _ in catalog.action_files(REPO, first)] == ["_lakefs_actions/a.yaml"]
    files = dict(catalog.action_files(REPO, second))
    assert sorted(files) == ["_lakefs_actions/a.yaml", "_lakefs_actions/b.yml"]  # FULL addresses read too
    assert files["_lakefs_actions/a.yaml"].decode() == ACTION

    with pytest.raises(NotFound, match="ref 'nope' not found"):
        catalog.resolve(REPO, "nope")
    with pytest.raises(NotFound, match="repository 'other' not found"):
        catalog.resolve("other", "main")


def test_snapshot_changes_are_picked_up(snapshot) -> None:
    first = snapshot.commit({}, branch="main")
    catalog = SnapshotCatalog(snapshot.write())
    assert catalog.resolve(REPO, "main").commit_id == first
    second = snapshot.commit({"_lakefs_actions/a.yaml": ACTION}, branch="main", parents=[first])
    snapshot.write()
    assert catalog.resolve(REPO, "main").commit_id == second


def test_not_a_snapshot(tmp_path) -> None:
    with pytest.raises(BadInput, match="no repository.json"):
        SnapshotCatalog(tmp_path)
