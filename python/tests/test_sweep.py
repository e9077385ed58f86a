"""The shared sweep on the local backend: real files, unsafe rows, kill and resume, bad input."""

from __future__ import annotations

import csv
import functools
import json
import os
import sys
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest
from pyspark import cloudpickle

from lakewarden.deleters import DeleteOutcome, Deleter, deleter_for
from lakewarden.errors import BadInput
from lakewarden.sweep import SweepFailed, sweep_report
import report_files

# Spark's Python workers cannot import this test module: ship its helpers by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.spark


# -- helpers (also used by test_sweep_s3) -------------------------------------------------------


def write_report(report: Path, namespace: str, rows: Sequence[tuple[str, str, str]], *, dry_run: bool = True) -> Path:
    """A report directory as the jobs write it: summary.json + sorted RFC 4180 addresses.csv."""
    report.mkdir(parents=True, exist_ok=True)
    summary = {
        "run_id": "run-1",
        "job": "test",
        "dry_run": dry_run,
        "now": "2026-01-01T00:00:00Z",
        "num_marked": len(rows),
        "num_deleted": 0,
        "num_failed": 0,
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:00:01Z",
        "success": True,
        "storage_namespace": namespace,
        "repository_id": "repo",
    }
    (report / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    with open(report / "addresses.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["address", "address_type", "physical_address", "paths"])
        for address, address_type, physical in sorted(rows):
            writer.writerow([address, address_type, physical, "p1;p2"])
    return report


def read_outcomes_csv(report: Path) -> list[dict[str, str]]:
    with open(report / "sweep" / "outcomes.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@dataclass(frozen=True)
class Recording:
    """Deleter factory: wraps the real backend, logs every URI it is asked to delete, and
    (``fail_after`` set) raises on the batch after that many, like a process killed mid-way."""

    log_dir: str
    fail_after: int | None = None

    def __call__(self, storage_namespace: str, **options: Any) -> Deleter:
        return _RecordingDeleter(deleter_for(storage_namespace, **options), self.log_dir, self.fail_after)

    def requested(self) -> list[str]:
        uris: list[str] = []
        for path in Path(self.log_dir).glob("*.log"):
            uris += [line for line in path.read_text(encoding="utf-8").split("\n") if line]
        return uris


class _RecordingDeleter(Deleter):
    def __init__(self, inner: Deleter, log_dir: str, fail_after: int | None):
        super().__init__(inner.storage_namespace)
        self.inner, self.fail_after = inner, fail_after
        self.max_batch, self.max_concurrency = inner.max_batch, inner.max_concurrency
        self.batches = 0
        self.log = Path(log_dir) / f"{os.getpid()}-{uuid.uuid4().hex}.log"

    def delete_batch(self, uris: Sequence[str]) -> list[DeleteOutcome]:
        self.batches += 1
        if self.fail_after is not None and self.batches > self.fail_after:
            raise RuntimeError("simulated crash mid-sweep")
        with open(self.log, "a", encoding="utf-8") as handle:
            handle.write("".join(uri + "\n" for uri in uris))
        return self.inner.delete_batch(uris)


@pytest.fixture(params=["process", "spark"])
def sweep(request: pytest.FixtureRequest, spark: Any) -> Callable[..., Any]:
    """``sweep_report`` on one of the two paths: every behaviour below holds for both."""
    return functools.partial(sweep_report, spark, engine=request.param)


@dataclass(frozen=True)
class Peeking:
    """Deleter factory: before each batch, notes what the report's summary says and how many
    addresses the outcome records hold as deleted at that moment."""

    report_dir: str
    log_dir: str

    def __call__(self, storage_namespace: str, **options: Any) -> Deleter:
        return _PeekingDeleter(deleter_for(storage_namespace, **options), self)

    def peeks(self) -> list[dict[str, Any]]:
        lines: list[str] = []
        for path in Path(self.log_dir).glob("*.jsonl"):
            lines += path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]


class _PeekingDeleter(Deleter):
    def __init__(self, inner: Deleter, spec: Peeking):
        super().__init__(inner.storage_namespace)
        self.inner, self.spec = inner, spec
        self.max_batch, self.max_concurrency = inner.max_batch, inner.max_concurrency
        self.log = Path(spec.log_dir) / f"{os.getpid()}-{uuid.uuid4().hex}.jsonl"

    def delete_batch(self, uris: Sequence[str]) -> list[DeleteOutcome]:
        report = Path(self.spec.report_dir)
        # read here, not through report_files: this runs in Spark's Python workers too, which
        # import the package but not the test modules' helpers
        summary = json.loads((report / "summary.json").read_text(encoding="utf-8"))
        recorded: set[str] = set()
        for path in (report / "sweep" / "outcomes").glob("*.jsonl"):
            for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
                if line.endswith("\n") and json.loads(line)["status"] == "deleted":
                    recorded.add(json.loads(line)["address"])
        with open(self.log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"summary": summary, "recorded_deleted": len(recorded)}) + "\n")
        return self.inner.delete_batch(uris)


