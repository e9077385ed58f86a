"""Benchmark: lifecycle full run vs. incremental run after +1% commits, and vs. a scan floor.

``python -m lakewarden.bench.lifecycle --entries 1000000``

Generates a sample repository with N range entries (Parquet, no object files) and loads it;
times (1) the floor: one Spark scan of the unique ranges' entries, (2) a full first lifecycle
mark (the dbt models, as ``lakewarden lifecycle`` runs them), which is then recorded in the
ledger as a run that deleted (the sweep is benchmarked by ``bench.sweep_s3``; here there are
no objects to delete), (3) after appending 1% more commits on main (each adding a new range
of fresh entries) and moving the clock a day, the incremental mark. Prints both times, their
ratio (target <= 10%), the full run / floor ratio (target <= 2x) and what each run read.
Figures, not assertions.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lakewarden.bench.common import bench_sample, floor_scan_seconds
from lakewarden.jobs.common import JobContext, new_run_id
from lakewarden.jobs.lifecycle import RunLedger, mark_lifecycle
from lakewarden.lifecycle_policy import parse_lifecycle_policy
from lakewarden.sample import TABLE_NAMES
from lakewarden.snapshot import arrow_schemas, load_snapshot
from lakewarden.spark_session import get_or_create

POLICY = """{
  "events": {"prefix": "events/", "days": 5, "branch_days": {"main": 3}},
  "logs": {"prefix": "logs/", "days": 2},
  "raw": {"prefix": "raw/", "days": 10}
}"""


def append_commits(snapshot_dir: Path, count: int, entries: int, start: datetime, span: timedelta) -> None:
    """Add ``count`` commits on main, each listing main's ranges plus a new range of fresh entries
    (``entries`` in all), dated from ``start`` over ``span``. The ranges table becomes a folder
    (the original file plus one new part), as CONTRACT section 2 allows."""
    schemas = arrow_schemas()
    commits = pq.read_table(snapshot_dir / "commits.parquet").to_pylist()
    branches = pq.read_table(snapshot_dir / "branches.parquet").to_pylist()
    metaranges = pq.read_table(snapshot_dir / "metaranges.parquet").to_pylist()
    main = next(b for b in branches if b["branch_id"] == "main")
    head = next(c for c in commits if c["commit_id"] == main["commit_id"])
    ranges = [m["range_id"] for m in metaranges if m["meta_range_id"] == head["meta_range_id"]]
    per_commit = max(1, entries // count)
    new_entries: dict[str, list] = {name: [] for name in schemas["ranges"].names}
    for number in range(count):
        moment = start + span * (number / count)
        range_id, meta_range_id, commit_id = (f"bench-{kind}-{number:06d}" for kind in ("range", "metarange", "commit"))
        for index in range(per_commit):
            key = f"{TABLE_NAMES[index % len(TABLE_NAMES)]}/appended/c{number:06d}/part-{index:07d}.parquet"
            for column, value in zip(
                schemas["ranges"].names,
                (range_id, key, f"data/appended/{number:06d}/obj-{index:07d}", "RELATIVE", moment, 32, f"etag-{number}-{index}"),
            ):
                new_entries[column].append(value)
        ranges = [*ranges, range_id]
        metaranges += [{"meta_range_id": meta_range_id, "range_id": r} for r in ranges]
        commits.append(
            {"commit_id": commit_id, "parents": [main["commit_id"]], "creation_date": moment, "meta_range_id": meta_range_id,
             "committer": "bench", "message": f"appended {number}", "version": 1}
        )
        main["commit_id"] = commit_id
    pq.write_table(pa.Table.from_pylist(commits, schema=schemas["commits"]), snapshot_dir / "commits.parquet")
    pq.write_table(pa.Table.from_pylist(branches, schema=schemas["branches"]), snapshot_dir / "branches.parquet")
    pq.write_table(pa.Table.from_pylist(metaranges, schema=schemas["metaranges"]), snapshot_dir / "metaranges.parquet")
    folder = snapshot_dir / "ranges.parquet"
    original = snapshot_dir / "ranges-original.parquet"
    folder.rename(original)
    folder.mkdir()
    original.rename(folder / "part-00000.parquet")
    pq.write_table(pa.table(new_entries, schema=schemas["ranges"]), folder / "part-00001.parquet")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakewarden.bench.lifecycle", description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000, help="range entries to generate (default 1M)")
    parser.add_argument("--slots", type=int, default=64, help="ranges per metarange (default 64)")
    parser.add_argument("--growth", type=float, default=0.01, help="commits added before the incremental run (default 0.01 = 1%%)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, help="keep data here (default: a temporary directory)")
    args = parser.parse_args(argv)

    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="lakewarden-bench-lc-"))).resolve()
    state = workdir / "state"
    started = time.perf_counter()
    sample = bench_sample(workdir / "repo", entries=args.entries, slots=args.slots, seed=args.seed)
    generated = time.perf_counter() - started
    spark = get_or_create(state, app_name="lakewarden-bench-lifecycle")
    policy = parse_lifecycle_policy(POLICY, "bench policy")

    started = time.perf_counter()
    snapshot = load_snapshot(spark, sample.snapshot_dir)
    loaded = time.perf_counter() - started
    rows = snapshot.row_counts["ranges"]

    floor = floor_scan_seconds(spark)

    def context(now: datetime, loaded_snapshot) -> JobContext:
        return JobContext(
            job="lifecycle", run_id=new_run_id("bench"), now=now, dry_run=False, state=state,
            spark=spark, snapshot=loaded_snapshot,
        )

    first_now = sample.end + timedelta(hours=1)
    full_context = context(first_now, snapshot)
    started = time.perf_counter()
    full = mark_lifecycle(full_context, policy, report_dir=workdir / "report-full")
    full_seconds = time.perf_counter() - started
    RunLedger(full_context, potential_mode="complete", full=False).record("swept", num_marked=full.num_marked, num_deleted=full.num_marked, num_failed=0)

    added = max(1, math.ceil(sample.commit_count * args.growth))
    append_commits(sample.snapshot_dir, added, max(added, int(rows * args.growth)), first_now, timedelta(hours=20))
    started = time.perf_counter()
    grown = load_snapshot(spark, sample.snapshot_dir)
    reloaded = time.perf_counter() - started
    started = time.perf_counter()
    incremental = mark_lifecycle(context(first_now + timedelta(days=1), grown), policy, report_dir=workdir / "report-incremental")
    incremental_seconds = time.perf_counter() - started

    def read(result) -> str:
        f = result.figures
        return (f"{f['potential_commits']:,} of {f['commits']:,} commits, {f['potential_ranges']:,} of {f['ranges']:,} ranges; "
                f"{result.num_marked:,} marked")

    print(f"entries (range rows)     {rows:>14,d}")
    print(f"commits                  {sample.commit_count:>14,d} (+{added} appended, {int(rows * args.growth):,} entries)")
    print(f"generate (not counted)   {generated:>12.1f} s")
    print(f"load snapshot (ingest)   {loaded:>12.1f} s  (again after appending: {reloaded:.1f} s)")
    print(f"floor: one scan          {floor:>12.1f} s   {rows / floor:>12,.0f} rows/s")
    print(f"full run (mark)          {full_seconds:>12.1f} s   read {read(full)}")
    print(f"incremental run (mark)   {incremental_seconds:>12.1f} s   read {read(incremental)}")
    print(f"ratio incremental / full {incremental_seconds / full_seconds:>12.1%}   (target <= 10%)")
    print(f"ratio full / floor       {full_seconds / floor:>12.2f} x  (target <= 2x)")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
