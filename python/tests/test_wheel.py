"""The built wheel carries the dbt project: installed into a fresh venv, ``lakewarden warm-up``
keeps the JVM class archive, then ``lakewarden demo`` runs from a directory outside the checkout
(every job marks, sweeps and deletes what it reports; stdout a tour, no dbt log line, every
report.html printed). And the analysts' path still works from the checkout: ``dbt build`` and
``dbt run --select lifecycle+`` with the shipped profiles.

Slow (a build, a venv install from pip's cache, a warm-up, a demo): marked ``wheel``, kept in the
suite."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from oracles import local_file
import report_files
from wheel_support import REPO_ROOT, clean_env, installed_wheel

PROJECT_FILES = ("dbt_project.yml", "models/sources.yml", "macros/run_clock.sql", "profiles/profiles.yml", "tests/assert_gc_never_marks_live_addresses.sql")


@pytest.fixture(scope="session")
def wheel_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "wheel"


@pytest.fixture(scope="session")
def wheel(wheel_base: Path) -> Path:
    installed_wheel(wheel_base)
    (built,) = (wheel_base / "dist").glob("lakewarden-*.whl")
    return built


@pytest.mark.wheel
def test_wheel_holds_the_dbt_project_and_nothing_generated(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in PROJECT_FILES:
        assert f"lakewarden/dbt_project/{name}" in names, name
    for source in (REPO_ROOT / "models").rglob("*"):
        if source.is_file():
            assert f"lakewarden/dbt_project/{source.relative_to(REPO_ROOT)}" in names, source
    assert not any(part in name for name in names for part in ("/target/", "/logs/", ".user.yml", "tests/test_", "__pycache__"))
    print(f"wheel {wheel.name}: {wheel.stat().st_size:,} bytes")


# `dbt build`, then `dbt run --select lifecycle+`, as an analyst types them, through dbt's own
# programmatic entry point (dbtRunner: the same arguments and behaviour as the `dbt` command) in
# one process, so the second command does not pay a second JVM start and catalog load (~20 s).
DBT_COMMANDS = """
import json, sys
from dbt.cli.main import dbtRunner
runner = dbtRunner()
for command in (["build"], ["run", "--select", "lifecycle+"]):
    outcome = runner.invoke([*command, *sys.argv[1:]])
    results = getattr(outcome.result, "results", None) or []
    statuses = {r.node.unique_id: str(getattr(r.status, "value", r.status)) for r in results}
    print("RESULT " + json.dumps({"command": command, "success": outcome.success, "statuses": statuses}), flush=True)
    if not outcome.success:
        sys.exit(1)
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()  # dbt's own session (the profile's method: session)
FORM = ("spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions", "spark.sql.codegen.wholeStage")
print("FORM " + json.dumps({"small": [spark.conf.get(key) for key in FORM]}), flush=True)
# A state table a metastore kept from an earlier version (range_windows before age_windows), with
# a row: the next command declares it again with every column, and its files read as before.
location = spark.sql("describe formatted lakewarden_snapshot.range_windows").where("col_name = 'Location'").first()[1]
spark.sql("drop table lakewarden_snapshot.range_windows")
spark.sql("create table lakewarden_snapshot.range_windows (storage_namespace string, range_id string, "
          "min_last_modified timestamp, max_last_modified timestamp, entry_count bigint, first_seen_run_id string) "
          f"using parquet location '{location}'")
spark.sql("insert into lakewarden_snapshot.range_windows values ('s3://b/ns', 'r1', timestamp'2024-01-01', timestamp'2024-01-02', 3, 'run0')")
# ... by a command that takes the large form (no snapshot is small with a threshold of 0 rows)
outcome = runner.invoke(["run", "--select", "stg_lakewarden__range_windows", "--vars", "{small_form_range_rows: 0}", *sys.argv[1:]])
print("FORM " + json.dumps({"large": [spark.conf.get(key) for key in FORM]}), flush=True)
rows = [row.asDict() for row in spark.table("lakewarden.stg_lakewarden__range_windows").collect()]
print("UPGRADED " + json.dumps({"success": outcome.success, "rows": rows}, default=str), flush=True)
"""

# A process starting the embedded session as every command does, saying which archive options its
# JVM was started with (what the JVM itself reports, not what lakewarden meant to pass)
ARCHIVE_ARGS = """
import sys
from pathlib import Path
from lakewarden.runtime.spark_session import get_or_create

