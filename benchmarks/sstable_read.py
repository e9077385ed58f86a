"""Benchmark: how fast lakewarden reads lakeFS ranges, in one process and as Spark tasks.

Run ``python benchmarks/sstable_read.py [FILE] [--copies N] [--repeat N]``. FILE defaults
to the test fixture ``python/tests/fixtures/lakefs-sstables/lakefs/56569996.sst`` (a
production-sized lakeFS range, ~14k entries). Prints:

* single process, raw records (footer -> index -> CRC32C-checked, Snappy-decoded blocks);
* single process, decoded into snapshot columns (protobuf ``catalog.Entry`` per record);
* single process, decoded into per-record dicts (the ``sstable cat`` path);
* Spark: N copies of the range read inside ``mapPartitions`` (one range file per task), the way
  extract fans out over a repository's ranges.

The figures are entries per second of wall-clock time, best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402,F401  (puts this checkout's python/ on the import path)

from lakewarden.lakefs.records import decode_range_columns, iter_decoded  # noqa: E402
from lakewarden.lakefs.sstable import SSTableReader  # noqa: E402

DEFAULT_FILE = (
    Path(__file__).resolve().parents[1] / "python" / "tests" / "fixtures" / "lakefs-sstables" / "lakefs" / "56569996.sst"
)


def _best(repeat: int, run: Callable[[], int]) -> tuple[int, float]:
    """Run ``run`` ``repeat`` times; return (entries, best entries/s)."""
    best = 0.0
    entries = 0
    for _ in range(repeat):
        start = time.perf_counter()
        entries = run()
        best = max(best, entries / (time.perf_counter() - start))
    return entries, best


def read_raw(path: str) -> int:
    return sum(len(keys) for keys, _ in SSTableReader(path).iter_blocks())


def read_columns(path: str) -> int:
    return len(decode_range_columns(SSTableReader(path))["key"])


def read_dicts(path: str) -> int:
    return sum(1 for _ in iter_decoded(SSTableReader(path)))


def _read_partition(paths: Iterator[str]) -> Iterator[int]:
    """Spark task body: decode every range file of the partition, yield its entry count."""
    from lakewarden.lakefs.records import decode_range_columns as decode
    from lakewarden.lakefs.sstable import SSTableReader as Reader

    for path in paths:
        yield len(decode(Reader(path))["key"])


def bench_spark(path: Path, copies: int, repeat: int) -> tuple[int, float, int]:
    """Read ``copies`` copies of ``path`` as Spark tasks; return (entries, entries/s, cores)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    cores = os.cpu_count() or 1
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("lakewarden-bench-sstable-read")
        .config("spark.ui.enabled", "false")
        .config("spark.python.worker.reuse", "true")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory(prefix="lakewarden-bench-") as tmp:
        paths = []
        for i in range(copies):
            # Distinct files (not links), as a repository's ranges are distinct objects.
            target = Path(tmp) / f"range-{i:04d}"
            shutil.copyfile(path, target)
            paths.append(str(target))
        # A few tasks per core, each reading many ranges, amortises per-task overhead.
        rdd = spark.sparkContext.parallelize(paths, numSlices=min(copies, 2 * cores))
        rdd.mapPartitions(_read_partition).sum()  # warm up the Python workers
        entries, best = _best(repeat, lambda: int(rdd.mapPartitions(_read_partition).sum()))
    spark.stop()
    return entries, best, cores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", nargs="?", default=str(DEFAULT_FILE), help="a lakeFS range SSTable")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (best is printed)")
    parser.add_argument("--copies", type=int, default=64, help="range copies read by Spark tasks")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark measurement")
    args = parser.parse_args(argv)
    path = Path(args.file)
    if not path.is_file():
        print(f"no such file: {path}", file=sys.stderr)
        return 2
    size_mb = path.stat().st_size / 1e6
    print(f"file: {path} ({size_mb:.2f} MB)")
    for label, fn in (
        ("1 process, raw records", read_raw),
        ("1 process, decoded to columns", read_columns),
        ("1 process, decoded to dicts", read_dicts),
    ):
        entries, rate = _best(args.repeat, lambda fn=fn: fn(str(path)))
        print(f"{label:34s} {entries:>9,d} entries  {rate:>12,.0f} entries/s")
    if not args.no_spark:
        entries, rate, cores = bench_spark(path, args.copies, args.repeat)
        label = f"Spark local[{cores}], {args.copies} ranges"
        print(f"{label:34s} {entries:>9,d} entries  {rate:>12,.0f} entries/s (decoded to columns)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
