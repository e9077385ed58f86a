"""SIGKILL a sweep at start-up, mid-delete and while merging outcomes, locally and on the local
S3 server; and run a second sweep while one holds the report.

Every kill point is made deterministic by a hold: the sweep runs through ``sweep_holding.py``, whose
observer of the sweep's points (lakewarden.sweep.hooks) writes a file and waits there; the test sees
the file and kills it. No timing assumptions. Each sweep is a whole ``lakewarden sweep`` process (in-process engine: no JVM).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import sweep_holding
from report_files import summary
from test_sweep import read_outcomes_csv, write_report
from test_sweep_support import S3_ENV, list_keys, moto_endpoint, new_bucket, put_keys, wait_held

# first_process: the second pytest process of scripts/test.sh was still the longer by about a
# minute (833 s against 768 s); these sweeps (~20-30 s, on the moto server the first process
# starts for test_sweep_s3 anyway) run in the first (conftest.py)
pytestmark = pytest.mark.first_process

BATCH = 50
N_OBJECTS = 400
#: how long a test waits for a sweep to reach its hold point before failing (not a timing assertion)


@dataclass
class Store:
    """A namespace holding N marked objects plus objects that must survive."""

    kind: str
    namespace: str
    endpoint: str | None
    root: Path | None = None
    bucket: str | None = None

    def remaining(self) -> set[str]:
        """Keys (relative to the namespace) still stored."""
        if self.root is not None:
            return {str(p.relative_to(self.root)) for p in self.root.rglob("*") if p.is_file()}
        assert self.endpoint and self.bucket
        return {key.removeprefix("ns/") for key in list_keys(self.endpoint, self.bucket)}


MARKED = [f"data/{i:04d}" for i in range(N_OBJECTS)]
LIVE = {"keep/a", "keep/b", "_lakefs/meta"}


def make_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    if kind == "local":
        root = tmp_path / "ns"
        for key in MARKED + sorted(LIVE):
            (root / key).parent.mkdir(parents=True, exist_ok=True)
            (root / key).write_bytes(b"x")
        return Store(kind, root.as_uri(), None, root=root)
    endpoint = moto_endpoint(request)
    for name, value in S3_ENV.items():
        os.environ.setdefault(name, value)
    bucket = new_bucket(endpoint)
    put_keys(endpoint, bucket, [f"ns/{key}" for key in MARKED + sorted(LIVE)])
    return Store(kind, f"s3://{bucket}/ns", endpoint, bucket=bucket)


def make_report(store: Store, tmp_path: Path) -> Path:
    rows = [(key, "RELATIVE", f"{store.namespace}/{key}") for key in MARKED]
    return write_report(tmp_path / "report", store.namespace, rows)


def start_sweep(store: Store, report: Path, tmp_path: Path, hold: str | None = None, engine: str = "auto") -> subprocess.Popen[str]:
    env = {**os.environ, **S3_ENV}
    # held: the tests' wrapper (sweep_holding.py) pauses the sweep at the point; else lakewarden itself
    program = [*sweep_holding.COMMAND, hold, str(tmp_path / "held")] if hold else [sys.executable, "-m", "lakewarden"]
    command = [*program, "sweep", "--report", str(report), "--state", str(tmp_path / "state"),
               "--batch-size", str(BATCH), "--engine", engine]
    if store.endpoint:
        command += ["--s3-endpoint", store.endpoint]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill(process: subprocess.Popen[str]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL


def records(report: Path) -> list[dict[str, Any]]:
    """Every complete outcome record of every sweep of the report."""
    out = []
    for path in (report / "sweep" / "outcomes").glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            if line.endswith("\n"):
                out.append(json.loads(line))
    return out


KILL_POINTS = {"started": 0, "batch:3": 3 * BATCH, "merging": N_OBJECTS}


@pytest.mark.parametrize("point", sorted(KILL_POINTS))
@pytest.mark.parametrize("kind", ["local", "s3"])
def test_killed_sweep_says_so_and_resumes(kind: str, point: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store = make_store(kind, tmp_path, request)
    report = make_report(store, tmp_path)
    first = start_sweep(store, report, tmp_path, hold=point)
    wait_held(first, tmp_path)
    kill(first)

    # the report says a sweep started and did not finish, with no more than is recorded
    killed = summary(report)
    assert (killed["status"], killed["success"], killed["finished_at"]) == ("sweeping", False, None)
    assert killed["marked_finished_at"] == "2026-01-01T00:00:01Z" and killed["marked_status"] is None
    assert killed["sweep_id"] and killed["sweep_started_at"] and killed["sweep_engine"] == "process"
    assert killed["run_id"] == "run-1" and killed["num_marked"] == N_OBJECTS
    recorded_deleted = {r["address"] for r in records(report) if r["status"] == "deleted"}
    assert killed["num_deleted"] == KILL_POINTS[point] == len(recorded_deleted)
    assert killed["num_failed"] == 0
    sweep_summary = summary(report / "sweep")
    assert (sweep_summary["status"], sweep_summary["sweep_id"]) == ("sweeping", killed["sweep_id"])
    gone = set(MARKED) - store.remaining()
    assert recorded_deleted <= gone, "every address recorded deleted is gone"
    assert LIVE <= store.remaining(), "nothing live deleted"
    if point == "started":
        assert not gone

    # the next sweep takes the stale lock over, says it resumed, and finishes
    second = start_sweep(store, report, tmp_path)
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    done = summary(report)
    assert (done["status"], done["success"], done["num_deleted"], done["num_failed"]) == ("swept", True, N_OBJECTS, 0)
    assert done["resumed_from"] == killed["sweep_id"] and done["sweep_count"] == 2
    assert done["lock_taken_over"]["sweep_id"] == killed["sweep_id"]
    assert done["lock_taken_over"]["pid"] == first.pid
    assert json.loads(out.strip().splitlines()[-1])["num_previously_deleted"] == len(recorded_deleted)
    outcomes = read_outcomes_csv(report)
    assert [o["address"] for o in outcomes] == MARKED, "one outcome per address, sorted"
    assert {o["status"] for o in outcomes} == {"deleted"}
    deleted_records = Counter(r["address"] for r in records(report) if r["status"] == "deleted")
    assert set(deleted_records) == set(MARKED) and set(deleted_records.values()) == {1}, "no address recorded twice"
    assert store.remaining() == LIVE


def test_second_sweep_of_a_report_exits_with_one_line(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store = make_store("local", tmp_path, request)
    report = make_report(store, tmp_path)
    first = start_sweep(store, report, tmp_path, hold="batch:1")
    wait_held(first, tmp_path)
    try:
        second = start_sweep(store, report, tmp_path)
        out, err = second.communicate(timeout=120)
        assert second.returncode == 1
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "another sweep of this report is running" in lines[0]
        assert f"pid {first.pid}" in lines[0]
        assert out == ""
        held = summary(report)
        assert held["status"] == "sweeping" and held["num_deleted"] == BATCH, "the second sweep changed nothing"
    finally:
        kill(first)
    third = start_sweep(store, report, tmp_path)
    _, err = third.communicate(timeout=120)
    assert third.returncode == 0, err
    outcomes = read_outcomes_csv(report)
    assert len(outcomes) == N_OBJECTS and len({o["address"] for o in outcomes}) == N_OBJECTS
    assert len([r for r in records(report) if r["status"] == "deleted"]) == N_OBJECTS
    assert store.remaining() == LIVE


@pytest.mark.spark
def test_spark_sweep_killed_while_merging_is_finished_in_process(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The distributed path keeps the report as true as the in-process one, and its records are
    the same format: a Spark sweep killed after deleting, before merging, is finished by an
    in-process sweep that deletes nothing again."""
    store = make_store("local", tmp_path, request)
    report = make_report(store, tmp_path)
    first = start_sweep(store, report, tmp_path, hold="merging", engine="spark")
    wait_held(first, tmp_path)
    kill(first)
    killed = summary(report)
    assert (killed["status"], killed["success"], killed["sweep_engine"]) == ("sweeping", False, "spark")
    recorded_deleted = {r["address"] for r in records(report) if r["status"] == "deleted"}
    assert killed["num_deleted"] <= len(recorded_deleted) == N_OBJECTS
    assert store.remaining() == LIVE

    second = start_sweep(store, report, tmp_path, engine="process")
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    done = summary(report)
    assert (done["status"], done["num_deleted"], done["resumed_from"]) == ("swept", N_OBJECTS, killed["sweep_id"])
    assert json.loads(out.strip().splitlines()[-1])["num_previously_deleted"] == N_OBJECTS
    assert [o["address"] for o in read_outcomes_csv(report)] == MARKED