# -- tests --------------------------------------------------------------------------------------


@pytest.fixture()
def namespace(tmp_path: Path) -> Path:
    ns = tmp_path / "ns"
    (ns / "_lakefs").mkdir(parents=True)
    return ns


def _objects(ns: Path, names: Sequence[str]) -> list[tuple[str, str, str]]:
    rows = []
    for name in names:
        path = ns / "data" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
        rows.append((f"data/{name}", "RELATIVE", f"{ns.as_uri()}/data/{name}"))
    return rows


def test_sweep_deletes_marked_files_and_records_outcomes(sweep: Any, namespace: Path, tmp_path: Path) -> None:
    names = [f"obj-{i:03d}" for i in range(40)] + ['we"ird, name', "new\nline", "ünï côdé"]
    rows = _objects(namespace, names)
    keep = _objects(namespace, ["keep-me"])[0]
    (namespace / "_lakefs" / "meta").write_bytes(b"m")
    report = write_report(tmp_path / "report", namespace.as_uri(), rows)

    result = sweep(report, batch_size=7, parallelism=2)

    assert (result.num_marked, result.num_deleted, result.num_failed, result.success) == (len(rows), len(rows), 0, True)
    assert sorted(p.name for p in (namespace / "data").iterdir()) == ["keep-me"]
    assert (namespace / "_lakefs" / "meta").exists() and keep
    outcomes = read_outcomes_csv(report)
    assert [o["address"] for o in outcomes] == sorted(r[0] for r in rows)
    assert {o["status"] for o in outcomes} == {"deleted"}
    summary = report_files.summary(report)
    assert (summary["num_deleted"], summary["num_failed"], summary["success"]) == (len(rows), 0, True)
    assert summary["run_id"] == "run-1" and summary["finished_at"] == result.finished_at
    sweep_summary = report_files.summary(report / "sweep")
    assert sweep_summary["num_deleted"] == len(rows) and sweep_summary["sweep_id"] == result.sweep_id


