"""The embedded JVM's class-data archive: from the second run on, Spark starts seconds sooner.

A JVM spends most of its start loading, parsing and verifying classes, and Spark's driver loads
tens of thousands of them before the first query answers. Java's class data sharing (CDS;
dynamic archives, JEP 350, Java 13+) writes the classes a JVM loaded into an archive when it
exits; a later JVM maps that archive instead of loading them again. Measured on the 2-core
machine: session plus first queries 13.6-15.0 s without it, 8.3-8.7 s with it.

How lakewarden uses it (embedded engine only: under ``spark-submit`` the driver JVM is not ours):

* The archive is kept per Java runtime, Spark jars and driver heap (:func:`archive_key`) under
  the user's cache directory (``lakewarden.runtime.user_cache``), as ``jvm/<key>-<bytes>.jsa``.
* A process whose archive exists starts its JVM with it. A process without one starts its JVM
  with ``-XX:ArchiveClassesAtExit`` aimed at a private ``.partial`` file; when it ends, it stops
  its JVM, waits for the archive to be written (once per machine and version: a few seconds,
  announced on stderr) and renames it into place only if the JVM exited cleanly. A process that
  started no Spark job writes no archive (a run refused on bad input must end at once).
* The file's size is in its name and checked before use: a JVM crashes on a truncated archive
  (tried on Java 17), so only whole files, renamed atomically, are ever used.
* A stale or foreign archive (another Java build, other jars) is never used: its key differs.
  The JVM's own CDS log lines are off, so stdout stays the command's.

``LAKEWARDEN_JVM_CACHE=off`` turns it off; it is off, too, when ``LAKEWARDEN_SPARK_CONF`` sets
the driver's Java options itself. Old archives are pruned: the :data:`KEEP` most recent stay.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import secrets
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lakewarden.runtime.user_cache import user_cache_dir

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: archives kept in the cache directory (one per Java runtime + Spark jars + heap in use)
KEEP = 3
#: a ``.partial`` file older than this belongs to a process that died while writing it
STALE_PARTIAL_SECONDS = 3600
#: how long a process waits at exit for its JVM to write the archive
DUMP_TIMEOUT_SECONDS = 300
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


@dataclass(frozen=True)
class ArchivePlan:
    """What this process's JVM does with the archive: ``use`` it, or ``write`` it at exit."""

    options: str
    directory: Path
    key: str
    #: the archive this JVM maps (None when it writes one instead)
    use: Path | None = None
    #: where this JVM writes its archive at exit (None when it uses one)
    write: Path | None = None


def enabled() -> bool:
    return os.environ.get("LAKEWARDEN_JVM_CACHE", "on").strip().lower() not in {"off", "0", "false", "no"}


def java_executable() -> Path | None:
    """The ``java`` the embedded session's JVM runs: the runtime lakewarden chooses, which the
    session sets as ``JAVA_HOME`` for Spark's launcher (lakewarden.runtime.java_runtime), else
    the ``java`` on PATH, as the launcher takes it."""
    from lakewarden.runtime.java_runtime import choose_java

    chosen = choose_java()
    found = str(chosen.home / "bin" / "java") if chosen else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def spark_jars_dir() -> Path | None:
    home = os.environ.get("SPARK_HOME")
    if home:
        return Path(home) / "jars"
    try:
        import pyspark
    except ImportError:
        return None
    return Path(pyspark.__file__).resolve().parent / "jars"


