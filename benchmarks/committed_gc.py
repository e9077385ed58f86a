"""Benchmark: ``lakewarden gc committed --dry-run`` end to end vs. the plain PySpark process.

    python benchmarks/committed_gc.py --entries 1000000,8450000 [--repeat 3] [--workdir DIR]
    python benchmarks/committed_gc.py --demo [--repeat 3]      # the demo's sample (lakewarden demo)
    python benchmarks/committed_gc.py --history [--history-commits 100000 ...]  # a long busy history

For each N in --entries: generate (or reuse, cached in the workdir by its parameters) the
benchmark repository (``common.bench_sample``: 90 days, Parquet, slots 64, seed 1), then run,
each as a whole subprocess (interpreter and JVM start included, as a user pays them):

(a) the baseline, ``benchmarks/plain_pyspark_committed_gc.py`` (one PySpark process doing the
    same address work; issue 13);
(b) ``lakewarden gc committed --snapshot S --rules R --now T --dry-run --state FRESH --report D``

with the same rules (default 7 days, main 30 days) and clock (the sample's end + 1 day), and
(c) the no-op run: (b) again on the same snapshot and the same state dir, nothing changed.
``--demo`` measures the demo's sample instead (``lakewarden demo``'s repository: seed 7, 3,000
entries, JSON Lines tables, 66 commits), where the fixed cost of a run is all there is.
``--history`` measures the busy history instead (``busy_history.busy_history``: by default
100,000 commits over a year, 10,000 branches of which 2,000 still open, the others merged or
deleted with their tips dangling, 20 ranges per metarange, ~5M entries, 2M metarange rows;
``--history-commits``, ``--history-branches``, ``--history-open``, ``--history-entries`` and
``--history-slots`` size it), where the commit graph, not the entries, is the load. Each run
is timed (wall clock) and the peak RSS of its whole process tree (Python + JVM) is sampled from
/proc every 0.2 s. Prints, per N: wall times (median of --repeat), the ratio (target <= 1.5x),
both marked counts (they must be equal: MISMATCH otherwise, exit 1), peak RSS of each; and for
several N the RSS growth against the smallest N (target <= 1.5x from 1M to 10M). Figures, not
assertions about time. ``--prepare-only`` generates (or finds cached) the samples, prints their
sizes and stops: a large sample can be made ahead of a quiet moment to measure in.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ProcessRun, bench_sample, child_env, describe_phases, fail, keep_class_archive, lakewarden_command, median, phases_of, print_java, run_measured, sample_dir  # noqa: E402
from busy_history import HistoryShape, busy_history, history_dir  # noqa: E402

import pyarrow.parquet as pq  # noqa: E402

BASELINE = Path(__file__).resolve().parent / "plain_pyspark_committed_gc.py"
#: the benchmark's retention: the baseline's --default-days and --branch-days (count_marked's
#: arguments), and lakewarden's rules file (RULES)
DEFAULT_DAYS = 7
BRANCH_DAYS = {"main": 30}
RULES = {"default_retention_days": DEFAULT_DAYS,
         "branches": [{"branch_id": branch, "retention_days": days} for branch, days in BRANCH_DAYS.items()]}
TARGET_RATIO = 1.5
TARGET_RSS_GROWTH = 1.5


def _entries(text: str) -> list[int]:
    try:
        values = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--entries: {text!r} is not a comma-separated list of integers") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"--entries: {text!r} needs positive integers")
    return values


def run_baseline(snapshot: Path, now: str) -> tuple[ProcessRun, int]:
    command = [sys.executable, str(BASELINE), "--snapshot", str(snapshot), "--now", now,
               "--default-days", str(DEFAULT_DAYS),
               *[option for branch, days in BRANCH_DAYS.items() for option in ("--branch-days", f"{branch}={days}")]]
    run = run_measured(command, env=child_env())
    if run.returncode != 0:
        fail("baseline", run)
    found = re.search(r"^marked (\d+)$", run.stdout, re.MULTILINE)
    if not found:
        fail("baseline (no 'marked N' line)", run)
    return run, int(found.group(1))  # type: ignore[union-attr]


def run_lakewarden(snapshot: Path, rules: Path, now: str, scratch: Path, *, fresh: bool = True) -> tuple[ProcessRun, int]:
    """One ``gc committed --dry-run``: with a fresh state directory (no history, no caches), or
    (``fresh=False``) again on the state the previous run left: the no-op run."""
    if fresh and scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(scratch / "report", ignore_errors=True)
    command = [*lakewarden_command(), "gc", "committed", "--snapshot", str(snapshot), "--rules", str(rules),
               "--now", now, "--dry-run", "--state", str(scratch / "state"), "--report", str(scratch / "report")]
    run = run_measured(command, env=child_env())
    if run.returncode != 0:
        fail("lakewarden gc committed", run)
    summary = json.loads((scratch / "report" / "summary.json").read_text())
    work = ", ".join(f"{summary[k]} {k.replace('_', ' ')}" for k in ("dbt_queries", "spark_jobs", "full_collections") if k in summary)
    if work:
        print(f"    ({work})", flush=True)
    print("  " + describe_phases(phases_of(run.seconds, summary)), flush=True)  # where its time went
    return run, int(summary["num_marked"])


def demo_sample(workdir: Path):
    """The demo's repository (what ``lakewarden demo`` generates), cached in the workdir."""
    from lakewarden.sample import SampleConfig, generate

    directory = workdir / "demo-sample-seed7"
    marker = directory / "ready"
    if not marker.is_file():
        shutil.rmtree(directory, ignore_errors=True)
        sample = generate(directory, SampleConfig(seed=7, entries=3000))
        marker.write_text(sample.end.isoformat())
    from datetime import datetime

    end = datetime.fromisoformat(marker.read_text())

    class Demo:
        snapshot_dir = directory / "snapshot"
        range_rows = sum(1 for _ in open(directory / "snapshot" / "ranges.jsonl", encoding="utf-8"))
        commit_count = sum(1 for _ in open(directory / "snapshot" / "commits.jsonl", encoding="utf-8"))

    Demo.end = end  # type: ignore[attr-defined]
    return Demo


