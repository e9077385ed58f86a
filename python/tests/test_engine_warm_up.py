"""The engine's warm-up (lakewarden.engine.warm_up): every kind of run of every job succeeds on
its generated sample, in a temporary directory under the scratch directory that is gone after,
and a job run after it marks what it must (the lifecycle oracle's answer)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from lakewarden.api import LifecycleOptions, RunOptions, lifecycle
from lakewarden.engine.warm_up import POLICY, warm_up
from lakewarden.sample import SampleConfig, generate
from lifecycle_oracle import lifecycle_marked
from oracles import Snapshot
from report_files import marked

# second_process: on the session of scripts/test.sh's second pytest process (conftest.py), as
# an engine's warm-up runs on the engine's one session. It ran in a Python process of its own
# (a JVM of its own, cold: 92 s of that process's 17.5 min in CI), to stay off the embedded
# session's process, the longer of the two.
pytestmark = pytest.mark.second_process


def test_warm_up_runs_every_kind_of_run_and_changes_no_later_run(spark, tmp_path: Path) -> None:
    sample = generate(tmp_path / "sample", SampleConfig(seed=5, entries=600))
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY))

    now = sample.end + timedelta(days=1)

    def marked_by_a_run(state: Path) -> set[str]:
        run = RunOptions(snapshot=sample.snapshot_dir, now=now, dry_run=True, state=state, report=state / "report")
        return marked(lifecycle(run, LifecycleOptions(policy=policy)).report)

    # what a run marks without a warm-up before it: the oracle's answer (test_lifecycle.py holds
    # every run to it), not a run of its own
    expected = set(lifecycle_marked(Snapshot.read(sample.snapshot_dir), POLICY, now))
    lines: list[str] = []
    # one incremental/no-op pair, on a small sample: the same runs as the engine's, quicker
    done = warm_up(tmp_path / "scratch", rounds=1, entries=600, say=lines.append)
    after = marked_by_a_run(tmp_path / "after")
    # gc committed; lifecycle full, incremental, no-op; gc uncommitted clean, optimized, no-op
    assert (done.runs, done.failed) == (7, 0), lines
    assert [line.split(" in ")[0] for line in lines] == [
        "engine warm-up: gc committed (dry run)",
        "engine warm-up: lifecycle, a full run",
        "engine warm-up: lifecycle, incremental run 1",
        "engine warm-up: lifecycle, no-op run 1",
        "engine warm-up: gc uncommitted, a clean run",
        "engine warm-up: gc uncommitted, optimized run",
        "engine warm-up: gc uncommitted, no-op run",
    ]
    assert done.as_status()["seconds"] > 0
    assert list((tmp_path / "scratch").iterdir()) == []  # the sample, states and reports went with their directory
    assert after == expected and expected  # a run in the session the warm-up used marks what it must


def test_warm_up_failures_are_counted_not_raised(tmp_path: Path, monkeypatch) -> None:
    """A warm-up run that fails is the engine's business only: counted, logged, and the rest run."""

    def refuse(*args, **kwargs):
        raise RuntimeError("refused for the test")

    for name in ("gc_committed", "lifecycle", "gc_uncommitted"):
        monkeypatch.setattr(f"lakewarden.api.{name}", refuse)
    lines: list[str] = []
    done = warm_up(tmp_path / "scratch", rounds=1, entries=600, say=lines.append)
    # no incremental runs without the full run's state: gc committed, lifecycle's full run, gc uncommitted's three
    assert (done.runs, done.failed, lines) == (5, 5, [])
    assert list((tmp_path / "scratch").iterdir()) == []