spark = get_or_create(Path(sys.argv[1]))
assert spark.range(1000).selectExpr("id % 7 as k").groupBy("k").count().count() == 7
arguments = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
print("ARGS", " ".join(a for a in arguments if "Archive" in a))
"""

# the demo's jobs, in the order it runs them, and the heading of each in its tour
JOB_TITLES = {"gc-committed": "committed retention GC", "gc-uncommitted": "uncommitted GC", "lifecycle": "lifecycle policy"}
JOBS = tuple(JOB_TITLES)


@pytest.mark.wheel
def test_demo_runs_from_the_installed_wheel_outside_the_checkout(wheel: Path, wheel_base: Path, tmp_path: Path) -> None:
    """`lakewarden demo` (the README's first command) end to end, as a user runs it: from the
    installed wheel, in a directory outside the checkout, after the install's ``lakewarden
    warm-up`` kept the JVM class archive the demo's JVM then starts with (the suite's one run of
    the warm-up, and of a process starting with an archive the warm-up kept). Every job marks,
    sweeps and deletes what it reports (the objects are gone); stdout is a tour (a table per
    job, then each report.html) with no dbt log line; the jobs' ledgers live with the sample."""
    bin_dir = installed_wheel(wheel_base)
    where = tmp_path / "somewhere" / "else"
    where.mkdir(parents=True)
    located = subprocess.run(
        [str(bin_dir / "python"), "-c", "from lakewarden.runtime.project import project_dir; print(project_dir())"],
        cwd=where, env=clean_env(), capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert located.startswith(str(bin_dir.parent)) and located.endswith("lakewarden/dbt_project")
    # the install's last step first (scripts/setup.sh's, or `lakewarden warm-up` after a pip
    # install): each job's dry run on a small sample, then its JVM keeps the class archive
    # (stopped, archive written, renamed whole) in the user's cache, keyed by this venv's jars
    # and the heap; its sample and reports are gone
    cache = tmp_path / "cache"
    jvm = cache / "jvm"
    env = clean_env(LAKEWARDEN_DRIVER_MEMORY="1g", LAKEWARDEN_PROGRESS="plain", LAKEWARDEN_CACHE_DIR=str(cache))
    for inherited in ("LAKEWARDEN_JVM_CACHE", "LAKEWARDEN_SPARK_CONF"):
        env.pop(inherited, None)
    warm_up = [str(bin_dir / "lakewarden"), "warm-up"]
    first = subprocess.run(warm_up, cwd=where, env=env, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "JVM class archive kept" in first.stderr and "JVM class archive kept in" in first.stdout
    archives = list(jvm.glob("*.jsa"))
    assert len(archives) == 1 and not list(jvm.glob("*.partial"))
    size = int(archives[0].stem.rsplit("-", 1)[1])
    assert archives[0].stat().st_size == size > 1_000_000
    assert str(archives[0]) in first.stdout
    assert not any(where.iterdir())
    # ... and the demo's JVM starts with it: it writes none at exit (a process without a kept
    # archive writes one, as the warm-up did) and prints nothing of the JVM's archive handling
    started = time.monotonic()
    demo = subprocess.run(
        [str(bin_dir / "lakewarden"), "demo", "--entries", "800", "--seed", "3"],
        cwd=where, env=env, capture_output=True, text=True, timeout=1800,
    )
    seconds = time.monotonic() - started
    assert demo.returncode == 0, demo.stderr[-3000:]
    print(f"lakewarden demo from the wheel: {seconds:.0f}s")
    assert "keeping the JVM" not in demo.stderr and "[cds]" not in demo.stdout + demo.stderr
    assert list(jvm.glob("*.jsa")) == archives and not list(jvm.glob("*.partial"))
    # the JVM of the next process is started with that archive, as its own arguments say
    started_with = subprocess.run(
        [str(bin_dir / "python"), "-c", ARCHIVE_ARGS, str(tmp_path / "state")], cwd=where, env=env,
        capture_output=True, text=True, timeout=600,
    )
    assert started_with.returncode == 0, started_with.stderr[-2000:]
    assert f"ARGS -XX:SharedArchiveFile={archives[0]}" in started_with.stdout
    assert "[cds]" not in started_with.stdout + started_with.stderr
    assert "keeping the JVM" not in started_with.stderr  # nothing written again
    assert list(jvm.glob("*.jsa")) == archives
    # a second warm-up finds it and runs no job; with the cache off there is nothing to do
    again = subprocess.run(warm_up, cwd=where, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and f"kept already: {archives[0]}" in again.stdout
    assert "dry run" not in again.stderr  # no JVM, no job
    off = subprocess.run(warm_up, cwd=where, env={**env, "LAKEWARDEN_JVM_CACHE": "off"}, capture_output=True, text=True, timeout=120)
    assert off.returncode == 0 and "nothing to do" in off.stdout
    out = demo.stdout
    for title in JOB_TITLES.values():
        assert title in out
    state = where / ".lakewarden"  # the default state dir: ./.lakewarden
    reports = state / "demo" / "reports"
    # the tour: per job a kept/marked/deleted table, then the report pages; no dbt log lines
    assert out.count("\n  kept ") == 3 and out.count("\n  marked ") == 3 and out.count("\n  deleted ") == 3
    for forbidden in ("START sql", "OK created", "Done. PASS", "Running with dbt", "Concurrency:", '"num_deleted"'):
        assert forbidden not in out, f"{forbidden!r} leaked into the demo's stdout"
    pages = [line.strip() for line in out.splitlines()[out.splitlines().index("reports:") + 1 :]]
    assert pages == [str(reports / job / "report.html") for job in JOBS]
    assert all(Path(page).is_file() for page in pages)
    # one progress line per build (stderr is no TTY): committed GC builds its commit models first
    # (to find out whether an earlier mark can be reused), then the mark's models, then its safety
    # tests (beside the report's figures); lifecycle builds up to its read decision (the sample
    # is small as a whole: no staging views first to count the windows kept), then (its first
    # run reads every range) the newly expired entries and its pass over every entry, each in
    # the form of its rows, then the rest's models up to the marked mart and the run's figures
    # (the report's figures are drawn from the mart beside what follows), then the other mart
    # beside its safety test; the uncommitted GC once
    assert demo.stderr.count("lakewarden: models ") == 9, demo.stderr[-3000:]
    assert demo.stderr.count(" (safety tests): 1 nodes ") == 1, demo.stderr[-3000:]  # committed GC's
    assert "+new_range_windows: 2 nodes " in demo.stderr, demo.stderr[-3000:]  # lifecycle's rule stats and safety test
    for job in JOBS:
        summary = report_files.summary(reports / job)
        assert summary["job"] == job and summary["dry_run"] is True
        assert summary["success"] is True and summary["num_failed"] == 0, job
        assert summary["num_marked"] > 0, f"the demo should show {job} deleting something"
        with open(reports / job / "sweep" / "outcomes.csv", newline="", encoding="utf-8") as handle:
            outcomes = list(csv.DictReader(handle))
        assert len(outcomes) == summary["num_marked"] and {row["status"] for row in outcomes} == {"deleted"}
        marked_row = next(line for line in out.split(JOB_TITLES[job])[1].splitlines() if line.startswith("  marked "))
        assert marked_row.split()[1] == f"{summary['num_marked']:,}"
        assert not any(local_file(row["physical_address"]).exists() for row in outcomes)
    assert (state / "demo" / "storage" / "sample-repo" / "_lakefs").is_dir()
    # the jobs' ledgers live with the sample (a second demo starts afresh), not in the user's state dir
    assert (state / "demo" / "state" / "tables" / "lifecycle_run_events").is_dir()
    assert not (state / "tables" / "lifecycle_run_events").exists()


@pytest.mark.spark
def test_dbt_build_and_lifecycle_run_from_the_checkout_with_the_shipped_profiles(tmp_path: Path) -> None:
    """The analysts' path and CI's: dbt's commands in the repository root (``DBT_COMMANDS``),
    profiles/ as shipped, on an empty warehouse (on-run-start creates the snapshot tables). ``dbt build`` is
    the whole project through dbt's own materializations: every model (the Python ones
    included), every data test, the singular safety tests and every unit test (the seeds' worked
    examples), all passing. This is the suite's one full ``dbt build``; the jobs' own runs build
    their selections on real snapshots in every end-to-end test. On the seeds and an empty
    snapshot the session takes the small form, as the runner's does for a small snapshot. Then a
    state table as an earlier version declared it (a column fewer) is declared again by the next
    command, which takes the large form (Spark's settings and the usual shuffle partitions back)."""
    env = {**os.environ, "LAKEWARDEN_HOME": str(tmp_path / "state"), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    common = ["--profiles-dir", "profiles", "--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path / "logs")]
    result = subprocess.run(
        [sys.executable, "-c", DBT_COMMANDS, *common], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1800
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    invocations = [json.loads(line.removeprefix("RESULT ")) for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert [i["command"] for i in invocations] == [["build"], ["run", "--select", "lifecycle+"]]
    for invocation in invocations:
        statuses = invocation["statuses"]
        assert invocation["success"] and statuses, invocation["command"]
        assert all(status in ("success", "pass") for status in statuses.values()), {k: v for k, v in statuses.items() if v not in ("success", "pass")}
    build, lifecycle = (invocation["statuses"] for invocation in invocations)
    kinds = Counter(unique_id.split(".")[0] for unique_id in build)
    assert kinds["model"] >= 40 and kinds["unit_test"] >= 40 and kinds["test"] >= 100, kinds
    built = {unique_id.rsplit(".", 1)[-1] for unique_id in build}
    # the Python models (the commit-graph walk) and the safety tests ran through dbt
    assert {"int_graph__commit_branch_sets", "int_graph__branch_set_members", "int_gc_committed__active_commits"} <= built
    assert {"assert_gc_never_marks_live_addresses", "assert_lifecycle_never_marks_protected_addresses"} <= built
    assert "model.lakewarden.lifecycle_marked_addresses" in lifecycle and not any(".gc_" in unique_id for unique_id in lifecycle)
    # a state table declared by an earlier version (without a column added since) is declared
    # again by the next command: the new column reads null, the rows stay
    upgraded = json.loads(next(line for line in result.stdout.splitlines() if line.startswith("UPGRADED ")).removeprefix("UPGRADED "))
    assert upgraded["success"], result.stdout[-3000:]
    assert [(row["range_id"], row["entry_count"], row["age_windows"]) for row in upgraded["rows"]] == [("r1", 3, None)]
    # on the seeds and an empty snapshot the commands ran in the small form (the runner's, for a
    # small snapshot: macros/suit_session_to_size.sql); a command on a large one gets Spark's
    # settings and the usual shuffle partitions back
    forms = {key: value for line in result.stdout.splitlines() if line.startswith("FORM ") for key, value in json.loads(line[5:]).items()}
    partitions = os.environ.get("LAKEWARDEN_SHUFFLE_PARTITIONS", "8")  # the large form's (the hook's)
    assert forms == {"small": ["false", "1", "false"], "large": ["true", partitions, "true"]}, forms
    # the shipped profile puts the catalog in a Derby metastore under the state dir, where a later
    # dbt process finds what this one built (both commands share one process here, so that later
    # process itself is not exercised)
    assert (tmp_path / "state" / "metastore_db").is_dir()
