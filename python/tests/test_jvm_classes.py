"""The JVM class-data archive (lakewarden.runtime.jvm_classes): when a JVM writes one, when one is used,
that a truncated or foreign archive never is, and that ``lakewarden warm-up`` keeps the bytecode
commands import. End to end (test_wheel.py's demo test): the installed wheel's ``lakewarden
warm-up`` keeps an archive at install, and the next process's JVM starts with it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lakewarden.runtime import jvm_classes
from lakewarden.runtime.jvm_classes import archive_key, kept_archive, plan, prune


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LAKEWARDEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LAKEWARDEN_JVM_CACHE", raising=False)
    return tmp_path / "cache" / "jvm"


def test_first_process_writes_an_archive_at_exit(cache: Path) -> None:
    first = plan("4g")
    assert first is not None and first.use is None and first.write is not None
    assert first.write.parent == cache and first.write.name.endswith(".partial")
    assert f"-XX:ArchiveClassesAtExit={first.write}" in first.options
    assert "-Xlog:cds=off" in first.options  # the JVM's CDS log lines never reach stdout


def test_a_long_lived_session_uses_an_archive_and_never_writes_one(cache: Path) -> None:
    """``write=False`` (the test suite's session): no plan while no archive is kept, so its JVM
    starts without one and dumps nothing at its exit; once one is kept, it is used."""
    assert plan("4g", write=False) is None and not list(cache.glob("*.partial"))
    key = plan("4g").key
    whole = cache / f"{key}-4.jsa"
    whole.write_bytes(b"jsa!")
    kept = plan("4g", write=False)
    assert kept is not None and kept.use == whole and kept.write is None
    assert f"-XX:SharedArchiveFile={whole}" in kept.options


def test_a_whole_archive_is_used_and_a_truncated_one_is_not(cache: Path) -> None:
    key = plan("4g").key
    cache.mkdir(parents=True, exist_ok=True)
    truncated = cache / f"{key}-1000.jsa"
    truncated.write_bytes(b"x" * 10)  # its name says 1000 bytes: a JVM would crash on it
    assert plan("4g").use is None and kept_archive("4g") is None
    whole = cache / f"{key}-12.jsa"
    whole.write_bytes(b"x" * 12)
    used = plan("4g")
    assert used is not None and used.use == whole and used.write is None
    assert f"-XX:SharedArchiveFile={whole}" in used.options
    assert kept_archive("4g") == whole
    # another heap setting is another key: that archive is not for it
    assert plan("1g").use is None


def test_key_follows_java_jars_and_heap(tmp_path: Path) -> None:
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("")
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-core.jar").write_bytes(b"1")
    base = archive_key(java, jars, "4g")
    assert archive_key(java, jars, "4g") == base
    assert archive_key(java, jars, "2g") != base
    (jars / "spark-sql.jar").write_bytes(b"22")
    assert archive_key(java, jars, "4g") != base


def test_key_follows_where_the_jars_are_and_their_times(tmp_path: Path) -> None:
    """The JVM drops an archive whose class path files are not the very ones it was written
    from (path, size, modification time): the same jars elsewhere, or written again, are
    another key, so each install writes and maps its own archive."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("")
    first, second = tmp_path / "venv-a" / "jars", tmp_path / "venv-b" / "jars"
    for jars in (first, second):
        jars.mkdir(parents=True)
        (jars / "spark-core.jar").write_bytes(b"1")
        os.utime(jars / "spark-core.jar", (1000, 1000))
    base = archive_key(java, first, "4g")
    assert archive_key(java, second, "4g") != base  # same names and sizes, another directory
    os.utime(first / "spark-core.jar", (2000, 2000))  # installed again: same size, new time
    assert archive_key(java, first, "4g") != base


def test_off_switch(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKEWARDEN_JVM_CACHE", "off")
    assert plan("4g") is None and kept_archive("4g") is None


def test_prune_keeps_the_newest_and_drops_abandoned_partials(tmp_path: Path) -> None:
    for index in range(5):
        archive = tmp_path / f"k{index}-1.jsa"
        archive.write_bytes(b"x")
        os.utime(archive, (1000 + index, 1000 + index))
    abandoned = tmp_path / "k9.1-aa.partial"
    abandoned.write_bytes(b"x")
    old = time.time() - jvm_classes.STALE_PARTIAL_SECONDS - 10
    os.utime(abandoned, (old, old))
    writing = tmp_path / "k9.2-bb.partial"
    writing.write_bytes(b"x")
    prune(tmp_path, keep=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k2-1.jsa", "k3-1.jsa", "k4-1.jsa", "k9.2-bb.partial"]


def test_warm_up_keeps_the_bytecode_commands_import_even_where_writing_it_is_off(tmp_path: Path) -> None:
    """PYTHONDONTWRITEBYTECODE stops Python writing bytecode, not reading it: warm-up writes what
    every command imports (lakewarden's modules, dbt's CLI, pyspark's SQL functions) even with it
    set, and when it runs no job (here the cache is off), so no later command compiles them again."""
    prefix = tmp_path / "pycache"
    env = {
        **os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(prefix),
        "LAKEWARDEN_JVM_CACHE": "off", "LAKEWARDEN_CACHE_DIR": str(tmp_path / "cache"),
    }
    result = subprocess.run([sys.executable, "-m", "lakewarden", "warm-up"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "nothing to do" in result.stdout, result.stderr[-2000:]
    kept = {path.relative_to(prefix).as_posix() for path in prefix.rglob("*.pyc")}

    def kept_for(module_file: str) -> bool:
        return any(name.endswith(module_file) for name in kept)

    # the CLI's own modules (imported before warm-up ran), what it imports, dbt's and pyspark's
    for module in ("lakewarden/cli", "lakewarden/jobs/warm_up", "lakewarden/api", "dbt/cli/main", "dbt/adapters/spark/impl",
                   "pyspark/sql/functions/builtin"):
        assert kept_for(f"{module}.{sys.implementation.cache_tag}.pyc"), module


def test_jit_follows_the_size_of_the_range_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lakewarden.errors import BadInput
    from lakewarden.runtime.spark_session import FULL_JIT_FROM_BYTES, JIT_OPTIONS, jit_mode, ranges_bytes, spark_conf

    monkeypatch.delenv("LAKEWARDEN_JVM_JIT", raising=False)
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    assert ranges_bytes(snapshot) is None and ranges_bytes(None) is None
    (snapshot / "ranges.parquet").write_bytes(b"x" * 1000)
    assert ranges_bytes(snapshot) == 1000
    assert jit_mode(None) == "quick" and jit_mode(1000) == "quick"  # unknown or small: quick
    assert jit_mode(FULL_JIT_FROM_BYTES) == "full"
    # a run that continues from an earlier one reads what changed: quick whatever the size
    assert jit_mode(FULL_JIT_FROM_BYTES, follows_run=True) == "quick"
    folder = tmp_path / "parts" / "ranges.jsonl"
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "part-0.jsonl").write_bytes(b"x" * 400)
    assert ranges_bytes(folder.parent) == 100  # JSON Lines counted at a quarter
    monkeypatch.setenv("LAKEWARDEN_JVM_JIT", "full")
    assert jit_mode(10) == "full" and jit_mode(10, follows_run=True) == "full"  # forced: as asked
    monkeypatch.setenv("LAKEWARDEN_JVM_JIT", "turbo")
    with pytest.raises(BadInput) as refused:
        jit_mode(10)
    assert refused.value.field == "LAKEWARDEN_JVM_JIT"
    assert JIT_OPTIONS["quick"] in spark_conf(tmp_path, jit="quick")["spark.driver.extraJavaOptions"]
    assert "TieredStopAtLevel" not in spark_conf(tmp_path, jit="full")["spark.driver.extraJavaOptions"]


def test_engine_pages_follow_the_heap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every job's JVM gets pages sized from its heap (a task's 8,192 pages address twice the
    heap, 1 MB at least, Spark's 64 MB at most), whatever the snapshot; a bad memory size is
    bad input naming the variable; a user's ``LAKEWARDEN_SPARK_CONF`` has the last word."""
    from lakewarden.errors import BadInput
    from lakewarden.runtime.spark_session import page_size, spark_conf

    sizes = {"4g": "1m", "4G": "1m", "4096m": "1m", "4096": "1m", "512m": "1m", "5g": "2m", "16g": "4m", "64g": "16m", "1t": "64m"}
    assert {memory: page_size(memory) for memory in sizes} == sizes
    with pytest.raises(BadInput) as error:
        page_size("lots")
    assert error.value.field == "LAKEWARDEN_DRIVER_MEMORY"
    monkeypatch.delenv("LAKEWARDEN_SPARK_CONF", raising=False)
    monkeypatch.delenv("LAKEWARDEN_DRIVER_MEMORY", raising=False)
    assert spark_conf(tmp_path)["spark.buffer.pageSize"] == "1m"
    monkeypatch.setenv("LAKEWARDEN_DRIVER_MEMORY", "16g")
    assert spark_conf(tmp_path)["spark.buffer.pageSize"] == "4m"
    monkeypatch.setenv("LAKEWARDEN_SPARK_CONF", "spark.buffer.pageSize=8m")
    assert spark_conf(tmp_path)["spark.buffer.pageSize"] == "8m"


class StartStopped(Exception):
    """Raised where a job would go on after choosing its JVM's settings (no JVM starts)."""


def record_starts(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    """What each start_job call asks of the Spark starter (its options, e.g. ``jit``); the call
    then stops with StartStopped instead of starting a JVM and reading the snapshot."""
    from lakewarden.jobs import common

    started: list[dict[str, object]] = []

    class Starter:
        def __init__(self, state: Path, **options: object) -> None:
            started.append(options)

        def abandon(self) -> None:
            pass

    def stop(*_args: object) -> None:
        raise StartStopped

    monkeypatch.setattr(common, "SparkStarter", Starter)
    monkeypatch.setattr(common, "_started_job", stop)
    return started


def test_jit_mode_follows_the_snapshot_a_job_starts_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """start_job asks for the JVM's compiler from the size of the snapshot it is given, before
    any JVM starts (below FULL_JIT_FROM_BYTES: the quick compiler)."""
    from lakewarden.jobs import common
    from lakewarden.jobs.options import RunOptions
    from lakewarden.runtime.spark_session import SMALL_SNAPSHOT_BYTES

    monkeypatch.delenv("LAKEWARDEN_JVM_JIT", raising=False)
    started = record_starts(monkeypatch)
    for name, size in (("small", SMALL_SNAPSHOT_BYTES - 1), ("large", SMALL_SNAPSHOT_BYTES)):
        snapshot = tmp_path / name
        snapshot.mkdir()
        (snapshot / "ranges.parquet").write_bytes(b"x" * size)
        with pytest.raises(StartStopped):
            common.start_job(RunOptions(snapshot=snapshot, dry_run=True, state=tmp_path / "state"), "gc-committed")
    assert started == [{"jit": "quick"}, {"jit": "quick"}]


def test_an_incremental_run_after_a_finished_one_starts_quick_on_a_large_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a snapshot above FULL_JIT_FROM_BYTES, start_job asks for both compilers, except for an
    incremental run (lifecycle without --full) whose run history holds a successful run of the
    same job on the same namespace: that run reads what changed. Each job says which of its runs
    are incremental: lifecycle's unless --full, none of the others'.
    A failed run, another job's, another namespace's, a line that is not JSON and a snapshot
    without a readable repository.json are no earlier run."""
    import json

    from lakewarden.jobs import common
    from lakewarden.jobs.options import RunOptions
    from lakewarden.reports.history import HISTORY, record_run
    from lakewarden.runtime.spark_session import FULL_JIT_FROM_BYTES

    monkeypatch.delenv("LAKEWARDEN_JVM_JIT", raising=False)
    started = record_starts(monkeypatch)
    snapshot, state = tmp_path / "snapshot", tmp_path / "state"
    snapshot.mkdir()
    with open(snapshot / "ranges.parquet", "wb") as handle:  # sparse: the size is all start_job reads
        handle.truncate(FULL_JIT_FROM_BYTES)
    namespace = "s3://bucket/repo"
    (snapshot / "repository.json").write_text(json.dumps({"repository_id": "repo", "storage_namespace": namespace, "default_branch": "main"}))

    def asked(job: str, incremental: bool) -> object:
        with pytest.raises(StartStopped):
            common.start_job(RunOptions(snapshot=snapshot, dry_run=True, state=state), job, incremental=incremental)
        return started.pop()["jit"]

    from lakewarden.jobs.gc_committed import CommittedGc
    from lakewarden.jobs.gc_uncommitted import UncommittedGc, UncommittedGcOptions
    from lakewarden.jobs.lifecycle import Lifecycle, LifecycleOptions

    policy = tmp_path / "policy.json"
    assert Lifecycle().incremental(LifecycleOptions(policy=policy))
    assert not Lifecycle().incremental(LifecycleOptions(policy=policy, full=True))
    assert not UncommittedGc().incremental(UncommittedGcOptions(inventory=None))  # reads all of storage again
    assert not CommittedGc().incremental(None)
    assert asked("lifecycle", True) == "full"  # no history yet
    record_run(state, {"job": "lifecycle", "storage_namespace": namespace, "success": False, "run_id": "failed"})
    record_run(state, {"job": "lifecycle", "storage_namespace": "s3://bucket/other", "success": True, "run_id": "other"})
    record_run(state, {"job": "gc-uncommitted", "storage_namespace": namespace, "success": True, "run_id": "uc"})
    with open(state / HISTORY, "a", encoding="utf-8") as handle:
        handle.write("not json\n[1, 2]\n")
    assert asked("lifecycle", True) == "full"
    assert asked("gc-uncommitted", True) == "quick"
    assert asked("gc-uncommitted", False) == "full"  # --clean reads it all
    record_run(state, {"job": "lifecycle", "storage_namespace": namespace, "success": True, "run_id": "done"})
    assert asked("lifecycle", True) == "quick"
    assert asked("lifecycle", False) == "full"  # --full reads it all
    (snapshot / "repository.json").write_text("{")
    assert asked("lifecycle", True) == "full"
