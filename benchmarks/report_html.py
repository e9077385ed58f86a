"""Benchmark: what ``report.html`` costs at 1M range entries (issue 18: "reports from aggregates").

    python benchmarks/report_html.py [--entries 1000000] [--repeat 5] [--workdir DIR] [--days 7]

Generates (or reuses, cached in the workdir by its parameters) the benchmark repository
(``common.bench_sample``: 90 days, Parquet, slots 64, seed 1), runs one
``lakewarden gc committed --dry-run`` on it (the report directory is cached too: a job run
costs about a minute) and prints:

* the seconds the job spent computing ``figures.json`` with Spark in its mark session (as the
  file records them);
* in that run, from ``addresses.csv`` written to ``report.html`` written, and from the final
  ``summary.json`` to ``report.html`` (file times: the page's share of the run's end);
* a re-render, as a sweep does when it finishes: ``write_report_html`` in this process (median
  of --repeat), and as a whole fresh interpreter (import included, as a one-off command pays it).

``--days`` is the GC rules' retention for every branch (default 7, main 30 as in
``committed_gc.py``); a smaller number marks more. Figures, not assertions about time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_sample, child_env, lakewarden_command, median, print_java, sample_dir  # noqa: E402

from lakewarden.reports.directory import REPORT_HTML  # noqa: E402
from lakewarden.reports.page import write_report_html  # noqa: E402


def rules_for(days: int) -> dict:
    if days == 7:
        return {"default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 30}]}
    return {"default_retention_days": days, "branches": []}


def report_for(workdir: Path, entries: int, slots: int, seed: int, days: int) -> tuple[Path, bool]:
    """The report directory of one committed GC dry run on the sample (cached by parameters),
    and whether this call ran the job (False: an earlier run's report, reused)."""
    sample = bench_sample(sample_dir(workdir, entries=entries, slots=slots, seed=seed), entries=entries, slots=slots, seed=seed)
    run = workdir / f"report-html-{entries}-slots{slots}-seed{seed}-days{days}"
    report = run / "report"
    if (report / "figures.json").is_file() and (report / REPORT_HTML).is_file():
        return report, False
    if run.exists():
        shutil.rmtree(run)
    run.mkdir(parents=True)
    rules = run / "rules.json"
    rules.write_text(json.dumps(rules_for(days)) + "\n")
    now = (sample.end + timedelta(days=1)).isoformat().replace("+00:00", "Z")
    command = [*lakewarden_command(), "gc", "committed", "--snapshot", str(sample.snapshot_dir), "--rules", str(rules),
               "--now", now, "--dry-run", "--state", str(run / "state"), "--report", str(report)]
    print(f"running {' '.join(command[-12:])} ...", flush=True)
    started = time.perf_counter()
    done = subprocess.run(command, env=child_env(), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"lakewarden gc committed failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    print(f"  the job ran {time.perf_counter() - started:.1f} s (not counted)", flush=True)
    return report, True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000, help="range entries to generate (default 1000000)")
    parser.add_argument("--slots", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--days", type=int, default=7, help="retention days of every branch (default 7, main 30)")
    parser.add_argument("--repeat", type=int, default=5, help="re-renders to take the median of (default 5)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "lakewarden-bench")
    args = parser.parse_args(argv)
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    print_java()  # the runtime of the run whose report is measured
    report, fresh = report_for(workdir, args.entries, args.slots, args.seed, args.days)
    summary = json.loads((report / "summary.json").read_text())
    figures = json.loads((report / "figures.json").read_text())
    mtime = {name: (report / name).stat().st_mtime for name in ("addresses.csv", "summary.json", REPORT_HTML)}
    print(f"== {report}: {summary['num_marked']:,} marked of {args.entries:,} entries; figures.json "
          f"{(report / 'figures.json').stat().st_size:,} bytes")
    print(f"  figures (Spark, in the mark session)        {figures.get('seconds', float('nan')):8.2f} s")
    if fresh:
        print(f"  in the run: addresses.csv -> report.html    {mtime[REPORT_HTML] - mtime['addresses.csv']:8.2f} s  (figures included)")
        print(f"  in the run: summary.json  -> report.html    {mtime[REPORT_HTML] - mtime['summary.json']:8.2f} s")
    else:
        # an earlier invocation's re-renders rewrote report.html: its file times say nothing of the run
        print("  in the run: not measured (the report of an earlier run, reused; delete it to measure)")

    seconds = []
    for _ in range(max(1, args.repeat)):
        started = time.perf_counter()
        if write_report_html(report) is None:
            raise SystemExit("report.html was not written (see the warning above)")
        seconds.append(time.perf_counter() - started)
    print(f"  re-render in this process (median of {len(seconds)})   {median(seconds):8.3f} s")
    script = f"from lakewarden.reports.page import write_report_html; assert write_report_html({str(report)!r})"
    env = child_env()  # this checkout's python/ first
    whole = []
    for _ in range(max(1, args.repeat)):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", script], env=env, check=True)
        whole.append(time.perf_counter() - started)
    print(f"  re-render as a fresh interpreter (median)   {median(whole):8.3f} s  (target <= 1 s)")
    print(f"  page: {report / REPORT_HTML} ({(report / REPORT_HTML).stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
