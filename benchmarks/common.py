"""What the benchmarks share: one generated repository shape (cached by its parameters, so a
re-run measures instead of regenerating), the subprocess runner that times a whole process
and samples the peak RSS of its process tree (the JVM included), and the import path set-up
that lets ``python benchmarks/<name>.py`` run from a checkout without installing."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, NoReturn, Sequence

ROOT = Path(__file__).resolve().parents[1]
PYTHON_DIR = ROOT / "python"
if str(PYTHON_DIR) not in sys.path and (PYTHON_DIR / "lakewarden").is_dir():
    sys.path.insert(0, str(PYTHON_DIR))  # a checkout: import its lakewarden, not an older install

from lakewarden.runtime.java_runtime import describe_choice, use_java  # noqa: E402
from lakewarden.sample import SampleRepository, generate, large_sample_config  # noqa: E402

# One Java runtime for every JVM of a benchmark, the plain PySpark baselines' included: the one a
# lakewarden job chooses (lakewarden.runtime.java_runtime), set as JAVA_HOME before any starts.
# A plain pyspark process would take the java on PATH, often an older one: the ratios would then
# compare runtimes, not the two programs.
JAVA = use_java()


def print_java() -> None:
    """The runtime this benchmark's JVMs run on (both sides of every ratio), first in its output:
    its figures hold for that runtime (Java 25 ran the three jobs' test modules in 6-10 % fewer
    CPU seconds than Java 17 on the same code)."""
    print(describe_choice(JAVA), flush=True)


CACHE_FILE = "bench-sample.json"  # written last: its presence means the sample is complete


def bench_sample(directory: Path, *, entries: int, slots: int, seed: int) -> SampleRepository:
    """A 90-day sample repository of about ``entries`` range rows, as Parquet, without object files.

    Generating 8M entries takes minutes, so the result is kept: when ``directory`` already
    holds a complete sample made with the same parameters (and the same generator shape), it
    is returned as is; otherwise the directory is cleared and generated again."""
    config = large_sample_config(seed=seed, entries=entries, slots=slots)
    parameters = {name: str(value) for name, value in asdict(config).items()}
    return cached_sample(directory, CACHE_FILE, parameters, lambda target: generate(target, config))


def cached_sample(
    directory: Path, marker_name: str, parameters: dict, make: Callable[[Path], SampleRepository]
) -> SampleRepository:
    """The repository ``make(directory)`` generates, kept: when ``directory`` already holds a
    complete one made with the same ``parameters`` (its marker file, written last, records them),
    it is returned as is; otherwise the directory is cleared and generated again."""
    directory = Path(directory).resolve()
    marker = directory / marker_name
    if marker.is_file():
        cached = json.loads(marker.read_text())
        if cached.get("config") == parameters:
            return _sample_from_json(cached["sample"])
    if directory.exists():
        shutil.rmtree(directory)
    sample = make(directory)
    marker.write_text(json.dumps({"config": parameters, "sample": _sample_to_json(sample)}, indent=1) + "\n")
    return sample


def sample_dir(workdir: Path, *, entries: int, slots: int, seed: int) -> Path:
    """Where a benchmark keeps the sample of these parameters inside its workdir."""
    return Path(workdir) / f"sample-{entries}-slots{slots}-seed{seed}"


def _sample_to_json(sample: SampleRepository) -> dict:
    out = {}
    for field in fields(SampleRepository):
        value = getattr(sample, field.name)
        out[field.name] = value.isoformat() if isinstance(value, datetime) else str(value) if isinstance(value, Path) else value
    return out


def _sample_from_json(data: dict) -> SampleRepository:
    values = dict(data)
    for name in ("snapshot_dir", "namespace_path", "external_path"):
        values[name] = Path(values[name])
    values["end"] = datetime.fromisoformat(values["end"])
    return SampleRepository(**values)


# -- whole-process measurements ---------------------------------------------------------------


@dataclass(frozen=True)
class ProcessRun:
    """One child process, measured from outside: wall time, peak RSS of its process tree."""

    returncode: int
    seconds: float
    peak_rss_mb: float
    stdout: str
    stderr: str


def _children() -> dict[int, list[int]]:
    """parent pid -> child pids, from /proc (Linux)."""
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # the process ended meanwhile
        # the command name (field 2) may hold spaces and parentheses: parse after the last ')'
        parent = int(stat[stat.rindex(b")") + 2 :].split()[1])
        tree.setdefault(parent, []).append(int(entry.name))
    return tree


def _proc_kb(pid: int, file: str, field: bytes) -> int | None:
    """A ``field: N kB`` line of ``/proc/PID/file``; None when the process ended meanwhile or
    the kernel does not say."""
    try:
        with open(f"/proc/{pid}/{file}", "rb") as handle:
            for line in handle:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _rss_kb(pid: int) -> int:
    return _proc_kb(pid, "status", b"VmRSS:") or 0


def _pss_kb(pid: int) -> int | None:
    """Proportional set size: each page shared with other processes counted by its share."""
    return _proc_kb(pid, "smaps_rollup", b"Pss:")


def _exe(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and all its descendants (the JVM a PySpark driver starts
    is a child of the Python process), in MB.

    A child that runs its parent's executable is a fork sharing its parent's pages (a JVM
    starting a command shows such a child, with the JVM's whole RSS, until the command's exec;
    so do forked Python workers). Such a parent and child count their proportional set size
    instead of RSS, so a shared page counts once. Summing RSS made the JVM of a lifecycle run
    count twice now and then: peaks of 4.7-6.0 GB against 2.3-3.4 GB for the same run (a
    child named after the JVM thread that forked it, ``ResultQueryStag``, held 2,277 MB beside
    the JVM's 2,277 MB). Reading PSS costs 20-60 ms for a 2 GB JVM, so only such pairs pay it."""
    tree = _children()
    members, stack = [], [pid]
    while stack:
        current = stack.pop()
        members.append(current)
        stack.extend(tree.get(current, ()))
    executables = {member: _exe(member) for member in members}
    shared = {
        member
        for parent in members
        for child in tree.get(parent, ())
        if executables[parent] is not None and executables.get(child) == executables[parent]
        for member in (parent, child)
    }
    total = 0
    for member in members:
        pss = _pss_kb(member) if member in shared else None
        total += _rss_kb(member) if pss is None else pss
    return total / 1024


