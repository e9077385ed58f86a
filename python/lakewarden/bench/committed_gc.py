"""Benchmark: committed GC mark vs. a floor measured in the same run.

``python -m lakewarden.bench.committed_gc --entries 1000000``

Generates a sample repository with N range entries (Parquet, no object files), loads it, then
times (1) the floor: one Spark scan of the unique ranges' entries (read every entry's address
once and aggregate), and (2) the committed GC mark (the dbt models, as ``gc committed
--dry-run`` runs them). Prints wall times, rows/s, the ratio mark/floor, and the driver's memory
(Python peak RSS and JVM heap in use) so growth with N is visible. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from lakewarden.gc_rules import GcRules
from lakewarden.bench.common import bench_sample, floor_scan_seconds
from lakewarden.jobs.common import JobContext, new_run_id
from lakewarden.jobs.gc import mark_committed
from lakewarden.snapshot import load_snapshot
from lakewarden.spark_session import get_or_create


def _jvm_heap_used_mb(spark) -> float:
    runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()  # noqa: SLF001 - measurement only
    return (runtime.totalMemory() - runtime.freeMemory()) / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakewarden.bench.committed_gc", description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000, help="range entries to generate (default 1M)")
    parser.add_argument("--slots", type=int, default=64, help="ranges per metarange (default 64)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, help="keep data here (default: a temporary directory)")
    args = parser.parse_args(argv)

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="lakewarden-bench-"))
    state = workdir / "state"
    started = time.perf_counter()
    sample = bench_sample(workdir / "repo", entries=args.entries, slots=args.slots, seed=args.seed)
    generated = time.perf_counter() - started
    spark = get_or_create(state.resolve(), app_name="lakewarden-bench")

    started = time.perf_counter()
    snapshot = load_snapshot(spark, sample.snapshot_dir)
    loaded = time.perf_counter() - started
    rows = snapshot.row_counts["ranges"]

    floor = floor_scan_seconds(spark)

    class _Args:  # the job's parsed options, as the CLI would pass them
        pass

    context = JobContext(
        job="gc-committed",
        run_id=new_run_id("bench"),
        now=sample.end + timedelta(days=1),
        dry_run=True,
        state=state.resolve(),
        spark=spark,
        snapshot=snapshot,
    )
    rules = GcRules(default_retention_days=7, branch_retention_days={"main": 30})
    started = time.perf_counter()
    result = mark_committed(context, rules, report_dir=workdir / "report")
    mark = time.perf_counter() - started

    python_peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"entries (range rows)     {rows:>14,d}")
    print(f"commits                  {sample.commit_count:>14,d}")
    print(f"generate (not counted)   {generated:>12.1f} s")
    print(f"load snapshot (ingest)   {loaded:>12.1f} s")
    print(f"floor: one scan          {floor:>12.1f} s   {rows / floor:>12,.0f} rows/s")
    print(f"committed GC mark        {mark:>12.1f} s   {rows / mark:>12,.0f} rows/s")
    print(f"ratio mark / floor       {mark / floor:>12.2f} x  (target <= 2x)")
    print(f"marked                   {result.num_marked:>14,d} addresses, {result.expired_commits} of {result.commits} commits expired")
    print(f"driver: python peak RSS  {python_peak_mb:>12.0f} MB, JVM heap in use {_jvm_heap_used_mb(spark):.0f} MB")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