def history_shape(args: argparse.Namespace) -> HistoryShape:
    """The busy history the ``--history-*`` options ask for (a year, the benchmark's seed)."""
    return HistoryShape(commits=args.history_commits, branches=args.history_branches,
                        open_branches=args.history_open, slots=args.history_slots,
                        entries=args.history_entries, seed=args.seed)


def prepare(args: argparse.Namespace, workdir: Path, entries: int) -> tuple[Any, str]:
    """The sample one size of the run measures, and how its heading names it."""
    if args.demo:
        return demo_sample(workdir), f"{entries:,d} entries"
    if args.history:
        shape = history_shape(args)
        sample = busy_history(history_dir(workdir, shape), **asdict(shape))
        metarange_rows = pq.read_metadata(sample.snapshot_dir / "metaranges.parquet").num_rows
        return sample, (f"busy history of {shape.days} days, {shape.branches:,d} branches made, "
                        f"{len(sample.branches) - 1:,d} open, {metarange_rows:,d} metarange rows")
    return (bench_sample(sample_dir(workdir, entries=entries, slots=args.slots, seed=args.seed),
                         entries=entries, slots=args.slots, seed=args.seed), f"{entries:,d} entries")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=_entries, default=[1_000_000],
                        help="range entries to generate, comma-separated for several sizes (default 1000000)")
    parser.add_argument("--slots", type=int, default=64, help="ranges per metarange (default 64)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each side per size; the median is printed")
    parser.add_argument("--demo", action="store_true", help="measure the demo's sample instead of --entries")
    parser.add_argument("--history", action="store_true",
                        help="measure the busy history (benchmarks/busy_history.py) instead of --entries")
    defaults = HistoryShape()
    parser.add_argument("--history-commits", type=int, default=defaults.commits,
                        help=f"commits of the busy history (default {defaults.commits})")
    parser.add_argument("--history-branches", type=int, default=defaults.branches,
                        help=f"feature branches made in it (default {defaults.branches})")
    parser.add_argument("--history-open", type=int, default=defaults.open_branches,
                        help=f"of those, still open at its end (default {defaults.open_branches})")
    parser.add_argument("--history-entries", type=int, default=defaults.entries,
                        help=f"range entries of the busy history (default {defaults.entries})")
    parser.add_argument("--history-slots", type=int, default=defaults.slots,
                        help=f"ranges per metarange of the busy history (default {defaults.slots})")
    parser.add_argument("--prepare-only", action="store_true",
                        help="generate (or reuse) the samples, print their sizes and stop")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "lakewarden-bench",
                        help="samples are cached here by their parameters (default: $TMPDIR/lakewarden-bench)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.demo and args.history:
        parser.error("--demo and --history measure different samples: give one")
    if args.history:
        try:
            history_shape(args)
        except ValueError as exc:
            parser.error(str(exc))
    print_java()  # the runtime both sides of every ratio run on
    keep_class_archive()  # no measured process writes the JVM class archive (common.keep_class_archive)
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    rules = workdir / "committed-gc-rules.json"
    rules.write_text(json.dumps(RULES) + "\n")

    rows = []
    ok = True
    sizes = [0] if args.demo else [args.history_entries] if args.history else args.entries
    for entries in sizes:
        started = time.perf_counter()
        sample, label = prepare(args, workdir, entries)
        prepared = time.perf_counter() - started
        now = (sample.end + timedelta(days=1)).isoformat().replace("+00:00", "Z")
        print(f"== {label}: {sample.range_rows:,d} range rows, {sample.commit_count:,d} commits "
              f"(sample ready in {prepared:.1f} s, not counted); --now {now}", flush=True)
        if args.prepare_only:
            continue
        base_runs, lake_runs, noop_runs, base_marks, lake_marks = [], [], [], set(), set()
        for attempt in range(1, args.repeat + 1):
            run, marked = run_baseline(sample.snapshot_dir, now)
            base_runs.append(run)
            base_marks.add(marked)
            print(f"  run {attempt}: baseline   {run.seconds:8.1f} s  peak RSS {run.peak_rss_mb:7.0f} MB  marked {marked:,d}", flush=True)
            run, marked = run_lakewarden(sample.snapshot_dir, rules, now, workdir / "committed-gc-run")
            lake_runs.append(run)
            lake_marks.add(marked)
            print(f"  run {attempt}: lakewarden {run.seconds:8.1f} s  peak RSS {run.peak_rss_mb:7.0f} MB  marked {marked:,d}", flush=True)
            run, marked = run_lakewarden(sample.snapshot_dir, rules, now, workdir / "committed-gc-run", fresh=False)
            noop_runs.append(run)
            lake_marks.add(marked)
            print(f"  run {attempt}: no-op run  {run.seconds:8.1f} s  peak RSS {run.peak_rss_mb:7.0f} MB  marked {marked:,d}", flush=True)
        base_s = median([r.seconds for r in base_runs])
        lake_s = median([r.seconds for r in lake_runs])
        noop_s = median([r.seconds for r in noop_runs])
        base_rss = max(r.peak_rss_mb for r in base_runs)
        lake_rss = max(r.peak_rss_mb for r in lake_runs)
        same = len(base_marks) == 1 and base_marks == lake_marks
        ok &= same
        ratio = lake_s / base_s
        print(f"  entries (range rows)       {sample.range_rows:>14,d}")
        print(f"  plain PySpark baseline     {base_s:>12.1f} s   peak RSS {base_rss:>7.0f} MB")
        print(f"  lakewarden gc committed    {lake_s:>12.1f} s   peak RSS {lake_rss:>7.0f} MB")
        print(f"  ratio lakewarden/baseline  {ratio:>12.2f} x  (target <= {TARGET_RATIO}x: {'met' if ratio <= TARGET_RATIO else 'NOT met'})")
        noop_ratio = noop_s / base_s
        print(f"  no-op run (same state)     {noop_s:>12.1f} s   ratio {noop_ratio:.2f} x  (target <= {TARGET_RATIO}x: {'met' if noop_ratio <= TARGET_RATIO else 'NOT met'})")
        if same:
            print(f"  marked                     {next(iter(lake_marks)):>14,d}   (equal: OK)")
        else:
            print(f"  !!! MISMATCH: marked by baseline {sorted(base_marks)} vs lakewarden {sorted(lake_marks)} !!!")
        rows.append((entries, sample.range_rows, base_s, lake_s, ratio, base_rss, lake_rss, same))

    if args.prepare_only:
        return 0
    print()
    print("summary (wall times: median of %d; RSS: peak of the process tree, JVM included)" % args.repeat)
    print(f"{'entries':>12} {'baseline s':>11} {'lakewarden s':>13} {'ratio':>7} {'base RSS MB':>12} {'lw RSS MB':>10} "
          f"{'lw RSS vs smallest':>19} {'marked':>9}")
    smallest = min(rows, key=lambda r: r[0])
    for entries, _, base_s, lake_s, ratio, base_rss, lake_rss, same in rows:
        growth = lake_rss / smallest[6]
        print(f"{entries:>12,d} {base_s:>11.1f} {lake_s:>13.1f} {ratio:>6.2f}x {base_rss:>12.0f} {lake_rss:>10.0f} "
              f"{growth:>18.2f}x {'equal' if same else 'MISMATCH':>9}")
    if len(rows) > 1:
        largest = max(rows, key=lambda r: r[0])
        growth = largest[6] / smallest[6]
        print(f"lakewarden peak RSS {largest[0]:,d} vs {smallest[0]:,d} entries: {growth:.2f}x "
              f"(target <= {TARGET_RSS_GROWTH}x from 1M to 10M: {'met' if growth <= TARGET_RSS_GROWTH else 'NOT met'}); "
              f"baseline {largest[5] / smallest[5]:.2f}x")
    if not ok:
        print("!!! MISMATCH: marked counts differ (see above) !!!")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
