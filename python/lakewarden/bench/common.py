"""What the Spark benchmarks share: the same generated repository shape and the same floor, so
their figures compare with each other."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from lakewarden.sample import SampleConfig, SampleRepository, generate

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


def bench_sample(directory: Path, *, entries: int, slots: int, seed: int) -> SampleRepository:
    """A 90-day sample repository of about ``entries`` range rows, as Parquet, without object files."""
    return generate(
        directory,
        SampleConfig(
            seed=seed, entries=entries, slots=slots, days=90, feature_branches=12,
            slots_per_commit=3, write_objects=False, table_format="parquet",
        ),
    )


def floor_scan_seconds(spark: "SparkSession") -> float:
    """The floor: one scan of every unique range's entries (read each address once and
    aggregate), what any job over the committed entries must at least do."""
    started = time.perf_counter()
    spark.table("lakewarden_snapshot.ranges").selectExpr(
        "count(*) as n", "sum(length(address)) as address_chars", "sum(size) as bytes"
    ).collect()
    return time.perf_counter() - started
