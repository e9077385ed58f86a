"""The benchmark harness works, and its baseline is a correct reference.

``benchmarks/plain_pyspark_committed_gc.py`` is written apart from lakewarden's code; if it
marked a different set than ``lakewarden gc committed``, every ratio the committed-GC benchmark
prints would compare unequal work. So on a small generated sample both do their work (the
baseline's ``count_marked``, the job through lakewarden's API) and must mark the same number of
addresses (and not none) from the same active commits. They run on this process's session, not
as the benchmark's two processes: two JVMs started side by side for this check were 36-71 s of
the suite on 2 cores. The harness's measuring runner is tested on processes of its own below.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from benchmark_modules import load_benchmark
import report_files

# the baseline's check runs on a session: scripts/test.sh's second pytest process's own, as the
# module's other tests (no session) run in that process too (conftest.py)
pytestmark = pytest.mark.second_process



def test_bench_sample_is_cached_by_its_parameters(tmp_path: Path) -> None:
    common = load_benchmark("common")
    first = common.bench_sample(tmp_path / "s", entries=2_000, slots=16, seed=3)
    commits = first.snapshot_dir / "commits.parquet"
    written = commits.stat().st_mtime_ns
    again = common.bench_sample(tmp_path / "s", entries=2_000, slots=16, seed=3)
    assert again == first
    assert commits.stat().st_mtime_ns == written  # reused, not generated again
    other = common.bench_sample(tmp_path / "s", entries=2_000, slots=16, seed=4)
    assert other.range_rows > 0 and other != first  # other parameters: generated afresh
    assert json.loads((tmp_path / "s" / common.CACHE_FILE).read_text())["config"]["seed"] == "4"


def test_snapshot_check_benchmark_runs(tmp_path: Path, capsys) -> None:
    assert load_benchmark("snapshot_check").main(["--entries", "2000", "--repeat", "1", "--workdir", str(tmp_path), "--jsonl"]) == 0
    out = capsys.readouterr().out
    assert out.count("check_snapshot memoised") == 2 and "conversion cached, no memo" in out


def test_tree_rss_counts_a_process_and_its_children() -> None:
    common = load_benchmark("common")
    run = common.run_measured(
        [sys.executable, "-c",
         "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import time; b = bytes(1) * (200 * 2**20); time.sleep(1.5)'])"],
        interval=0.1,
    )
    assert run.returncode == 0
    assert run.peak_rss_mb >= 200  # the grandchild's 200 MB are counted
    assert run.seconds >= 1.5


def test_tree_memory_counts_pages_a_fork_shares_with_its_parent_once() -> None:
    """A forked child before any exec shares its parent's pages (as a JVM's child does until
    its command's exec): the tree holds 200 MB, not twice that."""
    common = load_benchmark("common")
    script = (
        "import os, time; b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
        "pid = os.fork()\n"
        "if pid == 0:\n    time.sleep(2.0); os._exit(0)\n"
        "os.waitpid(pid, 0)"
    )
    run = common.run_measured([sys.executable, "-c", script], interval=0.1)
    assert run.returncode == 0
    assert 200 <= run.peak_rss_mb < 330, run.peak_rss_mb  # summed RSS would be 400+


def test_plain_pyspark_baseline_marks_what_lakewarden_marks(spark, tmp_path: Path) -> None:
    from lakewarden.api import CommittedGcOptions, RunOptions, gc_committed

    committed_gc = load_benchmark("committed_gc")
    baseline = load_benchmark("plain_pyspark_committed_gc")
    sample = committed_gc.bench_sample(tmp_path / "sample", entries=3_000, slots=64, seed=1)
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(committed_gc.RULES))
    now = sample.end + timedelta(days=1)
    # a session of its own: the baseline's tables are temporary views named commits, ranges, ...
    counted = baseline.count_marked(
        spark.newSession(), sample.snapshot_dir, now, committed_gc.DEFAULT_DAYS, committed_gc.BRANCH_DAYS
    )
    run = tmp_path / "run"
    outcome = gc_committed(RunOptions(snapshot=sample.snapshot_dir, now=now, dry_run=True, state=run / "state", report=run / "report"),
                           CommittedGcOptions(rules=rules))
    assert outcome.num_marked > 0  # the sample expires commits: an empty answer would compare nothing
    assert counted.marked == outcome.num_marked
    summary = report_files.summary(run / "report")
    assert (counted.active, counted.commits) == (summary["active_commits"], summary["commits"])
    # the suite's embedded session is watched (lakewarden.runtime.old_generation), and a run of
    # 3,000 entries promotes nowhere near the floor: no full collection asked for
    assert summary["full_collections"] == 0 and summary["spark_jobs"] > 0


