"""``lakewarden warm-up``: keep the embedded JVM's class archive now, at install, so that the
first job a user runs starts as fast as every later one.

The archive (:mod:`lakewarden.runtime.jvm_classes`) is written by the first process that runs a
Spark job without one, when it exits: on 2 cores about 15 s spent after that process's own work,
once per machine and Spark/Java version. Left to the first real run, a user's first command
(``lakewarden demo`` right after ``scripts/setup.sh``, say) pays it, and starts without the
archive too: measured, the demo took 57 s on a new machine (42 s of tour, 15 s keeping the
archive) and 27 s once the archive was there. ``scripts/setup.sh`` runs this command last, so
installation pays that once and the first job is like the others.

What it runs: each job's dry run on a small sample repository in a temporary directory (the
demo's sample, a few hundred entries), so that the archive holds the classes the jobs' own
queries load (Parquet and JSON scans, the mark's joins and aggregations, the reports' writers),
not just a session's. Nothing outside that directory is read or written, except the archive in
the user's cache directory. Already kept, or the cache off (``LAKEWARDEN_JVM_CACHE=off``), or a
driver whose Java options are the user's own (``LAKEWARDEN_SPARK_CONF``): it says so and runs
no job.

It also keeps the compiled bytecode of what every command imports (lakewarden, dbt, pyspark),
whatever the archive's state: ``scripts/setup.sh`` installs with ``--no-compile``, and where
``PYTHONDONTWRITEBYTECODE`` is set (some shells and CI images set it; it stops writing, not
reading) no command would ever keep what it compiled. Measured on 2 cores: importing those
modules took 3.3-3.6 s in every command with nothing kept, 1.7 s once kept.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import py_compile
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from lakewarden.runtime import jvm_classes
from lakewarden.runtime.spark_session import archive_heap, spark_conf

#: entries in the warm-up's sample: enough for every query shape, small enough to take seconds
SAMPLE_ENTRIES = 300
#: what a command imports, compiled and kept even when no job runs here (the dry runs import
#: these and more: the adapters dbt loads, the Spark Python workers' modules)
COMMAND_MODULES = ("lakewarden.api", "dbt.cli.main", "dbt.adapters.spark", "pyspark.sql.functions")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "warm-up",
        help="keep the embedded JVM's class archive now (scripts/setup.sh runs it), so the first job starts fast",
        description="Runs each job's dry run on a small sample repository in a temporary directory, "
        "so that the embedded JVM keeps its class archive (the user's cache directory) now rather "
        "than at the end of the first real run; runs no job when the archive is already kept or "
        "the cache is off (LAKEWARDEN_JVM_CACHE=off). Either way it keeps the compiled bytecode "
        "of what every command imports, even where PYTHONDONTWRITEBYTECODE is set.",
    )
    parser.set_defaults(func=run)


def keep_bytecode() -> None:
    """Let this process, and the Spark Python workers it starts (they inherit its environment),
    write the bytecode they compile; then import what every command imports."""
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    # the few modules imported before this command ran (the CLI's own) were not written then
    for name, imported in list(sys.modules.items()):
        source = getattr(getattr(imported, "__spec__", None), "origin", None)
        if name.split(".")[0] == "lakewarden" and source and source.endswith(".py"):
            try:
                py_compile.compile(source, cfile=importlib.util.cache_from_source(source), doraise=True)
            except (OSError, py_compile.PyCompileError):
                pass  # a read-only install: commands compile as they always did
    for name in COMMAND_MODULES:
        importlib.import_module(name)


def run(args: argparse.Namespace) -> int:
    keep_bytecode()
    # the heap a job started now keys its archive by (the warehouse path plays no part in it)
    heap = archive_heap(spark_conf(Path(tempfile.gettempdir())))
    if heap is None or jvm_classes.location(heap) is None:
        print("lakewarden warm-up: no JVM class archive here (LAKEWARDEN_JVM_CACHE=off, "
              "LAKEWARDEN_SPARK_CONF sets the driver's Java options, or no java or Spark jars found); nothing to do")
        return 0
    kept = jvm_classes.kept_archive(heap)
    if kept is not None:
        print(f"lakewarden warm-up: the JVM class archive is kept already: {kept}")
        return 0
    from lakewarden.api import CommittedGcOptions, LifecycleOptions, RunOptions, UncommittedGcOptions
    from lakewarden.api import gc_committed, gc_uncommitted, lifecycle
    from lakewarden.sample import SampleConfig, generate

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lakewarden-warm-up-") as scratch:
        root = Path(scratch)
        sample = generate(root / "sample", SampleConfig(seed=7, entries=SAMPLE_ENTRIES))
        rules = root / "gc_rules.json"
        rules.write_text(json.dumps({"default_retention_days": 7}))
        policy = root / "lifecycle_policy.json"
        policy.write_text(json.dumps({"logs": {"prefix": "logs/", "days": 14, "enabled": True}}))

        def dry_run(job: str) -> RunOptions:
            return RunOptions(snapshot=sample.snapshot_dir, now=sample.end + timedelta(days=1), dry_run=True,
                              report=root / "reports" / job, state=root / "state")

        print("lakewarden warm-up: each job's dry run on a small sample, then the JVM keeps its class archive...",
              file=sys.stderr, flush=True)
        gc_committed(dry_run("gc-committed"), CommittedGcOptions(rules=rules))
        gc_uncommitted(dry_run("gc-uncommitted"), UncommittedGcOptions())
        lifecycle(dry_run("lifecycle"), LifecycleOptions(policy=policy))
        # stop the JVM here, inside the temporary directory's lifetime: it writes the archive now
        jvm_classes.finish_pending()
    kept = jvm_classes.kept_archive(heap)
    if kept is None:
        print("lakewarden warm-up: the JVM did not keep its class archive (-v says why); jobs start without one")
        return 1
    print(f"lakewarden warm-up: JVM class archive kept in {time.monotonic() - started:.0f}s: {kept}")
    return 0
