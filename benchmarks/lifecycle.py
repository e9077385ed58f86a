"""Benchmark: ``lakewarden lifecycle`` full run vs. an incremental run after +1% commits.

    python benchmarks/lifecycle.py --entries 1000000 [--growth 0.01] [--workdir DIR]

Takes the benchmark repository (``common.bench_sample``, cached in the workdir) and copies its
snapshot, pointed at storage of its own (``move_storage``: the runs write their outputs under
the namespace, and the cached sample is never modified), then runs the CLI, each run a whole
subprocess (interpreter, JVM and dbt start included, as a user pays them), on one --state
directory:

1. ``lakewarden lifecycle --snapshot S --policy P --now T`` (no --dry-run: it marks and sweeps;
   the sample has no object files, and a missing file counts as deleted, so this is "the last
   run that deleted" an incremental run starts from);
2. append 1% more commits on main (each adding a new range of fresh entries; ``ranges`` becomes a
   folder, as docs/contract.md §2 allows) and move the clock a day;
3. the same command again: the incremental run;
4. the same command once more, same snapshot, state and clock: the no-op run (nothing changed);
5. a plain PySpark process (session start and one trivial job), the floor a no-op is held to.

Prints the wall times, what each run read (from its report: ranges read, new and crossed), the
ratio incremental / full, the issue's ratio (incremental - noop) / (full - noop) (target <=
10%) and noop / plain PySpark (for reference: the issue's 1.5x is on the demo's sample, noop.py;
the no-op run must read no range). The fixed cost of a process (JVM start, dbt parse) is in both figures, since
a user pays it; each run's own elapsed time from its report is printed beside it, and under
it the run's time by phase (the mark's phases from its summary's ``phase_seconds``, the rest of
the process as "process, load and sweep"); then the incremental run's phases minus the no-op's
(with ``--repeat``, of the per-phase medians too): the steps the ratio's numerator is made of.
Figures, not assertions.

``--repeat N``: steps 3 and 4 (incremental, no-op) N times, each time from a copy of the state
the full run left, on the same grown snapshot and clocks; the issue's ratio is then printed for
every pair and from the medians (the full run once: it is the denominator's large term). The
numerator is the difference of two runs of ~15-30 s, and one process's wall time varies by
1-2 s on two cores: at 8.45M entries the same code gave 7.1%, 9.3% and 11.2% in single runs.
Every repeat must read the same ranges and mark the same count as the first pair, the no-op
none (exit 1 if not).

``--one-process``: every run (full, incremental, no-op, the repeats) is a call of the Python
API's ``lifecycle`` in this benchmark's own process (docs/python-api.md) instead of a command,
after one full run on a state dir of its own that starts the JVM and is not counted. Every
measured run, the full one included, finds the session, dbt's manifest and the JVM's compiled
code warm, as a long-lived caller running the job again and again does (a notebook, a
service). No plain PySpark process is run: with no process started per run, it is no floor for
these.

``--engine``: every run is the command, as without it, run with ``LAKEWARDEN_ENGINE`` naming an
engine this benchmark starts (``lakewarden engine start``, docs/operations.md) and stops at the
end: the command hands its run to the engine's warm driver. The engine's start and one full run
on a state dir of its own (the first run of an engine compiles its code) are not counted, as
with ``--one-process``. Peak RSS is then the command's own, not the engine's. The engine warms
up before it takes a run (``engine start --warm-up``); ``--no-warm-up`` starts it without.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    ProcessRun,
    add_engine_options,
    bench_sample,
    check_engine_options,
    child_env,
    describe_noop,
    describe_phases,
    engine,
    describe_share,
    incremental_share,
    keep_class_archive,
    lakewarden_command,
    median,
    median_phases,
    phase_difference,
    phases_of,
    plain_pyspark_run,
    print_java,
    run_in_process,
    run_measured,
    sample_dir,
)

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from lakewarden.sample import TABLE_NAMES, SampleRepository  # noqa: E402
from lakewarden.snapshot import arrow_schemas  # noqa: E402

POLICY = {
    "events": {"prefix": "events/", "days": 5, "branch_days": {"main": 3}},
    "logs": {"prefix": "logs/", "days": 2},
    "raw": {"prefix": "raw/", "days": 10},
}
TARGET = 0.10


def append_commits(snapshot_dir: Path, count: int, entries: int, start: datetime, span: timedelta) -> None:
    """Add ``count`` commits on main, each listing main's ranges plus a new range of fresh entries
    (``entries`` in all), dated from ``start`` over ``span``. The ranges table becomes a folder
    (the original file plus one new part), as docs/contract.md §2 allows."""
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
    if folder.is_file():
        original = snapshot_dir / "ranges-original.parquet"
        folder.rename(original)
        folder.mkdir()
        original.rename(folder / "part-00000.parquet")
    pq.write_table(pa.table(new_entries, schema=schemas["ranges"]), folder / f"part-appended-{len(list(folder.iterdir())):05d}.parquet")


def move_storage(snapshot_dir: Path, sample_root: Path, new_root: Path) -> None:
    """Point the copied snapshot at storage of its own: ``repository.json``'s namespace and every
    FULL address under the cached sample's directory (``sample_root``) move to ``new_root``, the
    same paths below it. Each run writes its outputs under its namespace (``_lakefs/retention/lc``):
    without this they would accumulate in the cached sample, which the runs read. Addresses
    keep their place relative to the namespace (and FULL ones outside it stay outside), so the
    runs mark what they marked before. The ranges keep their row groups (one per range, which
    the runs' Parquet reads skip by), rewritten one group at a time."""
    old_prefix, new_prefix = sample_root.resolve().as_uri() + "/", new_root.resolve().as_uri() + "/"
    document = json.loads((snapshot_dir / "repository.json").read_text())
    namespace = document["storage_namespace"]
    if not namespace.startswith(old_prefix):
        raise SystemExit(f"{snapshot_dir / 'repository.json'}: storage_namespace {namespace!r} is not under {old_prefix!r}")
    document["storage_namespace"] = new_prefix + namespace[len(old_prefix):]
    (snapshot_dir / "repository.json").write_text(json.dumps(document, indent=1) + "\n")

    def moved(table: pa.Table) -> pa.Table:
        import pyarrow.compute as pc

        address = table["address"]
        under = pc.fill_null(pc.starts_with(address, old_prefix), False)
        rewritten = pc.binary_join_element_wise(new_prefix, pc.utf8_slice_codeunits(address, len(old_prefix)), "")
        return table.set_column(table.schema.get_field_index("address"), "address", pc.if_else(under, rewritten, address))

    for name in ("ranges.parquet", "staged.parquet"):
        path = snapshot_dir / name
        if not path.is_file():
            continue
        source = pq.ParquetFile(path)
        target = path.with_name(f".{name}.moving")
        with pq.ParquetWriter(target, source.schema_arrow) as writer:
            for group in range(source.metadata.num_row_groups):
                writer.write_table(moved(source.read_row_group(group)))
        source.close()
        target.replace(path)


def _rfc3339(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


#: ``--one-process``: every run is a Python API call in this process (run_lifecycle)
ONE_PROCESS = {"on": False}
def run_lifecycle(snapshot: Path, policy: Path, now: datetime, state: Path, report: Path) -> tuple[ProcessRun, dict]:
    """One run: the command as a process of its own, or with ``--one-process`` the Python API's
    ``lifecycle`` call in this process (docs/python-api.md), the same options either way."""
    if ONE_PROCESS["on"]:
        from lakewarden.api import LifecycleOptions, RunOptions, lifecycle

        def call() -> int:
            options = RunOptions(snapshot=snapshot, now=now, state=state, report=report)
            return lifecycle(options, LifecycleOptions(policy=policy)).exit_status

        run = run_in_process(call)  # an error raises here, with its traceback
    else:
        command = [*lakewarden_command(), "lifecycle", "--snapshot", str(snapshot), "--policy", str(policy),
                   "--now", _rfc3339(now), "--state", str(state), "--report", str(report)]
        run = run_measured(command, env=child_env())  # with --engine, handed to it (common.engine)
    if run.returncode != 0:
        tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-15:])
        raise SystemExit(f"lakewarden lifecycle failed (exit {run.returncode}):\n{tail}")
    return run, json.loads((report / "summary.json").read_text())


