"""The one embedded Spark session a lakewarden process uses.

dbt-spark's ``session`` method calls ``SparkSession.builder.getOrCreate()``, so whoever builds
the session first decides the catalog and the warehouse. Building it here, before dbt runs, lets
the runner, dbt and the sweep share one JVM (JVM start costs ~6 s).

The catalog is Spark's in-memory one, not Hive on Derby: every DDL is a map update instead of a
metastore round trip, and nothing ties a state dir to one process. What a run computes lives in a
scratch warehouse of this process (``STATE/work/<pid>-<token>``, removed at exit); what a job keeps
across runs lives as Parquet under ``STATE/tables`` (lakewarden.state_tables), registered when the
session starts. Under ``spark-submit`` the cluster's session already exists and is reused as is.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from lakewarden.runtime.jvm_classes import ArchivePlan


def spark_conf(warehouse: Path, *, jit: str = "full") -> dict[str, str]:
    """Static Spark settings for the embedded engine."""
    log4j = Path(__file__).with_name("log4j2.properties")
    driver_memory = os.environ.get("LAKEWARDEN_DRIVER_MEMORY", "4g")
    return {
        # In-memory catalog: no metastore database, no lock on the state dir (module docstring).
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.warehouse.dir": str(warehouse),
        "spark.driver.extraJavaOptions": (
            f"-Dlog4j2.configurationFile={log4j.as_uri()} {GC_OPTIONS} {JIT_OPTIONS[jit]}"
        ).strip(),
        # The embedded engine talks to nothing but itself: bind the driver to loopback.
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.sql.shuffle.partitions": os.environ.get("LAKEWARDEN_SHUFFLE_PARTITIONS", "8"),
        "spark.sql.ansi.enabled": "false",
        # lower()/upper() with the JVM's own case mapping, not ICU's. ICU's first use loads its
        # break-iterator data: 1.8 s of every run (it showed as the optimizer folding a
        # constant lower() in the address macros). What is case-mapped here is ASCII: URI
        # schemes, address types, and the namespace's `dummy` object, where both give the same
        # result (ASCII takes the same fast path either way).
        "spark.sql.icu.caseMappings.enabled": "false",
        # Compiled classes kept per session, keyed by their generated source (Spark's default:
        # 100). A run in the large form compiles ~380 classes (the 900-entry sample with
        # generated code), so with 100 a second run of the same job in one session (the sweep's,
        # a notebook's, the test suite's) compiled them all again: 762 and 1,143 classes after
        # two and three runs, against 410 and 426 with room for them all. Metaspace only
        # (a few tens of KB a class); evicted least recently used past the bound.
        "spark.sql.codegen.cache.maxEntries": CODEGEN_CACHE_ENTRIES,
        # A join side that turns out (at run time) to be under 64 MB is broadcast instead of
        # shuffled with the other: the marked keys of a mark (645,100 at 8.45M entries, ~15 MB)
        # against millions of entries. Above it the join is shuffled, so the driver never
        # holds more than this of a side whatever the repository.
        "spark.sql.adaptive.autoBroadcastJoinThreshold": "64m",
        # A file scan's splits of up to 512 MB (Spark's default: 128 MB). Spark cuts a scan into
        # about one split per core (its bytes over the default parallelism) when that is
        # smaller, so this only changes a scan of more than 128 MB a core: the ranges of 8.45M
        # entries (354 MB) on 2 cores were 3 tasks, two rounds on 2 cores where the second
        # had one task; now 2, one round. The incremental lifecycle run's pass over every entry
        # took 4.0 s against 4.8 s (medians of 7 alternated pairs, 2 cores). A split is read
        # in row groups as before: a task holds no more at a time.
        "spark.sql.files.maxPartitionBytes": "512m",
        "spark.ui.enabled": "false",
        "spark.driver.memory": driver_memory,
        "spark.buffer.pageSize": page_size(driver_memory),
        "spark.sql.legacy.createHiveTableByDefault": "false",
        **extra_spark_conf(),
    }


#: how many pages a task can hold (Spark's ``TaskMemoryManager`` page table)
TASK_PAGES = 8192
#: Spark's own bounds on a page
PAGE_BOUNDS = (1 << 20, 64 << 20)


def page_size(driver_memory: str) -> str:
    """``spark.buffer.pageSize`` for an embedded driver of ``driver_memory`` (Spark's spelling:
    ``4g``, ``4096m``, a bare number in MiB): the smallest power of two, 1 MB at least, with
    which a task's 8,192 pages address twice the heap. 1 MB with the default 4 GB.

    Why not Spark's own size: each sort, hash aggregation and hash join of a task takes its
    memory in pages, on the heap a zeroed ``long[]`` each, and Spark sizes a page from the heap
    and the cores: 64 MB with 4 GB and 2 cores, whatever the rows. A run is dozens of queries,
    most over a few thousand rows, each of whose operators allocated 64 MB of empty pages; a
    page that outlived a young collection was copied to the old generation, and the old
    generation filled with them: full collections every few seconds. Measured on 2 cores, runs
    in turn, Spark's pages against these: a lifecycle incremental run at 1M entries paused
    3.1-4.4 s for the collector against 0.63-0.79 s, its steps after the ranges to read took
    10.2-11.4 s against 6.0-7.6 s; ``gc committed --dry-run`` at 8.45M entries took 51.4-57.2 s
    and peaked at 3,379-3,505 MB against 46.5-48.2 s and 2,870-2,930 MB; at 1M 17.8-18.5 s,
    2,362-2,433 MB against 17.2-18.4 s, 1,978-2,106 MB (1 and 4 MB pages within each other's
    spread at both sizes). On the 900-entry sample of the lifecycle tests the collector took
    0.8-1.2 of the ~4 JVM CPU seconds of a warm run with Spark's pages, 0.2 with 1 MB.
    A record larger than a page still gets a page of its own size, and a large task's hash
    table grows in as many pages as it needs (up to twice the heap, more than a task is ever
    given). An engine setting, fixed when the JVM starts; ``LAKEWARDEN_SPARK_CONF`` (or
    ``spark-submit --conf`` for a cluster's session) has the last word."""
    text = driver_memory.strip().lower().removesuffix("b")
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    try:
        heap = int(text[:-1]) * units[text[-1]] if text and text[-1] in units else int(text) << 20
    except ValueError:
        from lakewarden.errors import BadInput

        raise BadInput(f"{driver_memory!r} is not a memory size (4g, 4096m)", field="LAKEWARDEN_DRIVER_MEMORY") from None
    low, high = PAGE_BOUNDS
    page = low
    while page * TASK_PAGES < 2 * heap and page < high:
        page *= 2
    return f"{page >> 20}m"


#: how many compiled classes a session keeps (``spark.sql.codegen.cache.maxEntries``): the
#: large-form runs of every job in one session, with room to spare
CODEGEN_CACHE_ENTRIES = "2000"

#: ``LAKEWARDEN_JVM_JIT``: ``quick`` compiles hot code with the JVM's quick compiler only (C1);
#: ``full`` is the JVM's default (C1, then C2 for the hottest code); ``auto`` (default) picks
#: by the size of the snapshot's ranges table (:data:`FULL_JIT_FROM_BYTES`)
#: C1 alone reserves a 48 MB code cache (the JVM's default without tiers); Spark's generated
#: code fills it in a long run, and a full cache switches the compiler off ("CodeCache is full.
#: Compiler has been disabled": the rest of the run is interpreted). The tiered default, 240 MB.
#: ``full`` raises the optimising compiler's thresholds fourfold: a job's process runs dozens of
#: queries once each, and C2 spent 47 of the 151 CPU seconds of a ``gc committed`` at 8.45M
#: entries compiling code that ran briefly; the per-row loops still cross the higher thresholds
#: within their first seconds.
JIT_OPTIONS = {
    "quick": "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m",
    "full": "-XX:Tier4InvocationThreshold=20000 -XX:Tier4MinInvocationThreshold=2400 "
    "-XX:Tier4CompileThreshold=40000 -XX:Tier4BackEdgeThreshold=160000",
}
#: The throughput collector: a job is a batch of scans and aggregations, not a service with
#: pause targets. With the thresholds above, ``gc committed`` at 8.45M entries took 59-65 s
#: against 73-81 s with G1 and the default thresholds (2 cores, pairs run in turn).
GC_OPTIONS = "-XX:+UseParallelGC"
#: from this many bytes of Parquet range rows (about 3.5M entries) ``auto`` means ``full``
FULL_JIT_FROM_BYTES = 150_000_000


def jit_mode(ranges_bytes: int | None = None, *, follows_run: bool = False) -> str:
    """The embedded JVM's just-in-time compilation for a job run reading ``ranges_bytes`` of
    range rows (None: unknown). A small run is mostly short queries Catalyst plans on a cold
    JVM: the optimising compiler (C2) competes with the run for the cores and rarely pays back
    before the process ends. A large one spends its time in a few long scans, where C2's code wins.
    Measured on 2 cores, ``gc committed --dry-run`` end to end, quick vs full: the demo's
    sample 19.6 vs 24.0 s; 1M entries (43 MB) 28.3/26.8 vs 35.1/33.6 s; 8.45M entries (370 MB)
    83.9 vs 71.6 s. Only a job's short process chooses: a long-lived session (the sweep's, a
    notebook's) keeps the JVM's default, whose C2 pays back there; the test suite's session,
    whose runs are all small, asks for ``quick`` (python/tests/conftest.py).

    ``follows_run``: the run continues from an earlier run of its job on this repository and
    reads only what changed since (lifecycle without ``--full``:
    lakewarden.jobs.shape.Job.incremental), not the whole snapshot: a small run on a large
    snapshot, quick whatever the size. Lifecycle at 8.45M entries after +1% commits, quick vs
    full: the incremental run 25.2/27.2 vs 35.0/36.6 s, the no-op 14.9/15.9 vs 21.6/21.6 s."""
    mode = os.environ.get("LAKEWARDEN_JVM_JIT", "auto").strip().lower()
    if mode == "auto":
        large = ranges_bytes is not None and ranges_bytes >= FULL_JIT_FROM_BYTES
        return "full" if large and not follows_run else "quick"
    if mode not in JIT_OPTIONS:
        from lakewarden.errors import BadInput

        raise BadInput(f"{mode!r} is not one of auto, {', '.join(JIT_OPTIONS)}", field="LAKEWARDEN_JVM_JIT")
    return mode


#: A snapshot with fewer bytes of range rows than this (:func:`ranges_bytes`: about 100k
#: entries) is small, and its run takes the small form everywhere at once: expressions
#: interpreted instead of compiled, one shuffle partition, no adaptive execution
#: (:func:`suit_session_to_size`), intermediate tables held in the session's memory and range
#: lists run as the subqueries they are (lakewarden.jobs.common.JobContext.model_runner). One
#: size for all: each pays on a run of a few dozen short queries over a few thousand rows and
#: costs on millions of rows.
SMALL_SNAPSHOT_BYTES = 4 * 1024 * 1024


def is_small_snapshot(size: int | None) -> bool:
    """Whether a run reading ``size`` bytes of range rows takes the small form (None: unknown,
    the large form: it never holds millions of rows in memory by mistake)."""
    return size is not None and size < SMALL_SNAPSHOT_BYTES


#: the session settings :func:`suit_session_to_size` chooses: (a small snapshot's, Spark's default)
_SMALL_FORM_SETTINGS = {
    "spark.sql.codegen.wholeStage": ("false", "true"),
    "spark.sql.codegen.factoryMode": ("NO_CODEGEN", "FALLBACK"),
    "spark.sql.adaptive.enabled": ("false", "true"),
    "spark.sql.shuffle.partitions": ("1", "200"),
}
#: the values the session had before the first change (a user's spark-submit --conf stays theirs)
_settings_before: dict[str, str | None] = {}


def suit_session_to_size(spark: "SparkSession", size: int | None) -> bool:
    """The small form's session settings for a small snapshot's job (:func:`is_small_snapshot`),
    the session's own otherwise; returns whether small.

    Why: on a small repository a run is a few dozen short queries over a few thousand rows, and
    what costs is Spark's work around the rows, not the rows:

    * Interpreted expressions, not generated code: Spark compiles Java source for every stage
      of each query (Janino, then the JVM's compilers on the new classes). Profiled on the
      900-entry sample of the lifecycle tests, four runs in one session: compiling was a
      quarter of the JVM's samples, and the JVM used 112 CPU seconds with generated code
      against 94 interpreted (72 with the JVM's quick compiler as well), the runs 8-20 % faster.
    * One shuffle partition and no adaptive execution: adaptive execution runs each shuffle
      and broadcast of a query as a job of its own and plans the rest again after each (a
      small lifecycle run sent 160 jobs for 35 statements); with one partition a query is one
      job of one task a stage. ``test_gc_committed.py`` (18 tests, ~40 job runs): 130-132
      machine CPU seconds with adaptive execution and 8 partitions, 112-113 with this, twice
      in turn. Neither alone gained, on three warm runs of the 900-entry lifecycle sample:
      adaptive execution off with 8 partitions (8 tasks a stage) 46.2 JVM CPU seconds against
      40.7; one partition with adaptive execution (the same jobs) 37.8 against 34.5.

    The size is the snapshot's range rows, not what else a job reads: uncommitted GC of a small
    repository over a namespace of millions of objects takes the small form too, and its
    anti-join runs slower than it could (one task a stage), never differently.

    On millions of rows the generated code and adaptive execution win by far. The rows a query
    returns are the same either way: the interpreted path is the one Spark itself falls back
    to when a generated class does not compile, and partitions and join strategies change how
    rows move, not which rows there are.

    The settings are the session's (runtime SQL settings): a long-lived session that runs a
    small job and then a large one (the test suite, a notebook) gets each its own; above the
    threshold the values the session had before the first change come back."""
    small = is_small_snapshot(size)
    for key, (small_value, default) in _SMALL_FORM_SETTINGS.items():
        if key not in _settings_before:
            _settings_before[key] = spark.conf.get(key, None)
        if small:
            spark.conf.set(key, small_value)
        else:
            before = _settings_before[key]
            spark.conf.set(key, before if before is not None else default)
    return small


#: at most this many rows read by a stretch of a run's queries and they take the small form
#: (:func:`small_form_for`): about the entries of a small snapshot (:data:`SMALL_SNAPSHOT_BYTES`)
SMALL_FORM_ROWS = 100_000
#: at most this many rows read by a stretch and its intermediate tables are held in memory
#: (local checkpoints, which spill to disk when memory runs short) rather than written as
#: Parquet tables, in the large form's settings too (``JobContext.form_for``). Why: above
#: ``SMALL_FORM_ROWS`` generated code and adaptive execution pay, but writing, committing and
#: listing a table's files still costs each step more than its rows do. Measured (2 cores):
#: docs/dbt-project.md, "Between the two".
HELD_ROWS = 500_000


@contextmanager
def small_form_for(spark: "SparkSession", rows: int | None) -> Iterator[bool]:
    """The small form's session settings (:data:`_SMALL_FORM_SETTINGS`) for the queries of the
    block when together they read at most :data:`SMALL_FORM_ROWS` rows (None: unknown, no
    change); the settings the session had come back at its end, error or not. Yields whether
    the block runs in the small form.

    Why: the form fits what the queries read, not the snapshot. An incremental run on a large
    snapshot reads a few ranges, and after its one pass over every entry its steps see a few
    thousand rows; in the large form each of their queries pays for compiling its generated
    code. Measured on 1M entries (2 cores), an incremental lifecycle run compiled 416 classes in
    6.5 s of Janino, 223 of them (3.5 s) after its decision which ranges to read, against 93
    (1.1 s) in a run that read none; with its stretches in this form, 45 (0.5 s) and 18
    (0.1 s). On a small snapshot the session is in the small form already and this changes
    nothing. The settings are the session's: the block's queries run
    one at a time or beside each other, all in the one form."""
    small = rows is not None and rows <= SMALL_FORM_ROWS
    if not small:
        yield False
        return
    before = {key: spark.conf.get(key, None) for key in _SMALL_FORM_SETTINGS}
    for key, (small_value, _) in _SMALL_FORM_SETTINGS.items():
        spark.conf.set(key, small_value)
    try:
        yield True
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def ranges_bytes(snapshot_dir: Path | None) -> int | None:
    """How many bytes the snapshot's range rows take on disk (Parquet; JSON Lines counted at a
    quarter, its usual ratio), or None when there is no snapshot there yet. A stat, no read:
    it is asked before the JVM starts."""
    if snapshot_dir is None:
        return None
    for name, scale in (("ranges.parquet", 1), ("ranges.jsonl", 4)):
        path = Path(snapshot_dir) / name
        try:
            if path.is_file():
                return path.stat().st_size // scale
            if path.is_dir():
                return sum(part.stat().st_size for part in path.rglob("*") if part.is_file()) // scale
        except OSError:
            return None
    return None


def extra_spark_conf() -> dict[str, str]:
    """``LAKEWARDEN_SPARK_CONF="key=value,key=value"``: settings for the embedded engine on top
    of the defaults above (spark-submit users pass ``--conf`` instead)."""
    raw = os.environ.get("LAKEWARDEN_SPARK_CONF", "")
    pairs = [item.strip() for item in raw.split(",") if item.strip()]
    conf = {}
    for item in pairs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            from lakewarden.errors import BadInput

            raise BadInput(f"{item!r} is not key=value", field="LAKEWARDEN_SPARK_CONF")
        conf[key.strip()] = value.strip()
    return conf


def scratch_warehouse(state: Path) -> Path:
    """This process's own warehouse under ``STATE/work``, removed when the process exits.

    Tables a run materialises (marts, the runner's per-run inputs) are this process's business
    only: a per-process directory lets two processes use one state dir at once, and a fresh one
    means a managed table never meets the files of an earlier process. Directories of processes
    that died without cleaning up are removed here too (their pid is no longer alive).
    """
    work = state / "work"
    work.mkdir(parents=True, exist_ok=True)
    for stale in work.iterdir():
        pid = stale.name.split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    directory = work / f"{os.getpid()}-{secrets.token_hex(3)}"
    directory.mkdir()
    atexit.register(shutil.rmtree, directory, True)
    return directory


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def under_spark_submit() -> bool:
    """True when spark-submit started this process: its launcher hands the Python driver a
    gateway to the JVM it already configured (PYSPARK_GATEWAY_PORT)."""
    return bool(os.environ.get("PYSPARK_GATEWAY_PORT"))


def get_or_create(
    state: Path, *, app_name: str = "lakewarden", master: str | None = None, jit: str = "full", write_archive: bool = True
) -> "SparkSession":
    """Return the active session, or start the embedded one (in-memory catalog) under ``state``;
    either way the state tables are registered (lakewarden.state_tables). ``jit`` fixes the
    JVM's compiler (:func:`jit_mode`) of a session started here; an active session keeps its own.
    ``write_archive=False``: a JVM started here uses the class archive when one is kept, and never
    writes one when none is (:func:`class_archive`)."""
    from pyspark.sql import SparkSession

    from lakewarden.state_tables import register_state_tables

    active = SparkSession.getActiveSession()
    if active is not None:
        # a run in a session that outlives it: what it listed of the state tables before may be
        # stale (state_tables.register_state_tables)
        register_state_tables(active, state, refresh=True)
        return active
    builder = SparkSession.builder.appName(app_name)
    # Under spark-submit the cluster's session: master, catalog and warehouse come from
    # spark-submit and spark-defaults.conf, never from the embedded settings.
    if not under_spark_submit():
        from lakewarden.runtime.java_runtime import use_java

        use_java()  # JAVA_HOME for Spark's launcher: the runtime named, else the newest supported
        state.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        master = master or os.environ.get("LAKEWARDEN_SPARK_MASTER", "local[*]")
        builder = builder.master(master)
        if master.startswith("local"):
            # Python workers must import lakewarden: run them with this interpreter (the venv's),
            # not whatever python3 is first on PATH (SparkContext reads PYSPARK_PYTHON).
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        conf = spark_conf(scratch_warehouse(state), jit=jit)
        archive = class_archive(conf, write=write_archive)
        if archive is not None:
            conf["spark.driver.extraJavaOptions"] += " " + archive.options
        for key, value in conf.items():
            builder = builder.config(key, value)
    else:
        archive = None
    session = builder.getOrCreate()
    if not under_spark_submit():
        from lakewarden.runtime.old_generation import watch

        watch(session)  # full collections Java 22+ no longer runs of its own accord (module docstring)
    if archive is not None:
        from lakewarden.runtime.jvm_classes import write_at_exit

        write_at_exit(session, archive)
    # Spark logs failed tasks (e.g. a malformed snapshot line) as ERROR with JVM stack traces;
    # lakewarden reports those errors itself in one line, so only FATAL goes to the terminal.
    session.sparkContext.setLogLevel(os.environ.get("LAKEWARDEN_SPARK_LOG_LEVEL", "FATAL"))
    # the session may be one that outlives this run all the same (getActiveSession is per
    # thread: a job's JVM starts on a thread of its own, SparkStarter, and gets the existing one)
    register_state_tables(session, state, refresh=True)
    return session


def archive_heap(conf: dict[str, str]) -> str | None:
    """The heap an embedded driver of ``conf`` (:func:`spark_conf`) keys its JVM class archive
    by, or None when ``LAKEWARDEN_SPARK_CONF`` sets the driver's Java options itself (no
    archive then): the one rule for a job's start and for ``lakewarden warm-up``."""
    if "spark.driver.extraJavaOptions" in extra_spark_conf():
        return None
    return conf.get("spark.driver.memory", "")


def class_archive(conf: dict[str, str], *, write: bool = True) -> "ArchivePlan | None":
    """The JVM class-data archive this process's JVM uses or writes (lakewarden.runtime.jvm_classes):
    none when ``LAKEWARDEN_SPARK_CONF`` sets the driver's Java options itself (:func:`archive_heap`),
    or this process already has a JVM (a stopped session's: the new one reuses it as it is).

    ``write=False`` for a session that lives long: it uses a kept archive, and when none is kept
    it starts without one rather than write one at its exit. A JVM that writes pays for it while
    it runs and when it stops: measured on 2 cores, nine lifecycle runs in one session on the
    test suite's histories, the session started in 17.7 s and its first run took 22.9 s when
    writing, against 7.1 s and 13.6 s with no archive (3.7 s and 13.8 s using one), and the
    process took 121 s against 74-77 s, its stop included (the dump). The test suite's session
    runs for the whole suite, so its dump would come at its very end and hold every class the
    suite loaded; a job's short process writes the archive instead, as a first run does."""
    from pyspark import SparkContext

    from lakewarden.runtime.jvm_classes import plan

    heap = archive_heap(conf)
    if heap is None or SparkContext._gateway is not None:
        return None
    return plan(heap, write=write)


def spark_jobs_started(spark: "SparkSession") -> int | None:
    """How many Spark jobs this session has started so far (None where the scheduler does not
    say): a run reports the difference, so a change that adds work shows in its summary."""
    try:
        return int(spark.sparkContext._jsc.sc().dagScheduler().nextJobId())
    except Exception:  # noqa: BLE001 - a figure for the summary, never a reason to fail
        return None


class SparkStarter:
    """Starts the session on a background thread, so the JVM boots (~6 s) while the main thread
    reads and validates the job's inputs and imports dbt; ``session()`` waits for it.

    A job that fails on bad input never waits: it calls :meth:`abandon`, and a session this
    starter created is stopped as soon as it is up. A command's process would end anyway, but a
    long-lived one (a Python API caller: an Airflow worker, a notebook) keeps no JVM it never
    used; a session that was there before (the caller's own) is left alone."""

    def __init__(self, state: Path, *, jit: str = "full") -> None:
        self._state = state
        self._jit = jit
        self._lock = threading.Lock()
        self._result: "SparkSession | None" = None
        self._created = False
        self._abandoned = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="lakewarden-spark-start", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from pyspark import SparkContext

        existed = SparkContext._active_spark_context is not None  # noqa: SLF001 - the only way to ask
        try:
            session = get_or_create(self._state, jit=self._jit)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread by session()
            self._error = exc
            return
        with self._lock:
            self._result, self._created = session, not existed
            stop = self._abandoned and self._created
        if stop:
            session.stop()

    def abandon(self) -> None:
        """The job failed before it needed Spark: stop the session this starter created, now if
        it is up, else as soon as it is (without waiting for it here)."""
        with self._lock:
            self._abandoned = True
            session = self._result if self._created else None
        if session is not None:
            session.stop()

    def session(self) -> "SparkSession":
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result
