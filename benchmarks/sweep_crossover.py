"""Where the distributed sweep starts to pay: ``lakewarden sweep --engine process`` against
``--engine spark`` on the same local files, at two sizes.

    python benchmarks/sweep_crossover.py [--sizes 5000,40000]

Each run is a whole process (interpreter and, for Spark, JVM start included) on freshly created
files. Per engine, the two sizes give a fixed cost and a cost per address (a straight line);
where the lines cross is the size above which Spark finishes first on this machine. Spark's
slope depends on how many cores its tasks really get (``local[*]`` here; executors on a
cluster), the in-process slope does not, so the crossover is a property of the machine: the
printed figure is for this one.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from bench_support import lakewarden_env, sweep_command, timed, write_report
from sweep_local import make_files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="5000,40000", help="two comma-separated sizes")
    args = parser.parse_args(argv)
    small, large = (int(x) for x in args.sizes.split(","))
    env = lakewarden_env()
    seconds: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory(prefix="lw-bench-crossover-") as scratch:
        base = Path(scratch)
        for size in (small, large):
            for engine in ("process", "spark"):
                ns = base / f"ns-{engine}-{size}"
                addresses = make_files(ns, size)
                report = write_report(base / f"report-{engine}-{size}", ns.as_uri(), addresses)
                seconds[(engine, size)] = timed(sweep_command(report, base / "state", "--engine", engine), env=env)
                summary = json.loads((report / "summary.json").read_text())
                assert summary["status"] == "swept" and summary["sweep_engine"] == engine, summary
                print(f"{engine:>7} engine, {size:>8} files: {seconds[(engine, size)]:7.2f}s", flush=True)
    lines = {}
    for engine in ("process", "spark"):
        slope = (seconds[(engine, large)] - seconds[(engine, small)]) / (large - small)
        fixed = seconds[(engine, small)] - slope * small
        lines[engine] = (fixed, slope)
        print(f"{engine:>7}: {fixed:6.2f}s fixed + {slope * 1e6:7.1f}us per address")
    (fp, sp), (fs, ss) = lines["process"], lines["spark"]
    if sp > ss:
        print(f"crossover: Spark pays above ~{(fs - fp) / (sp - ss):,.0f} addresses on this machine")
    else:
        print("crossover: none on this machine (Spark is no faster per address than one process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