def run_measured(command: Sequence[str], *, env: dict[str, str] | None = None, interval: float = 0.2) -> ProcessRun:
    """Run ``command`` to completion; time it (wall clock, interpreter and JVM start included)
    and poll the RSS of its whole process tree every ``interval`` seconds for the peak. With an
    engine running (``--engine``), a command it did not take stops the benchmark
    (:func:`check_handed_to_engine`)."""
    environment = dict(os.environ if env is None else env)
    started = time.perf_counter()
    with subprocess.Popen(
        list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment, text=True
    ) as process:
        out: list[str] = []
        err: list[str] = []
        readers = [
            threading.Thread(target=lambda: out.append(process.stdout.read()), daemon=True),  # type: ignore[union-attr]
            threading.Thread(target=lambda: err.append(process.stderr.read()), daemon=True),  # type: ignore[union-attr]
        ]
        for reader in readers:
            reader.start()
        peak = 0.0
        while process.poll() is None:
            peak = max(peak, tree_rss_mb(process.pid))
            time.sleep(interval)
        seconds = time.perf_counter() - started
        for reader in readers:
            reader.join()
    run = ProcessRun(process.returncode, seconds, peak, "".join(out), "".join(err))
    check_handed_to_engine(run)
    return run


def run_in_process(call: "Callable[[], int]", *, interval: float = 0.2) -> ProcessRun:
    """Time ``call`` (a job run through the Python API, in this process: its exit status) and
    poll this process tree's RSS meanwhile. The tree holds the session's JVM, which outlives the
    call: the peak is this process's so far, not the call's own."""
    peak = [tree_rss_mb(os.getpid())]
    done = threading.Event()

    def poll() -> None:
        while not done.wait(interval):
            peak[0] = max(peak[0], tree_rss_mb(os.getpid()))

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    started = time.perf_counter()
    try:
        returncode = call()
    finally:
        seconds = time.perf_counter() - started
        done.set()
        poller.join()
    return ProcessRun(returncode, seconds, max(peak[0], tree_rss_mb(os.getpid())), "", "")


