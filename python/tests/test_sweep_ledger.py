"""A dry run followed by ``lakewarden sweep --report`` is a deleting run: the next lifecycle run
after a new commit is incremental from it, and the next uncommitted GC is optimized."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lakewarden.cli import main
from report_files import marked, summary
from test_gc_uncommitted_support import Repo, rfc3339

pytestmark = pytest.mark.spark

POLICY = {"logs": {"prefix": "logs/", "days": 10}}


def lifecycle(repo: Repo, state: Path, report: Path, *extra: str) -> int:
    policy = report.parent / f"{report.name}-policy.json"
    policy.write_text(json.dumps(POLICY))
    return main(["lifecycle", "--snapshot", str(repo.write_snapshot()), "--policy", str(policy), "--state", str(state),
                 "--report", str(report), "--now", rfc3339(repo.clock), *extra])


def uncommitted(repo: Repo, state: Path, report: Path, *extra: str) -> int:
    return main(["gc", "uncommitted", "--snapshot", str(repo.write_snapshot()), "--state", str(state), "--report", str(report),
                 "--now", rfc3339(repo.clock), "--min-age", "1h", *extra])


def test_dry_run_then_sweep_makes_the_next_lifecycle_run_incremental(spark: Any, test_state_dir: Path, tmp_path: Path) -> None:
    repo = Repo(tmp_path / "lc", seed=3)
    for batch in range(4):
        for i in range(25):
            repo.stage("main", key=f"logs/{batch}/{i:03d}")
        repo.commit("main")
        repo.advance(timedelta(days=1))
    repo.advance(timedelta(days=30))
    dry = tmp_path / "dry"
    assert lifecycle(repo, test_state_dir, dry, "--dry-run") == 0
    expired = marked(dry)
    assert len(expired) == 100 and summary(dry)["last_deleting_run_id"] is None

    assert main(["sweep", "--report", str(dry), "--state", str(test_state_dir)]) == 0
    assert summary(dry)["status"] == "swept"
    assert not any((repo.namespace_path / uri.split("/storage/repo/", 1)[1]).exists() for uri in expired)

    # one more commit (+1%: 1 of 100 objects), a day later: the next run starts from the dry run
    repo.stage("main", key="logs/new/000")
    repo.commit("main")
    repo.advance(timedelta(days=1))
    nxt = tmp_path / "next"
    assert lifecycle(repo, test_state_dir, nxt, "--dry-run") == 0
    after = summary(nxt)
    assert after["last_deleting_run_id"] == summary(dry)["run_id"]
    assert after["potential_commits"] < after["commits"], "incremental: old commits are not read again"
    assert marked(nxt) == set(), "the new object is a day old; nothing swept is marked again"

    statuses = {
        row["status"]
        for row in spark.table("lakewarden_snapshot.lifecycle_run_events").where(f"run_id = '{summary(dry)['run_id']}'").collect()
    }
    assert statuses == {"running", "marked", "swept"}
    # the swept event is imported once: a later run finds nothing new to import
    from lakewarden.snapshot import source_columns
    from lakewarden.sweep.ledger import import_lifecycle_sweeps

    columns = [name for name, _ in source_columns("lakewarden")["lifecycle_run_events"]]
    assert import_lifecycle_sweeps(spark, test_state_dir, "lifecycle_run_events", columns) == []


def test_dry_run_then_sweep_leaves_an_optimized_base_for_uncommitted_gc(spark: Any, test_state_dir: Path, tmp_path: Path) -> None:
    repo = Repo(tmp_path / "uc", seed=9)
    lost = repo.upload()
    repo.stage("main")
    repo.commit("main")
    repo.advance(timedelta(days=2))
    first = tmp_path / "r1"
    assert uncommitted(repo, test_state_dir, first, "--dry-run") == 0
    assert summary(first)["run_mode"] == "clean" and marked(first) == {(repo.namespace_path / lost).as_uri()}
    assert main(["sweep", "--report", str(first), "--state", str(test_state_dir)]) == 0
    assert not (repo.namespace_path / lost).exists()

    repo.advance(timedelta(hours=3))
    repo.stage("main")
    repo.commit("main")  # a new commit
    new_lost = repo.upload()
    repo.advance(timedelta(hours=2))
    second = tmp_path / "r2"
    assert uncommitted(repo, test_state_dir, second, "--dry-run") == 0
    result = summary(second)
    assert result["run_mode"] == "optimized" and result["previous_run_id"] == summary(first)["run_id"]
    assert result["newly_read_ranges"] == 1 < result["listed_ranges"]
    assert marked(second) == {(repo.namespace_path / new_lost).as_uri()}