def test_unsafe_rows_are_recorded_failed_and_never_deleted(sweep: Any, namespace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "precious"
    outside.parent.mkdir()
    outside.write_bytes(b"p")
    meta = namespace / "_lakefs" / "meta"
    meta.write_bytes(b"m")
    victim = _objects(namespace, ["victim"])[0]
    ok = _objects(namespace, ["ok"])
    ns = namespace.as_uri()
    unsafe = [
        (outside.as_uri(), "FULL", outside.as_uri()),
        ("_lakefs/meta", "RELATIVE", f"{ns}/_lakefs/meta"),
        ("data/../_lakefs/meta", "RELATIVE", f"{ns}/data/../_lakefs/meta"),
        ("data/x", "RELATIVE", victim[2]),  # physical_address is not what the address resolves to
        ("", "RELATIVE", f"{ns}/data/victim"),
        ("data/victim", "RELATIVE", ""),
        (ns, "FULL", ns),
    ]
    report = write_report(tmp_path / "report", ns, ok + unsafe)
    result = sweep(report, parallelism=2)

    assert (result.num_deleted, result.num_failed, result.success) == (1, len(unsafe), False)
    assert outside.exists() and meta.exists() and Path(victim[2].removeprefix("file://")).exists()
    failed = [o for o in read_outcomes_csv(report) if o["status"] == "failed"]
    assert len(failed) == len(unsafe) and all(o["reason"].startswith("unsafe:") for o in failed)
    assert report_files.summary(report)["success"] is False
    # the page's counts, recorded beside the outcomes: the same numbers outcomes.csv holds
    counts = report_files.summary(report / "sweep")["outcome_counts"]
    assert counts["by_status"] == {"deleted": 1, "failed": len(unsafe)}
    assert counts["failures_by_reason"] == dict(Counter(o["reason"] for o in failed))
    assert (counts["failures_other_reasons"], counts["failures_other"]) == (0, 0)


def test_killed_sweep_resumes_without_redeleting_or_losing(sweep: Any, namespace: Path, tmp_path: Path) -> None:
    rows = _objects(namespace, [f"f{i:03d}" for i in range(60)])
    report = write_report(tmp_path / "report", namespace.as_uri(), rows)
    first = Recording(str(tmp_path / "log1"), fail_after=2)
    Path(first.log_dir).mkdir()

    with pytest.raises(SweepFailed, match="run the sweep again"):
        sweep(report, batch_size=5, parallelism=2, deleter_factory=first)

    summary = report_files.summary(report)
    assert (summary["success"], summary["status"]) == (False, "sweep_failed")
    assert summary["error"].startswith("sweep: ") and summary["finished_at"]
    recorded = {o["physical_address"] for o in read_outcomes_csv(report) if o["status"] == "deleted"}
    assert 0 < len(recorded) < len(rows)
    remaining = sorted(p.name for p in (namespace / "data").iterdir())
    assert len(remaining) == len(rows) - len(recorded), "every deleted file is recorded"

    second = Recording(str(tmp_path / "log2"))
    Path(second.log_dir).mkdir()
    result = sweep(report, batch_size=5, parallelism=2, deleter_factory=second)

    again = set(second.requested())
    assert not again & recorded, "a re-run never re-deletes what was recorded deleted"
    assert again | recorded == {r[2] for r in rows}
    assert (result.num_deleted, result.num_failed, result.success) == (len(rows), 0, True)
    assert result.num_previously_deleted == len(recorded)
    assert not any((namespace / "data").iterdir())
    assert len(read_outcomes_csv(report)) == len(rows)
    resumed = report_files.summary(report)
    assert (resumed["status"], resumed["success"], resumed["sweep_count"]) == ("swept", True, 2)
    assert resumed["resumed_from"] == summary["sweep_id"] and resumed["sweep_id"] == result.sweep_id
    assert "lock_taken_over" not in resumed, "the failed sweep released its lock"

    rerun = sweep(report)  # a dry-run report may be swept again: nothing left to do
    assert (rerun.num_attempted, rerun.num_deleted, rerun.success) == (0, len(rows), True)


def test_torn_outcome_lines_are_ignored(sweep: Any, namespace: Path, tmp_path: Path) -> None:
    rows = _objects(namespace, ["a", "b"])
    report = write_report(tmp_path / "report", namespace.as_uri(), rows)
    outcomes = report / "sweep" / "outcomes"
    outcomes.mkdir(parents=True)
    line = {"address": "data/a", "physical_address": rows[0][2], "status": "deleted", "reason": "", "ts": 1, "sweep_id": "old"}
    (outcomes / "old-p00000-a0.jsonl").write_text(json.dumps(line) + "\n" + '{"address": "data/b", "physical_address": "fi')
    result = sweep(report)
    assert (result.num_attempted, result.num_deleted, result.num_previously_deleted) == (1, 2, 1)
    assert (namespace / "data" / "a").exists(), "recorded as deleted earlier, so not touched again"
    assert not (namespace / "data" / "b").exists()


def test_empty_report_and_spark_written_report(sweep: Any, spark: Any, namespace: Path, tmp_path: Path) -> None:
    from lakewarden.reports.directory import Report

    empty = write_report(tmp_path / "empty", namespace.as_uri(), [])
    result = sweep(empty)
    assert (result.num_marked, result.success) == (0, True)
    assert read_outcomes_csv(empty) == []

    rows = _objects(namespace, ['q"uote', "comma,name", "plain"])
    directory = tmp_path / "spark-report"
    report = Report.create(
        directory, run_id="r", job="gc", dry_run=True, now="2026-01-01T00:00:00Z", repository_id="repo",
        storage_namespace=namespace.as_uri(),
    )
    report.write_addresses(spark.createDataFrame(rows, "address string, address_type string, physical_address string"))
    report.finish(success=True, status="marked")  # as a job does; an unfinished mark is refused
    result = sweep(directory)
    assert (result.num_deleted, result.success) == (3, True)


def test_bad_input(sweep: Any, namespace: Path, tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="does not exist"):
        sweep(tmp_path / "nope")
    no_csv = write_report(tmp_path / "no-csv", namespace.as_uri(), [])
    (no_csv / "addresses.csv").unlink()
    with pytest.raises(BadInput, match="addresses.csv: missing"):
        sweep(no_csv)
    bad_columns = write_report(tmp_path / "bad-columns", namespace.as_uri(), [])
    (bad_columns / "addresses.csv").write_text("address,size\nx,1\n")
    with pytest.raises(BadInput, match="address_type"):
        sweep(bad_columns)
    no_ns = write_report(tmp_path / "no-ns", namespace.as_uri(), [])
    (no_ns / "summary.json").write_text(json.dumps({"run_id": "r", "dry_run": True}))
    with pytest.raises(BadInput, match="storage_namespace"):
        sweep(no_ns)
    with pytest.raises(BadInput, match="no deleter for scheme"):
        sweep(write_report(tmp_path / "wasb", "wasb://container@account/ns", []))  # gs:// and Azure are served now

    swept = write_report(tmp_path / "swept", namespace.as_uri(), _objects(namespace, ["z"]), dry_run=False)
    assert sweep(swept).success
    with pytest.raises(BadInput, match="already swept"):
        sweep(swept)


def test_cli(namespace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lakewarden.cli import main

    assert main(["sweep", "--report", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    report = write_report(tmp_path / "report", namespace.as_uri(), _objects(namespace, ["c1", "c2"]))
    assert main(["sweep", "--report", str(report), "--parallelism", "1"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (printed["num_deleted"], printed["success"]) == (2, True)


def test_summary_is_true_while_the_sweep_runs(sweep: Any, namespace: Path, tmp_path: Path) -> None:
    rows = _objects(namespace, [f"t{i:03d}" for i in range(60)])
    report = write_report(tmp_path / "report", namespace.as_uri(), rows)
    peeking = Peeking(str(report), str(tmp_path / "peeks"))
    Path(peeking.log_dir).mkdir()

    result = sweep(report, batch_size=6, parallelism=2, deleter_factory=peeking)

    peeks = peeking.peeks()
    assert len(peeks) == 10, "one look per batch"
    for peek in peeks:
        seen = peek["summary"]
        assert (seen["status"], seen["success"], seen["finished_at"]) == ("sweeping", False, None)
        assert seen["sweep_id"] == result.sweep_id and seen["sweep_started_at"] == result.started_at
        assert seen["num_deleted"] <= peek["recorded_deleted"], "never more than the records hold"
        assert seen["num_failed"] == 0
    if sweep.keywords["engine"] == "process":  # one batch at a time: counted as each lands
        assert sorted(p["summary"]["num_deleted"] for p in peeks) == list(range(0, 60, 6))
    final = report_files.summary(report)
    assert (final["status"], final["success"], final["num_deleted"], final["sweep_count"]) == ("swept", True, 60, 1)
    assert final["resumed_from"] is None and final["marked_finished_at"] == "2026-01-01T00:00:01Z"