def fail(label: str, run: ProcessRun) -> NoReturn:
    """Stop the benchmark: ``label`` failed, with the last lines of its output."""
    tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-15:])
    raise SystemExit(f"{label} failed (exit {run.returncode}) after {run.seconds:.1f} s:\n{tail}")


def child_env() -> dict[str, str]:
    """The environment for child processes: this checkout's ``python/`` first on PYTHONPATH,
    so a ``lakewarden`` console script and ``python benchmarks/...`` import the same code; and
    ``LAKEWARDEN_ENGINE`` naming the engine a benchmark's ``--engine`` started (:func:`engine`)."""
    env = {key: value for key, value in os.environ.items() if key != "LAKEWARDEN_ENGINE"}
    if (PYTHON_DIR / "lakewarden").is_dir():
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PYTHON_DIR), env.get("PYTHONPATH", "")) if p)
    if ENGINE["socket"] is not None:
        env["LAKEWARDEN_ENGINE"] = str(ENGINE["socket"])
    return env


#: ``--engine``: the socket of the engine every command a benchmark runs is handed to
ENGINE: dict[str, Path | None] = {"socket": None}


def check_handed_to_engine(run: ProcessRun) -> None:
    """With an engine (:func:`engine`), stop when a command ran in its own process instead (the
    engine refused it or was gone: its one line on stderr): its time is not an engine run's."""
    if ENGINE["socket"] is None:
        return
    refused = [line for line in run.stderr.splitlines() if line.startswith("lakewarden: LAKEWARDEN_ENGINE:")]
    if refused:
        raise SystemExit(f"a run was not handed to the engine, so its time is not an engine run's: {refused[0]}")


def add_engine_options(parser: argparse.ArgumentParser, *, uncounted: str) -> None:
    """``--engine`` and ``--no-warm-up``, as every benchmark that can hand its runs to an engine
    takes them (:func:`engine`); ``uncounted``: the run made first in the engine, not counted."""
    parser.add_argument("--engine", action="store_true",
                        help=f"every run a command handed to an engine this benchmark starts, after an uncounted {uncounted}")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="with --engine: start it without its warm-up (engine start --no-warm-up)")


