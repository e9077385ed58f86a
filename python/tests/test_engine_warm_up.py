"""The engine's warm-up (lakewarden.engine.warm_up): every kind of run of every job succeeds on
its generated sample, in a temporary directory under the scratch directory that is gone after,
and a job run after it marks what it marks without one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lakewarden.engine.warm_up import warm_up

PYTHON_DIR = Path(__file__).resolve().parents[1]


#: run in a Python process of its own (its own JVM, as an engine's): this module stays off the
#: embedded session's pytest process, the longer of the suite's two (scripts/test.sh)
SCRIPT = """
import json, sys
from datetime import timedelta
from pathlib import Path
from lakewarden.api import LifecycleOptions, RunOptions, lifecycle
from lakewarden.engine import warm_up as module
from lakewarden.sample import SampleConfig, generate

root = Path(sys.argv[1])
sample = generate(root / "sample", SampleConfig(seed=5, entries=600))
policy = root / "policy.json"
policy.write_text(json.dumps(module.POLICY))

def marked(state):
    run = RunOptions(snapshot=sample.snapshot_dir, now=sample.end + timedelta(days=1), dry_run=True, state=state, report=state / "report")
    return lifecycle(run, LifecycleOptions(policy=policy)).num_marked

before = marked(root / "before")
lines = []
# one incremental/no-op pair, on a small sample: the same runs as the engine's, quicker
done = module.warm_up(root / "scratch", rounds=1, entries=600, say=lines.append)
after = marked(root / "after")
print(json.dumps({"status": done.as_status(), "lines": lines, "before": before, "after": after,
                  "left": [path.name for path in (root / "scratch").iterdir()]}))
"""


def test_warm_up_runs_every_kind_of_run_and_changes_no_later_run(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(PYTHON_DIR), os.environ.get("PYTHONPATH", "")) if p)}
    env.pop("LAKEWARDEN_ENGINE", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # gc committed; lifecycle full, incremental, no-op; gc uncommitted clean, optimized, no-op
    assert (result["status"]["runs"], result["status"]["failed"]) == (7, 0), done.stderr[-3000:]
    assert [line.split(" in ")[0] for line in result["lines"]] == [
        "engine warm-up: gc committed (dry run)",
        "engine warm-up: lifecycle, a full run",
        "engine warm-up: lifecycle, incremental run 1",
        "engine warm-up: lifecycle, no-op run 1",
        "engine warm-up: gc uncommitted, a clean run",
        "engine warm-up: gc uncommitted, optimized run",
        "engine warm-up: gc uncommitted, no-op run",
    ]
    assert result["status"]["seconds"] > 0
    assert result["left"] == []  # the sample, states and reports went with their directory
    assert result["after"] == result["before"] > 0  # a run in the session the warm-up used marks as before


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
