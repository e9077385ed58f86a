"""`lakewarden demo` (the README's first command) end to end: every job marks, explains and
sweeps on the sample repository, the objects the jobs say they deleted are gone, and stdout is a
tour (a table per job, then each report.html) with no dbt log line in it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lakewarden.cli import main
from oracles import local_file

pytestmark = pytest.mark.spark

JOBS = ("gc-committed", "gc-uncommitted", "lifecycle")


def job_title(job: str) -> str:
    return {"gc-committed": "committed retention GC", "gc-uncommitted": "uncommitted GC", "lifecycle": "lifecycle policy"}[job]


def test_demo_runs_every_job_and_deletes_what_it_reports(spark, test_state_dir: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("LAKEWARDEN_PROGRESS", "plain")  # the suite turns progress off; the demo shows it
    assert main(["demo", "--state", str(test_state_dir), "--entries", "800", "--seed", "3"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    for heading in ("committed retention GC", "uncommitted GC", "lifecycle policy"):
        assert heading in out
    reports = test_state_dir / "demo" / "reports"
    # the tour: per job a kept/marked/deleted table, then the report pages; no dbt log lines
    assert out.count("\n  kept ") == 3 and out.count("\n  marked ") == 3 and out.count("\n  deleted ") == 3
    for forbidden in ("START sql", "OK created", "Done. PASS", "Concurrency:", "Running with dbt", '"num_deleted"'):
        assert forbidden not in out, f"{forbidden!r} leaked into the demo's stdout"
    pages = [line.strip() for line in out.splitlines()[out.splitlines().index("reports:") + 1 :]]
    assert pages == [str(reports / job / "report.html") for job in JOBS]
    assert all(Path(page).is_file() for page in pages)
    dbt_log = test_state_dir / "logs" / "dbt.log"  # dbt runs only to compile a selection not cached yet
    assert not dbt_log.exists() or "Running with dbt" not in out
    # one progress line per build (stderr is no TTY): committed GC builds its commit models first
    # (to find out whether an earlier mark can be reused), then the mark; the other jobs once each
    assert captured.err.count("lakewarden: models ") == 4
    for job in JOBS:
        summary = json.loads((reports / job / "summary.json").read_text())
        assert summary["job"] == job and summary["dry_run"] is True
        assert summary["success"] is True and summary["num_failed"] == 0, job
        assert summary["num_marked"] > 0, f"the demo should show {job} deleting something"
        with open(reports / job / "sweep" / "outcomes.csv", newline="", encoding="utf-8") as handle:
            outcomes = list(csv.DictReader(handle))
        assert len(outcomes) == summary["num_marked"] and {row["status"] for row in outcomes} == {"deleted"}
        marked_row = next(line for line in out.split(job_title(job))[1].splitlines() if line.startswith("  marked "))
        assert marked_row.split()[1] == f"{summary['num_marked']:,}"
        assert not any(local_file(row["physical_address"]).exists() for row in outcomes)
    assert (test_state_dir / "demo" / "storage" / "sample-repo" / "_lakefs").is_dir()
    # the jobs' ledgers live with the sample (a second demo starts afresh), not in the state dir
    assert (test_state_dir / "demo" / "state" / "tables" / "lifecycle_run_events").is_dir()
    user_ledger = test_state_dir / "tables" / "lifecycle_run_events"  # other tests' runs may be there
    for part in user_ledger.glob("part-*.parquet"):
        namespaces = pq.read_table(part, columns=["storage_namespace"]).column(0).to_pylist()
        assert not any("/demo/storage/" in str(namespace) for namespace in namespaces), part