def check_engine_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse ``--no-warm-up`` without ``--engine`` (:func:`add_engine_options`), before any run."""
    if args.no_warm_up and not args.engine:
        parser.error("--no-warm-up is an engine's: use it with --engine")


@contextmanager
def engine(directory: Path, *, warm_up: bool = True) -> Iterator[Path]:
    """An engine (``lakewarden engine start``, docs/operations.md) for the block's commands:
    every ``lakewarden`` command run with :func:`child_env` hands its run to it. Its start (with
    its warm-up unless ``warm_up`` is False: ``--no-warm-up``) is printed and not counted; it is
    stopped when the block ends, error or not."""
    socket_path = directory / "engine.sock"
    started = time.perf_counter()
    run = run_measured([*lakewarden_command(), "engine", "start", "--socket", str(socket_path), "--idle-timeout", "900",
                        "--warm-up" if warm_up else "--no-warm-up"], env=child_env())
    if run.returncode != 0:
        raise SystemExit(f"lakewarden engine start failed (exit {run.returncode}):\n{run.stderr.strip()}")
    ENGINE["socket"] = socket_path
    print(f"engine: every run a command handed to the engine at {socket_path} (started in "
          f"{time.perf_counter() - started:.1f} s, not counted)", flush=True)
    try:
        yield socket_path
    finally:
        ENGINE["socket"] = None
        run_measured([*lakewarden_command(), "engine", "stop", "--socket", str(socket_path)], env=child_env())


def keep_class_archive() -> None:
    """``lakewarden warm-up`` before any measured run, not counted: the JVM class archive is kept
    (scripts/setup.sh does the same), so no measured run writes it. Without this, the first
    process of a machine (or of a checkout whose archive another install's evicted: the cache
    keeps the three newest) spends about 24 s writing the archive as it exits, inside its time:
    measured, a lifecycle full run at 1M took 72.8 s writing it and 48.8 s with it kept, which
    put the incremental share (medians of five) at 5.3 % against 11.6 %. Prints what warm-up said."""
    started = time.perf_counter()
    run = run_measured([*lakewarden_command(), "warm-up"], env=child_env())
    if run.returncode != 0:
        raise SystemExit(f"lakewarden warm-up failed (exit {run.returncode}):\n{run.stderr.strip()}")
    said = (run.stdout.strip().splitlines() or ["(nothing said)"])[-1]
    print(f"{said} ({time.perf_counter() - started:.1f} s, not counted)", flush=True)


def lakewarden_command() -> list[str]:
    """How to start the CLI: the console script beside this interpreter, else ``-m lakewarden``."""
    script = Path(sys.executable).with_name("lakewarden")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "lakewarden"]


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


#: The floor a no-op run is compared with: a plain PySpark process that starts a local session
#: and runs one trivial job (interpreter and JVM start included, as in every measured run).
PLAIN_PYSPARK = (
    "from pyspark.sql import SparkSession; "
    "s = SparkSession.builder.master('local[*]').config('spark.ui.enabled', 'false').getOrCreate(); "
    "s.range(1).count(); s.stop()"
)


def plain_pyspark_run() -> ProcessRun:
    """One plain PySpark process (see PLAIN_PYSPARK), measured like the job runs."""
    return run_measured([sys.executable, "-c", PLAIN_PYSPARK], env=child_env())


def phases_of(seconds: float, summary: Mapping[str, Any], *, rest: str = "process and load") -> dict[str, float]:
    """A run's wall time by phase: the job's own phases from its summary (``phase_seconds``,
    in the order the job ran them) after ``rest``, the process's time outside them
    (interpreter, JVM and dbt start, the snapshot's check and load, what follows the mark)."""
    recorded = summary.get("phase_seconds") or []  # [[name, seconds], ...] in the order they ran
    pairs = recorded.items() if isinstance(recorded, Mapping) else recorded  # an earlier version's object
    phases = {str(name): float(value) for name, value in pairs}
    return {rest: seconds - sum(phases.values()), **phases}


def describe_phases(phases: Mapping[str, float], *, signed: bool = False) -> str:
    """``  = process and load 5.5 s, report and outputs 3.9 s`` (``signed``: ``+1.2 s``, for
    differences)."""
    number = "{:+.1f}" if signed else "{:.1f}"
    return "  = " + ", ".join(f"{name.replace('_', ' ')} {number.format(value)} s" for name, value in phases.items())


def phase_difference(minuend: Mapping[str, float], subtrahend: Mapping[str, float]) -> dict[str, float]:
    """``minuend - subtrahend`` phase by phase (a phase one run did not have counts 0 there):
    which steps an incremental run pays for beyond a no-op's."""
    names = [*minuend, *(name for name in subtrahend if name not in minuend)]
    return {name: minuend.get(name, 0.0) - subtrahend.get(name, 0.0) for name in names}


def median_phases(runs: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each phase's median over ``runs`` (a run without the phase counts 0)."""
    names: list[str] = []
    for phases in runs:
        names.extend(name for name in phases if name not in names)
    return {name: median([phases.get(name, 0.0) for phases in runs]) for name in names}


def incremental_share(incremental: float, full: float, noop: float) -> float:
    """(incremental - noop) / (full - noop): the share of a full run's own work (its cost above
    what a run that has nothing to do pays) that the incremental run still does."""
    return (incremental - noop) / (full - noop) if full > noop else float("nan")


def describe_noop(noop: float, plain: float, ranges_read: object) -> str:
    """A large sample's no-op run against the plain PySpark process, and the ranges it read, as
    the incremental benchmarks print them. The issue holds a no-op to 1.5x the plain process on
    the demo's sample (noop.py measures that); on a large sample the ratio is printed for
    reference, never as met or not. Reading no range is the target at every size."""
    reads = f"(target 0: {'met' if ranges_read == 0 else 'NOT met'})"
    return (f"{noop / plain:>12.2f}x  (for reference: the 1.5x target is on the demo's sample, noop.py); "
            f"no-op read {ranges_read} ranges {reads}")


def describe_share(share: float, target: float) -> str:
    """``incremental_share``'s value against ``target``, as the benchmarks print it; undefined
    (never "met") when the full run cost no more than the no-op: then the runs' fixed cost
    hides the work, and the ratio says nothing."""
    if math.isnan(share):
        return f"{'undefined':>9}   (the full run cost no more than the no-op; target <= {target:.0%}: NOT met)"
    return f"{share:>9.1%}   (target <= {target:.0%}: {'met' if share <= target else 'NOT met'})"