#: a run's time outside its mark's phases (the summary's phase_seconds): interpreter, JVM and
#: dbt start, the snapshot's check and load, and the sweep with its ledger (no run is a dry run)
OUTSIDE_THE_MARK = "process, load and sweep"


def _phases(run: ProcessRun, summary: dict) -> dict[str, float]:
    return phases_of(run.seconds, summary, rest=OUTSIDE_THE_MARK)


def _elapsed(summary: dict) -> str:
    try:
        started = datetime.fromisoformat(summary["started_at"].replace("Z", "+00:00"))
        finished = datetime.fromisoformat(summary["finished_at"].replace("Z", "+00:00"))
    except (KeyError, TypeError, ValueError):
        return "?"
    return f"{(finished - started).total_seconds():.1f} s"


def _read(summary: dict) -> str:
    def n(name: str) -> str:
        value = summary.get(name)
        return f"{value:,}" if isinstance(value, int) else "?"

    return (f"read {n('potential_commits')} of {n('commits')} commits potential, {n('potential_ranges')} of {n('ranges')} "
            f"ranges potential, {n('ranges_read')} ranges read ({n('ranges_new')} new, {n('ranges_crossed')} crossed); "
            f"{n('num_marked')} marked; report's own elapsed {_elapsed(summary)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000, help="range entries to generate (default 1M)")
    parser.add_argument("--slots", type=int, default=64, help="ranges per metarange (default 64)")
    parser.add_argument("--growth", type=float, default=0.01, help="commits added before the incremental run (default 0.01 = 1%%)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1, help="incremental and no-op runs this many times (default 1; medians)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "lakewarden-bench",
                        help="samples are cached here by their parameters (default: $TMPDIR/lakewarden-bench)")
    parser.add_argument("--one-process", action="store_true",
                        help="every run a Python API call in this one process, after an uncounted full run that starts the JVM")
    add_engine_options(parser, uncounted="full run")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    check_engine_options(parser, args)
    if args.one_process and args.engine:
        parser.error("--one-process and --engine are two ways to run warm: choose one")
    ONE_PROCESS["on"] = args.one_process
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()
    sample = bench_sample(sample_dir(workdir, entries=args.entries, slots=args.slots, seed=args.seed),
                          entries=args.entries, slots=args.slots, seed=args.seed)
    prepared = time.perf_counter() - started
    run_dir = workdir / "lifecycle-run"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    snapshot = run_dir / "snapshot"
    shutil.copytree(sample.snapshot_dir, snapshot)  # a copy: appending must not touch the cached sample
    # nor must the runs' outputs: the copy gets storage of its own (no object files, as the sample)
    move_storage(snapshot, sample_dir(workdir, entries=args.entries, slots=args.slots, seed=args.seed), run_dir / "sample")
    policy = run_dir / "policy.json"
    policy.write_text(json.dumps(POLICY, indent=1) + "\n")
    state = run_dir / "state"
    rows = sample.range_rows
    print(f"entries (range rows)     {rows:>14,d}   (sample ready in {prepared:.1f} s, not counted)", flush=True)

    first_now = sample.end + timedelta(hours=1)
    print_java()  # the runtime both sides of every ratio run on
    keep_class_archive()  # no measured process writes the JVM class archive (common.keep_class_archive)
    if args.engine:
        with engine(run_dir, warm_up=not args.no_warm_up) as socket_path:
            return _measured_runs(args, sample, run_dir, snapshot, policy, state, first_now, engine_socket=socket_path)
    return _measured_runs(args, sample, run_dir, snapshot, policy, state, first_now)


def _measured_runs(
    args: argparse.Namespace, sample: SampleRepository, run_dir: Path, snapshot: Path, policy: Path, state: Path,
    first_now: datetime, *, engine_socket: Path | None = None,
) -> int:
    """The runs (steps 1-5) and their figures."""
    rows = sample.range_rows
    if args.one_process or engine_socket is not None:
        # the full run too must find the process warm, as the later ones do: one full run first,
        # on a state dir of its own, not counted (it writes its outputs under the same namespace)
        warm_up, _ = run_lifecycle(snapshot, policy, first_now, run_dir / "warm-up-state", run_dir / "report-warm-up")
        shutil.rmtree(run_dir / "warm-up-state", ignore_errors=True)
        if engine_socket is not None:
            print(f"engine: a first full run compiled the engine's code ({warm_up.seconds:.1f} s, not counted); "
                  f"peak RSS is each command's own", flush=True)
        else:
            print(f"one process: every run a Python API call in this process, after a full run that started the JVM "
                  f"({warm_up.seconds:.1f} s, not counted); peak RSS is the process's so far", flush=True)
    full, full_summary = run_lifecycle(snapshot, policy, first_now, state, run_dir / "report-full")
    print(f"full run                 {full.seconds:>12.1f} s   peak RSS {full.peak_rss_mb:.0f} MB; {_read(full_summary)}", flush=True)
    print(describe_phases(_phases(full, full_summary)))
    after_full = run_dir / "state-after-full"
    if args.repeat > 1:
        shutil.copytree(state, after_full)  # where every repeat's incremental run starts

    added = max(1, math.ceil(sample.commit_count * args.growth))
    appended_entries = max(added, int(rows * args.growth))
    append_commits(snapshot, added, appended_entries, first_now, timedelta(hours=20))
    incremental, inc_summary = run_lifecycle(snapshot, policy, first_now + timedelta(days=1), state, run_dir / "report-incremental")

    ratio = incremental.seconds / full.seconds
    print(f"commits                  {sample.commit_count:>14,d} (+{added} appended, {appended_entries:,} entries)")
    print(f"incremental run          {incremental.seconds:>12.1f} s   peak RSS {incremental.peak_rss_mb:.0f} MB; {_read(inc_summary)}", flush=True)
    print(describe_phases(_phases(incremental, inc_summary)))
    noop, noop_summary = run_lifecycle(snapshot, policy, first_now + timedelta(days=1), state, run_dir / "report-noop")
    print(f"no-op run                {noop.seconds:>12.1f} s   peak RSS {noop.peak_rss_mb:.0f} MB; {_read(noop_summary)}", flush=True)
    print(describe_phases(_phases(noop, noop_summary)))
    share = incremental_share(incremental.seconds, full.seconds, noop.seconds)
    noop_reads = noop_summary.get("ranges_read")
    print(f"ratio incremental / full {ratio:>12.1%}")
    print(f"(incr - noop)/(full - noop) {describe_share(share, TARGET)}")
    # the numerator, step by step: what the incremental run pays for beyond the no-op's
    print("incr - noop by phase" + describe_phases(phase_difference(_phases(incremental, inc_summary), _phases(noop, noop_summary)), signed=True))
    if args.one_process:  # no process started per run: the plain process is no floor for these
        print(f"no-op run read {noop_reads} ranges (target 0: {'met' if noop_reads == 0 else 'NOT met'})")
    else:
        plain = plain_pyspark_run()
        print(f"plain PySpark process    {plain.seconds:>12.1f} s")
        print(f"noop / plain PySpark     {describe_noop(noop.seconds, plain.seconds, noop_reads)}")
    ok = True
    if args.repeat > 1:
        later = first_now + timedelta(days=1)
        ok = _repeats(args.repeat, run_dir, snapshot, policy, later, full, (incremental, inc_summary), (noop, noop_summary))
    shutil.rmtree(state, ignore_errors=True)
    shutil.rmtree(after_full, ignore_errors=True)
    return 0 if ok else 1


def _repeats(
    repeat: int, run_dir: Path, snapshot: Path, policy: Path, now: datetime, full: ProcessRun,
    first_incremental: tuple[ProcessRun, dict], first_noop: tuple[ProcessRun, dict],
) -> bool:
    """Steps 3 and 4 again, ``repeat - 1`` more times, each from a copy of the state the full run
    left. Prints each pair's share and the share of the medians; False when a repeat read other
    ranges or marked another count than the first pair, or its no-op read a range."""
    pairs = [(first_incremental, first_noop)]
    for number in range(2, repeat + 1):
        base = run_dir / "repeats" / str(number)
        state = base / "state"
        shutil.copytree(run_dir / "state-after-full", state)
        incremental = run_lifecycle(snapshot, policy, now, state, base / "report-incremental")
        noop = run_lifecycle(snapshot, policy, now, state, base / "report-noop")
        pairs.append((incremental, noop))
        shutil.rmtree(state, ignore_errors=True)
    (_, first_inc), (_, first_nop) = pairs[0]
    ok = all(
        inc["ranges_read"] == first_inc["ranges_read"] and inc["num_marked"] == first_inc["num_marked"]
        and nop["ranges_read"] == 0 and nop["num_marked"] == first_nop["num_marked"]
        for (_, inc), (_, nop) in pairs
    )
    print(f"repeats ({repeat} of incremental, no-op; seconds, each from the full run's state; full {full.seconds:.1f} s):")
    for number, ((incremental, _), (noop, _)) in enumerate(pairs, 1):
        share = incremental_share(incremental.seconds, full.seconds, noop.seconds)
        print(f"  {number}: {incremental.seconds:6.1f} {noop.seconds:6.1f}   share {describe_share(share, TARGET)}")
    incremental_median = median([incremental.seconds for (incremental, _), _ in pairs])
    noop_median = median([noop.seconds for _, (noop, _) in pairs])
    print(f"medians:   {incremental_median:6.1f} {noop_median:6.1f}")
    by_phase = phase_difference(
        median_phases([_phases(*incremental) for incremental, _ in pairs]), median_phases([_phases(*noop) for _, noop in pairs])
    )
    print(f"incr - noop by phase, medians of {repeat}" + describe_phases(by_phase, signed=True))
    share = incremental_share(incremental_median, full.seconds, noop_median)
    print(f"(incr - noop)/(full - noop), medians of {repeat} {describe_share(share, TARGET)}")
    print("results: " + ("OK" if ok else "MISMATCH: a repeat read other ranges or marked another count, or its no-op read a range"))
    return ok


if __name__ == "__main__":
    raise SystemExit(main())