def test_noop_benchmark_loads_and_refuses_a_bad_repeat(capsys) -> None:
    """noop.py runs minutes of jobs, so the suite only loads it (its imports from committed_gc,
    common and lakewarden resolve) and checks it refuses a repeat count of 0 as usage."""
    noop = load_benchmark("noop")
    with pytest.raises(SystemExit) as exited:
        noop.main(["--repeat", "0"])
    assert exited.value.code == 2
    assert "--repeat must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [(["--repeat", "0"], "--repeat must be at least 1"), (["--one-process", "--engine"], "choose one"),
     (["--no-warm-up"], "use it with --engine")],
)
def test_lifecycle_benchmark_refuses_bad_usage_before_any_run(tmp_path: Path, capsys, arguments: list[str], message: str) -> None:
    """lifecycle.py runs minutes of jobs, so the suite checks only that a repeat count of 0, or
    two warm modes at once, is usage (exit 2) refused before the sample is generated or anything runs."""
    lifecycle = load_benchmark("lifecycle")
    with pytest.raises(SystemExit) as exited:
        lifecycle.main([*arguments, "--workdir", str(tmp_path / "bench")])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "bench").exists()


@pytest.mark.parametrize("warm_up", [True, False])
def test_lifecycle_benchmark_with_an_engine_hands_every_command_to_it(tmp_path: Path, monkeypatch, warm_up: bool) -> None:
    """--engine: the engine is started once, every run is the same command with LAKEWARDEN_ENGINE
    naming its socket, and the engine is stopped at the end (here, commands recorded, not run)."""
    lifecycle = load_benchmark("lifecycle")
    commands: list[tuple[list[str], dict[str, str]]] = []

    def measured(command: list[str], env: dict[str, str] | None = None) -> object:
        commands.append((command, dict(env or {})))
        if "--report" in command:  # a run: the summary the benchmark reads after it
            report = Path(command[command.index("--report") + 1])
            report.mkdir(parents=True)
            (report / "summary.json").write_text(json.dumps({"ranges_read": 0, "num_marked": 0}))
        return lifecycle.ProcessRun(returncode=0, seconds=1.0, peak_rss_mb=1.0, stdout="", stderr="")

    monkeypatch.setattr(lifecycle, "run_measured", measured)
    common = sys.modules["common"]
    monkeypatch.setattr(common, "run_measured", measured)
    with lifecycle.engine(tmp_path, warm_up=warm_up) as socket_path:
        run, summary = lifecycle.run_lifecycle(tmp_path / "s", tmp_path / "p.json", datetime(2026, 1, 1, tzinfo=timezone.utc),
                                               tmp_path / "state", tmp_path / "report")
    (start, _), (job, job_env), (stop, _) = commands
    assert "start" in start and str(socket_path) in start
    assert ("--no-warm-up" in start) == (not warm_up) and ("--warm-up" in start) == warm_up
    assert job_env["LAKEWARDEN_ENGINE"] == str(socket_path) and "lifecycle" in job
    assert "stop" in stop and str(socket_path) in stop
    assert common.ENGINE["socket"] is None and "LAKEWARDEN_ENGINE" not in common.child_env()
    assert summary == {"ranges_read": 0, "num_marked": 0}
    # a command the engine did not take ran in its own process: its time is no engine run's
    refused = "lakewarden: LAKEWARDEN_ENGINE: the engine at S did not take this run (...): running in this process\n"
    common.check_handed_to_engine(lifecycle.ProcessRun(0, 1.0, 1.0, "", refused))  # no engine: nothing to check
    common.ENGINE["socket"] = socket_path
    try:
        with pytest.raises(SystemExit, match="not handed to the engine"):
            common.check_handed_to_engine(lifecycle.ProcessRun(0, 1.0, 1.0, "", refused))
    finally:
        common.ENGINE["socket"] = None


