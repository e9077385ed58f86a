"""The engine's warm-up: every job's runs on a generated sample before the engine takes a run.

Why: an engine keeps the JVM's compiled code between runs, but a new engine has compiled
nothing, and each kind of run (a full lifecycle run, an incremental one, a no-op; a clean
uncommitted run, an optimized one) runs code of its own the first time it comes. Measured on 2
cores, lifecycle at 1M entries through an engine that had done one full run: the first
incremental/no-op pair cost 15-18 % of the full run's work, the fifth 6-10 %; the JIT compiler
threads still used 3.1 CPU seconds a pair at the sixth pair. That cost belongs to the engine's
start, not to the operator's first runs, so the engine pays it before it listens. Measured on
one machine, the same benchmark without and with the warm-up: the full run 35.7 s and 24.8 s,
incremental 7.6 s and 5.7 s, no-op 4.9 s and 3.7 s (medians of five); the first pair's share
17.7 % and 11.7 %.

What runs, in the engine's own session and one at a time, all in a temporary directory under
the engine's scratch directory (removed after): a sample repository of :data:`ENTRIES` range
rows (Parquet, no object files: more than a small snapshot, so every stretch of a run takes the
form a large repository's does, lakewarden.runtime.spark_session), then ``gc committed`` (dry
run), ``lifecycle`` (a full run, then :data:`ROUNDS` times an incremental run a day later and
the same run again, a no-op, each from the full run's state) and ``gc uncommitted`` (a clean
run, an optimized run a day later, a no-op) on a listing of the sample's namespace. A sweep
there deletes nothing: the sample's namespace holds no object files, and a missing file counts
as deleted (the lifecycle's incremental runs need a run that deleted). Nothing outside that
directory is read or written; the runs' own lines go to the engine's log.

A warm-up run that fails is logged and the warm-up goes on: a run it makes is never the
operator's, and the engine still takes runs (each reports its own errors).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Callable

log = logging.getLogger(__name__)

#: the sample's range rows: above the small snapshot's 4 MB of range rows (about 100k entries)
#: and the small form's 100k rows a stretch, so a run's one pass over every entry takes the
#: large form there as on a large repository; generated in about a second
ENTRIES = 150_000
#: incremental and no-op pairs after the full run
ROUNDS = 3
#: the lifecycle policy the warm-up runs: prefix rules, and per-branch days on one of them
POLICY = {
    "events": {"prefix": "events/", "days": 5, "branch_days": {"main": 3}},
    "logs": {"prefix": "logs/", "days": 2},
    "raw": {"prefix": "raw/", "days": 10},
}
#: committed GC's rules: a default retention and a longer one for main
GC_RULES = {"default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 30}]}


@dataclass(frozen=True)
class WarmUp:
    """What a warm-up did: its runs, how many failed, and how long it took."""

    runs: int
    failed: int
    seconds: float

    def as_status(self) -> dict[str, float | int]:
        return {"runs": self.runs, "failed": self.failed, "seconds": round(self.seconds, 1)}


def warm_up(scratch: Path, *, rounds: int = ROUNDS, entries: int = ENTRIES, say: Callable[[str], None] = log.info) -> WarmUp:
    """Run every job's kinds of run on a generated sample in a temporary directory under
    ``scratch`` (module docstring); ``say`` gets one line a run."""
    from lakewarden.api import CommittedGcOptions, LifecycleOptions, RunOptions, UncommittedGcOptions
    from lakewarden.api import gc_committed, gc_uncommitted, lifecycle
    from lakewarden.sample import generate, large_sample_config

    started = time.monotonic()
    runs = failed = 0
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch, prefix="warm-up-") as directory:
        root = Path(directory)
        sample = generate(root / "sample", large_sample_config(seed=11, entries=entries))
        rules, policy = root / "gc_rules.json", root / "lifecycle_policy.json"
        rules.write_text(json.dumps(GC_RULES))
        policy.write_text(json.dumps(POLICY))
        first = sample.end + timedelta(hours=1)
        later = first + timedelta(days=1)

        def run(label: str, call: Callable[[], object]) -> bool:
            nonlocal runs, failed
            moment = time.monotonic()
            runs += 1
            try:
                call()
            except Exception as exc:  # noqa: BLE001 - a warm-up run is never the operator's: note it, go on
                failed += 1
                log.warning("engine warm-up: %s failed: %s", label, exc)
                return False
            say(f"engine warm-up: {label} in {time.monotonic() - moment:.1f}s")
            return True

        def options(state: Path, now: datetime, name: str, *, dry_run: bool) -> RunOptions:
            return RunOptions(snapshot=sample.snapshot_dir, now=now, dry_run=dry_run, state=state, report=root / "reports" / name)

        run("gc committed (dry run)", partial(gc_committed, options(root / "gc-state", first, "gc", dry_run=True), CommittedGcOptions(rules=rules)))
        full_state = root / "lifecycle-after-full"
        full = run("lifecycle, a full run", partial(lifecycle, options(full_state, first, "lc-full", dry_run=False), LifecycleOptions(policy=policy)))
        for number in range(1, rounds + 1 if full else 1):  # without a full run's state, no incremental run
            state = root / f"lifecycle-{number}"
            shutil.copytree(full_state, state)
            for kind in ("incremental", "no-op"):
                run(f"lifecycle, {kind} run {number}",
                    partial(lifecycle, options(state, later, f"lc-{number}-{kind}", dry_run=False), LifecycleOptions(policy=policy)))
            shutil.rmtree(state, ignore_errors=True)
        state = root / "uncommitted-state"
        run("gc uncommitted, a clean run", partial(gc_uncommitted, options(state, first, "uc-clean", dry_run=True), UncommittedGcOptions()))
        for kind in ("optimized", "no-op"):
            run(f"gc uncommitted, {kind} run", partial(gc_uncommitted, options(state, later, f"uc-{kind}", dry_run=True), UncommittedGcOptions()))
    return WarmUp(runs, failed, time.monotonic() - started)
