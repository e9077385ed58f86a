"""Benchmark: ``lakewarden gc --dry-run`` against ``gc committed --dry-run`` then
``gc uncommitted --dry-run`` back to back, on the same sample, in the same run.

    python benchmarks/gc_unified.py [--entries 3000] [--repeat 3] [--workdir DIR]

The sample is ``lakewarden.sample.generate`` with object files (uncommitted GC lists the
namespace): the demo's repository by default (seed 7, 3,000 entries), ``--entries N`` for a
larger one; cached in the workdir by its parameters. Each command is a whole subprocess
(interpreter and JVM start included, as a user pays them) on a fresh state dir (no earlier mark
to reuse, no previous uncommitted run: both sides do the full work), with the same rules
(default 7 days, main 30 days), clock (the sample's end + 1 day) and --min-age (24h). Prints the
wall times (median of --repeat), the ratio unified / (committed + uncommitted) (target <= 0.7x),
and the marked counts (the unified run must mark the sum of the two: MISMATCH otherwise, exit 1).
Figures, not assertions about time.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ProcessRun, child_env, lakewarden_command, median, print_java, run_measured  # noqa: E402

from lakewarden.sample import SampleConfig, generate  # noqa: E402

RULES = {"default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 30}]}
TARGET_RATIO = 0.7


def _marked(report: Path) -> int:
    with open(report / "addresses.csv", newline="", encoding="utf-8") as handle:
        return sum(1 for _ in csv.DictReader(handle))


def _run(label: str, command: list[str], report: Path) -> tuple[ProcessRun, int]:
    run = run_measured(command, env=child_env())
    if run.returncode != 0:
        tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-15:])
        raise SystemExit(f"{label} failed (exit {run.returncode}) after {run.seconds:.1f} s:\n{tail}")
    return run, _marked(report)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=3000, help="range rows of the sample (default 3000: the demo's)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "lakewarden-bench-gc-unified")
    args = parser.parse_args(argv)
    print_java()  # the runtime both sides of the ratio run on

    sample_dir = args.workdir / f"sample-{args.entries}-seed7"
    marker = sample_dir / "bench-sample.json"
    if marker.is_file():
        cached = json.loads(marker.read_text())
        snapshot, end = Path(cached["snapshot"]), cached["end"]
    else:
        if sample_dir.exists():
            shutil.rmtree(sample_dir)
        sample = generate(sample_dir, SampleConfig(seed=7, entries=args.entries))
        snapshot, end = sample.snapshot_dir, sample.end.isoformat()
        marker.write_text(json.dumps({"snapshot": str(snapshot), "end": end}))
    from datetime import datetime

    now = (datetime.fromisoformat(end) + timedelta(days=1)).isoformat().replace("+00:00", "Z")
    rules = args.workdir / "rules.json"
    rules.write_text(json.dumps(RULES))

    separate: list[float] = []
    unified: list[float] = []
    counts: tuple[int, int, int] = (0, 0, 0)
    for attempt in range(args.repeat):
        scratch = Path(tempfile.mkdtemp(prefix="run-", dir=args.workdir))
        base = ["--snapshot", str(snapshot), "--now", now, "--dry-run"]
        committed, n_committed = _run("gc committed", [*lakewarden_command(), "gc", "committed", *base, "--rules", str(rules),
                                      "--state", str(scratch / "s1"), "--report", str(scratch / "committed")], scratch / "committed")
        uncommitted, n_uncommitted = _run("gc uncommitted", [*lakewarden_command(), "gc", "uncommitted", *base,
                                          "--state", str(scratch / "s1"), "--report", str(scratch / "uncommitted")], scratch / "uncommitted")
        both, n_both = _run("gc", [*lakewarden_command(), "gc", *base, "--rules", str(rules), "--state", str(scratch / "s2"),
                            "--report", str(scratch / "gc")], scratch / "gc")
        separate.append(committed.seconds + uncommitted.seconds)
        unified.append(both.seconds)
        counts = (n_committed, n_uncommitted, n_both)
        print(f"run {attempt + 1}: gc committed {committed.seconds:.1f} s + gc uncommitted {uncommitted.seconds:.1f} s "
              f"= {separate[-1]:.1f} s; gc {both.seconds:.1f} s; ratio {both.seconds / separate[-1]:.2f}x", flush=True)
        shutil.rmtree(scratch, ignore_errors=True)
    ratio = median(unified) / median(separate)
    print(f"sample: {args.entries} entries ({snapshot})")
    print(f"gc committed + gc uncommitted (back to back): median {median(separate):.1f} s")
    print(f"gc (one run):                                 median {median(unified):.1f} s")
    print(f"ratio: {ratio:.2f}x (target <= {TARGET_RATIO}x) {'ok' if ratio <= TARGET_RATIO else 'ABOVE TARGET'}")
    print(f"marked: committed {counts[0]} + uncommitted {counts[1]} = {counts[0] + counts[1]}; gc {counts[2]}")
    if counts[0] + counts[1] != counts[2]:
        print("MISMATCH: the unified run must mark the union of the two runs")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