def test_a_run_in_this_process_is_timed_with_its_status_and_this_process_trees_peak() -> None:
    """lifecycle.py --one-process times each Python API call in its own process: the call's exit
    status and wall time, and the peak RSS of this process's tree meanwhile; an error is raised."""
    import os
    import time

    common = load_benchmark("common")
    before = common.tree_rss_mb(os.getpid())
    held: list[bytearray] = []

    def call() -> int:
        held.append(bytearray(b"x" * (64 << 20)))  # 64 MB written, so resident while the poll looks
        time.sleep(0.5)
        return 3

    run = common.run_in_process(call, interval=0.05)
    assert run.returncode == 3 and run.seconds >= 0.5
    assert run.peak_rss_mb >= before + 48, (before, run.peak_rss_mb)
    with pytest.raises(ValueError, match="bad"):
        common.run_in_process(lambda: (_ for _ in ()).throw(ValueError("bad")))


def test_an_incremental_share_is_undefined_when_the_full_run_costs_no_more_than_the_noop() -> None:
    common = load_benchmark("common")
    assert common.incremental_share(48.2, 182.6, 23.9) == pytest.approx((48.2 - 23.9) / (182.6 - 23.9))
    assert "15.3%" in common.describe_share(0.1529, 0.10) and "NOT met" in common.describe_share(0.1529, 0.10)
    assert common.describe_share(0.05, 0.10).endswith("(target <= 10%: met)")


def test_a_large_samples_noop_ratio_is_for_reference_and_its_ranges_read_are_judged() -> None:
    """The issue holds a no-op to 1.5x the plain process on the demo's sample only (noop.py): a
    large sample's ratio is printed without a verdict; the ranges it read always get one."""
    common = load_benchmark("common")
    line = common.describe_noop(29.4, 8.8, 0)
    assert "3.34x" in line and "for reference" in line and "NOT met" not in line.split(";")[0]
    assert line.endswith("no-op read 0 ranges (target 0: met)")
    assert common.describe_noop(10.0, 8.0, 3).endswith("no-op read 3 ranges (target 0: NOT met)")
    undefined = common.describe_share(common.incremental_share(32.8, 31.8, 33.2), 0.20)
    assert "undefined" in undefined and "NOT met" in undefined and "nan" not in undefined


def test_an_incremental_runs_phases_minus_a_noops_say_which_steps_it_pays_for() -> None:
    """A run's wall time by phase (its summary's phase_seconds, the rest of the process before
    them), and one run's phases minus another's, a phase the other did not run counting 0."""
    common = load_benchmark("common")
    incremental = common.phases_of(19.0, {"phase_seconds": [["before_decision", 7.0], ["references", 2.25], ["marks", 1.5]]}, rest="outside")
    noop = common.phases_of(15.0, {"phase_seconds": {"marks": 1.0, "before_decision": 6.75}}, rest="outside")  # an earlier version's object
    assert incremental == {"outside": 8.25, "before_decision": 7.0, "references": 2.25, "marks": 1.5}
    assert common.phases_of(9.0, {}) == {"process and load": 9.0}  # a summary without phases
    difference = common.phase_difference(incremental, noop)
    assert difference == {"outside": 1.0, "before_decision": 0.25, "references": 2.25, "marks": 0.5}
    assert sum(difference.values()) == pytest.approx(19.0 - 15.0)
    assert common.describe_phases(difference, signed=True) == "  = outside +1.0 s, before decision +0.2 s, references +2.2 s, marks +0.5 s"
    assert common.describe_phases({"report_and_outputs": 3.94}) == "  = report and outputs 3.9 s"
    medians = common.median_phases([incremental, noop, {"outside": 9.0, "marks": 2.0}])
    assert medians == {"outside": 8.25, "before_decision": 6.75, "references": 0.0, "marks": 1.5}
