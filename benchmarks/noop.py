"""Benchmark: every job's no-op run on the demo's sample vs. the plain PySpark process.

    python benchmarks/noop.py [--repeat 2] [--workdir DIR]

The issue's no-op target: "a no-op run (each job again on the same snapshot and state, nothing
changed) <= 1.5x the plain PySpark process on the demo's sample, and it reads no range". The
plain PySpark process is ``plain_pyspark_committed_gc.py`` (the yardstick the issue measured on
that sample: 15.8 s). Each repeat generates the demo's repository afresh (``lakewarden demo``'s:
seed 7, 3,000 entries, object files on local disk; generation is not counted) in the workdir,
then runs, each as a whole subprocess (interpreter, JVM and dbt start included, as a user pays
them):

1. the baseline, ``plain_pyspark_committed_gc.py`` on the sample (committed_gc.py's rules);
2. the trivial floor: a PySpark process that starts a session and runs one trivial job
   (``common.PLAIN_PYSPARK``), printed beside the target for what a run costs above it;
3. per job, on a fresh ``--state`` of its own, its first run, then the same command again on the
   same snapshot, state and clock: the no-op run. ``gc committed``, ``gc uncommitted`` (a listing
   of the namespace) and ``gc`` (both, as lakeFS's GC) are dry runs; ``lifecycle`` marks and
   sweeps, since its next run is incremental only after a run that deleted (it runs last: its
   sweep deletes from the sample).

Prints per job the first run's and the no-op's seconds (median of --repeat), the no-op's ratio
to the baseline (target <= 1.5x) and to the floor, and the ranges the no-op read (target 0,
from its report). The baseline's marked count must equal ``gc committed``'s (exit 1 otherwise):
the yardstick did the same work. Figures, not assertions about time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ProcessRun, child_env, fail, keep_class_archive, lakewarden_command, median, plain_pyspark_run, print_java, run_measured  # noqa: E402
from committed_gc import RULES, run_baseline  # noqa: E402

from lakewarden.jobs.demo import DEMO_POLICY  # noqa: E402
from lakewarden.sample import SampleConfig, generate  # noqa: E402
from lakewarden.timestamps import rfc3339  # noqa: E402

TARGET = 1.5


@dataclass(frozen=True)
class Job:
    """One job as the benchmark runs it: its CLI words, and whether its first run sweeps."""

    name: str
    words: tuple[str, ...]
    sweeps: bool = False


@dataclass(frozen=True)
class Pair:
    """A job's first run and its no-op run, with what the no-op's report says it read."""

    first: ProcessRun
    noop: ProcessRun
    first_marked: int
    noop_marked: int
    noop_ranges_read: object


def _run(job: Job, common: list[str], state: Path, report: Path) -> tuple[ProcessRun, dict]:
    shutil.rmtree(report, ignore_errors=True)
    command = [*lakewarden_command(), *job.words, *common, "--state", str(state), "--report", str(report)]
    if not job.sweeps:
        command.append("--dry-run")
    run = run_measured(command, env=child_env())
    if run.returncode != 0:
        fail(f"lakewarden {' '.join(job.words)}", run)
    return run, json.loads((report / "summary.json").read_text())


def measure(job: Job, common: list[str], scratch: Path) -> Pair:
    """The job's first run on a fresh state, then the no-op run on the state it left."""
    state = scratch / f"state-{job.name}"
    shutil.rmtree(state, ignore_errors=True)
    first, first_summary = _run(job, common, state, scratch / f"report-{job.name}-first")
    noop, noop_summary = _run(job, common, state, scratch / f"report-{job.name}-noop")
    return Pair(first, noop, int(first_summary.get("num_marked") or 0), int(noop_summary.get("num_marked") or 0),
                noop_summary.get("ranges_read"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=1, help="repeats; medians are printed (default 1)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "lakewarden-bench",
                        help="scratch space (default: $TMPDIR/lakewarden-bench)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    print_java()  # the runtime both sides of every ratio run on
    keep_class_archive()  # no measured process writes the JVM class archive (common.keep_class_archive)
    scratch = args.workdir.resolve() / "noop-run"
    rules = scratch / "gc_rules.json"
    policy = scratch / "lifecycle_policy.json"
    jobs = (
        Job("gc-committed", ("gc", "committed", "--rules", str(rules))),
        Job("gc-uncommitted", ("gc", "uncommitted", "--min-age", "24h")),
        Job("gc", ("gc", "--rules", str(rules), "--min-age", "24h")),
        Job("lifecycle", ("lifecycle", "--policy", str(policy)), sweeps=True),  # last: it deletes
    )
    baselines: list[ProcessRun] = []
    floors: list[ProcessRun] = []
    pairs: dict[str, list[Pair]] = {job.name: [] for job in jobs}
    ok = True
    for attempt in range(1, args.repeat + 1):
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        rules.write_text(json.dumps(RULES) + "\n")
        policy.write_text(json.dumps(DEMO_POLICY) + "\n")
        sample = generate(scratch / "sample", SampleConfig(seed=7, entries=3000))
        now = rfc3339(sample.end + timedelta(days=1), timespec="seconds")
        print(f"== repeat {attempt}: the demo's sample, {sample.range_rows:,d} range rows, {sample.commit_count} commits; "
              f"--now {now}", flush=True)
        baseline, base_marked = run_baseline(sample.snapshot_dir, now)
        baselines.append(baseline)
        print(f"  plain PySpark process (committed GC)  {baseline.seconds:7.1f} s  marked {base_marked:,d}", flush=True)
        floor = plain_pyspark_run()
        floors.append(floor)
        print(f"  trivial PySpark process (floor)       {floor.seconds:7.1f} s", flush=True)
        common = ["--snapshot", str(sample.snapshot_dir), "--now", now]
        for job in jobs:
            pair = measure(job, common, scratch)
            pairs[job.name].append(pair)
            print(f"  {job.name:<15} first {pair.first.seconds:6.1f} s (marked {pair.first_marked:,d})   "
                  f"no-op {pair.noop.seconds:6.1f} s (marked {pair.noop_marked:,d}, {pair.noop_ranges_read} ranges read)",
                  flush=True)
            if job.name == "gc-committed" and pair.first_marked != base_marked:
                print(f"  !!! MISMATCH: the baseline marked {base_marked:,d}, gc committed {pair.first_marked:,d} !!!")
                ok = False
    base_s = median([run.seconds for run in baselines])
    floor_s = median([run.seconds for run in floors])
    print()
    print(f"summary (medians of {args.repeat}): plain PySpark process {base_s:.1f} s, trivial floor {floor_s:.1f} s")
    print(f"{'job':<15} {'first s':>8} {'no-op s':>8} {'no-op/plain':>12} {'no-op/floor':>12} {'ranges read':>12}  target")
    for job in jobs:
        noop_s = median([pair.noop.seconds for pair in pairs[job.name]])
        first_s = median([pair.first.seconds for pair in pairs[job.name]])
        reads = sorted({str(pair.noop_ranges_read) for pair in pairs[job.name]})
        ratio = noop_s / base_s
        met = ratio <= TARGET and reads == ["0"]
        print(f"{job.name:<15} {first_s:>8.1f} {noop_s:>8.1f} {ratio:>11.2f}x {noop_s / floor_s:>11.2f}x {','.join(reads):>12}  "
              f"{'met' if met else 'NOT met'} (<= {TARGET}x, 0 ranges)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
