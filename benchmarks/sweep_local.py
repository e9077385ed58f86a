"""``lakewarden sweep`` of N local files against a bare Python process unlinking the same files.

    python benchmarks/sweep_local.py [--files 100000] [--rounds 1]

Both sides are whole processes timed from spawn to exit, on the same freshly created files
(``data/<xx>/obj-<n>``, 256 directories). The bare side reads a plain list of paths and calls
``os.unlink`` on each: the floor for deleting those files from Python. The sweep side is the
command a user runs: it validates the report, takes the lock, re-checks every address against
the namespace, unlinks through the symlink-safe local deleter, records every outcome durably,
keeps summary.json current, and writes outcomes.csv. Also printed: the CLI's start-up alone
(``lakewarden --help``), the part of the sweep's time that is not the sweep's own work.
Target: sweep / bare <= 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from bench_support import lakewarden_env, sweep_command, timed, write_report

BARE = "import os, sys\nfor line in open(sys.argv[1], encoding='utf-8'):\n    os.unlink(line.rstrip('\\n'))\n"


def make_files(root: Path, count: int) -> list[str]:
    addresses = [f"data/{i % 256:02x}/obj-{i:09d}" for i in range(count)]
    for d in range(min(count, 256)):
        (root / "data" / f"{d:02x}").mkdir(parents=True, exist_ok=True)
    for address in addresses:
        os.close(os.open(root / address, os.O_CREAT | os.O_WRONLY, 0o644))
    return addresses


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1, help="repeat both sides; the best of each is compared")
    args = parser.parse_args(argv)
    env = lakewarden_env()
    best_sweep = best_bare = best_own = float("inf")
    with tempfile.TemporaryDirectory(prefix="lw-bench-sweep-local-") as scratch:
        base = Path(scratch)
        cli_start = min(timed([sys.executable, "-m", "lakewarden", "--help"], env=env) for _ in range(3))
        for round_ in range(args.rounds):
            ns = base / f"ns-{round_}"
            addresses = make_files(ns, args.files)
            listing = base / f"paths-{round_}.txt"
            listing.write_text("".join(f"{ns / a}\n" for a in addresses), encoding="utf-8")
            bare = timed([sys.executable, "-c", BARE, str(listing)], env=env)
            assert not any((ns / "data").rglob("obj-*")), "bare side left files"

            make_files(ns, args.files)
            report = write_report(base / f"report-{round_}", ns.as_uri(), addresses)
            sweep = timed(sweep_command(report, base / "state"), env=env)
            summary = json.loads((report / "summary.json").read_text())
            assert summary["status"] == "swept" and summary["num_deleted"] == args.files, summary
            assert not any((ns / "data").rglob("obj-*")), "sweep left files"
            own = json.loads((report / "sweep" / "summary.json").read_text())["seconds"]
            best_sweep, best_bare, best_own = min(best_sweep, sweep), min(best_bare, bare), min(best_own, own)
            print(f"round {round_ + 1}: bare unlink {bare:.2f}s, lakewarden sweep {sweep:.2f}s ({summary['sweep_engine']} engine)", flush=True)
    print()
    print(f"files                               : {args.files}")
    print(f"bare Python unlink (whole process)  : {best_bare:8.2f}s")
    print(f"lakewarden sweep (whole process)    : {best_sweep:8.2f}s")
    print(f"  of which CLI start-up alone       : {cli_start:8.2f}s  (lakewarden --help, best of 3)")
    print(f"  the sweep\'s own work             : {best_own:8.2f}s  (sweep/summary.json seconds)")
    print(f"ratio sweep / bare                  : {best_sweep / best_bare:8.2f}x  (target <= 2x)")
    print(f"ratio without the CLI start-up      : {(best_sweep - cli_start) / best_bare:8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
