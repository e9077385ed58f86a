"""Benchmark: seconds of the snapshot check (``lakewarden.snapshot.check.check_snapshot``), no Spark.

Run ``python benchmarks/snapshot_check.py [--entries N] [--repeat N] [--workdir DIR] [--jsonl]``.
On the benchmark repository (``common.bench_sample``, Parquet) it prints, best of ``--repeat``:

* cold: a full check with an empty cache directory (every table streamed, no memo);
* memoised: the same snapshot again, answered from the fingerprint memo.

With ``--jsonl`` it also writes a JSON Lines copy of the sample (kept in the workdir) and prints
the check of that copy cold (conversion to Parquet included), with the conversion cached but no
memo, and memoised. Also printed: the process's peak RSS, which the streamed check bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_sample, sample_dir  # noqa: E402  (puts this checkout's python/ on the import path)

import pyarrow.parquet as pq  # noqa: E402

from lakewarden.snapshot.check import RACY_SECONDS, check_snapshot  # noqa: E402
from lakewarden.timestamps import rfc3339  # noqa: E402

TABLES = ("commits", "branches", "tags", "metaranges", "ranges", "staged")


def _best(repeat: int, run: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def _jsonl_copy(snapshot: Path, target: Path) -> Path:
    """A JSON Lines copy of a Parquet snapshot, times as RFC 3339 text (made once, then kept)."""
    done = target / ".complete"
    if done.exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copy(snapshot / "repository.json", target / "repository.json")
    for name in TABLES:
        with open(target / f"{name}.jsonl", "w", encoding="utf-8") as out:
            for batch in pq.ParquetFile(snapshot / f"{name}.parquet").iter_batches(batch_size=65536):
                for row in batch.to_pylist():
                    out.write(json.dumps({k: rfc3339(v) if isinstance(v, datetime) else v for k, v in row.items()}) + "\n")
    past = time.time() - 10 * RACY_SECONDS  # old enough to be remembered
    for path in target.iterdir():
        os.utime(path, (past, past))
    done.touch()
    return target


def _settle(snapshot: Path) -> None:
    """Wait until the snapshot's files are old enough to be remembered (a just-generated sample)."""
    newest = max(path.stat().st_mtime for path in snapshot.rglob("*"))
    time.sleep(max(0.0, newest + RACY_SECONDS + 0.1 - time.time()))


def _measure(label: str, snapshot: Path, repeat: int, *, convert: bool) -> None:
    _settle(snapshot)
    with tempfile.TemporaryDirectory(prefix="lw-check-bench-") as scratch:
        caches = iter(range(10**6))

        def cold() -> object:
            return check_snapshot(snapshot, cache_dir=Path(scratch) / f"cold-{next(caches)}")

        cached = Path(scratch) / "cached"
        first = check_snapshot(snapshot, cache_dir=cached)
        assert not first.from_memo
        results = {"cold": _best(repeat, cold)}
        if convert:
            results["conversion cached, no memo"] = _best(
                repeat, lambda: check_snapshot(snapshot, cache_dir=cached, revalidate=True)
            )
        assert check_snapshot(snapshot, cache_dir=cached).from_memo, "the memo was not written"
        results["memoised"] = _best(repeat, lambda: check_snapshot(snapshot, cache_dir=cached))
    rows = ", ".join(f"{k}={v}" for k, v in first.row_counts.items())
    print(f"{label}: {rows}")
    for what, seconds in results.items():
        print(f"  check_snapshot {what:<28} {seconds:9.4f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "lakewarden-bench")
    parser.add_argument("--jsonl", action="store_true", help="also measure a JSON Lines copy (conversion included)")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    directory = sample_dir(args.workdir, entries=args.entries, slots=64, seed=1)
    sample = bench_sample(directory, entries=args.entries, slots=64, seed=1)
    print(f"sample ready in {time.perf_counter() - started:.1f} s (not counted): {sample.snapshot_dir}")
    _measure("parquet", Path(sample.snapshot_dir), args.repeat, convert=False)
    if args.jsonl:
        started = time.perf_counter()
        copy = _jsonl_copy(Path(sample.snapshot_dir), directory.with_name(directory.name + "-jsonl"))
        print(f"JSON Lines copy ready in {time.perf_counter() - started:.1f} s (not counted): {copy}")
        _measure("jsonl", copy, args.repeat, convert=True)
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