def archive_key(java: Path, jars: Path, heap: str) -> str:
    """A digest of everything the archive is only valid for: the Java runtime (its binary and
    module image), the jars on Spark's class path (where they are, names, sizes and
    modification times) and the heap setting (it decides how object pointers are encoded,
    which the archive records).

    Why the jars' directory and times: the JVM maps an archive only when every class path
    entry is the very file it was written from, at the same path with the same size and
    modification time; else it drops the archive without a word (our JVMs run with the CDS
    log off) and loads every class from the jars again. Keyed on names and sizes alone, a
    second checkout's virtualenv (or pyspark installed again) took the first one's archive
    and never wrote its own: measured on the 2-core machine, a lifecycle run there loaded
    15,088 classes from jars and 1,244 from archives."""
    digest = hashlib.sha256()
    digest.update(str(java).encode())
    modules = java.parent.parent / "lib" / "modules"
    if modules.exists():
        stat = modules.stat()
        digest.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest.update(str(jars.resolve()).encode())
    for jar in sorted(jars.glob("*.jar")):
        stat = jar.stat()
        digest.update(f"{jar.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest.update(heap.encode())
    return digest.hexdigest()[:20]


def _whole_archive(directory: Path, key: str) -> Path | None:
    """The newest archive of ``key`` whose size is the one in its name."""
    candidates = sorted(directory.glob(f"{key}-*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for path in candidates:
        size = path.stem.rsplit("-", 1)[-1]
        if size.isdigit() and path.stat().st_size == int(size):
            return path
    return None


def location(heap: str) -> tuple[Path, str] | None:
    """The cache directory and key of this machine's archive for ``heap``, or None when the
    cache is off or cannot work here (no java, no Spark jars)."""
    if not enabled():
        return None
    java, jars = java_executable(), spark_jars_dir()
    if java is None or jars is None or not jars.is_dir():
        return None
    return user_cache_dir() / "jvm", archive_key(java, jars, heap)


def kept_archive(heap: str) -> Path | None:
    """The whole archive a JVM of ``heap`` would start with now, if one is kept (no side effects)."""
    found = location(heap)
    if found is None or not found[0].is_dir():
        return None
    return _whole_archive(*found)


def plan(heap: str, *, write: bool = True) -> ArchivePlan | None:
    """This process's plan, or None when the cache is off or cannot work here, or (``write``
    False) when no whole archive is kept yet."""
    found = location(heap)
    if found is None:
        return None
    directory, key = found
    try:
        directory.mkdir(parents=True, exist_ok=True)
        existing = _whole_archive(directory, key)
    except OSError as exc:
        log.debug("JVM class cache unavailable: %s", exc)
        return None
    if existing is not None:
        return ArchivePlan(options=f"-XX:SharedArchiveFile={existing} {QUIET}", directory=directory, key=key, use=existing)
    if not write or not os.access(directory, os.W_OK):
        return None
    prune(directory)
    partial = directory / f"{key}.{os.getpid()}-{secrets.token_hex(3)}.partial"
    return ArchivePlan(options=f"-XX:ArchiveClassesAtExit={partial} {QUIET}", directory=directory, key=key, write=partial)


_PENDING: list[tuple["SparkSession", ArchivePlan]] = []


def write_at_exit(spark: "SparkSession", archive: ArchivePlan) -> None:
    """When ``archive`` says so, make this process's exit stop the JVM and keep its archive."""
    if archive.write is not None:
        if not _PENDING:
            atexit.register(finish_pending)
        _PENDING.append((spark, archive))


def finish_pending() -> None:
    """Stop the JVM now and keep its archive, if this process's JVM is to write one (at exit,
    or earlier where a process may end without running exit handlers: a pytest-xdist worker)."""
    while _PENDING:
        _finish(*_PENDING.pop())


def _finish(spark: "SparkSession", archive: ArchivePlan) -> None:
    from pyspark import SparkContext

    from lakewarden.runtime.spark_session import spark_jobs_started

    partial = archive.write
    assert partial is not None
    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    # a run that started no Spark job (refused on bad input) ends at once and keeps nothing;
    # a stopped session (the test suite stops its own) cannot say, and keeps its archive
    if gateway is None or process is None or process.poll() is not None or spark_jobs_started(spark) == 0:
        _remove(partial)
        return
    started = time.monotonic()
    announce("keeping the JVM's loaded classes for faster starts (once per Spark and Java version)...")
    try:
        try:
            spark.stop()
        except Exception:  # noqa: BLE001 - already stopped (the test suite stops its session)
            pass
        gateway.shutdown()
        if process.stdin is not None:
            process.stdin.close()  # Spark's gateway exits on end of input: the archive is written then
        code = process.wait(timeout=DUMP_TIMEOUT_SECONDS)
        if code != 0 or not partial.is_file() or partial.stat().st_size == 0:
            _remove(partial)
            return
        final = archive.directory / f"{archive.key}-{partial.stat().st_size}.jsa"
        partial.replace(final)
        announce(f"JVM class archive kept in {time.monotonic() - started:.1f}s: {final}")
        prune(archive.directory)
    except Exception as exc:  # noqa: BLE001 - a cache: its failure never changes the run's outcome
        log.debug("JVM class archive not kept: %s", exc)
        _remove(partial)


def announce(text: str) -> None:
    """One line on stderr (progress output: off with ``LAKEWARDEN_PROGRESS=off``)."""
    if os.environ.get("LAKEWARDEN_PROGRESS") != "off":
        print(f"lakewarden: {text}", file=sys.stderr, flush=True)


def prune(directory: Path, *, keep: int = KEEP) -> None:
    """Keep the ``keep`` newest archives; drop partial files nobody is writing any more."""
    archives = sorted(directory.glob("*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[keep:]:
        _remove(old)
    now = time.time()
    for partial in directory.glob("*.partial"):
        try:
            if now - partial.stat().st_mtime > STALE_PARTIAL_SECONDS:
                _remove(partial)
        except OSError:
            pass


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
