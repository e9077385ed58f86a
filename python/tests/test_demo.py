"""`lakewarden demo` (the README's first command) end to end: every job marks, explains and
sweeps on the sample repository, and the objects the jobs say they deleted are gone."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from lakewarden.cli import main
from oracles import local_file

pytestmark = pytest.mark.spark

JOBS = ("gc-committed", "gc-uncommitted", "lifecycle")


def test_demo_runs_every_job_and_deletes_what_it_reports(spark, test_state_dir: Path, capsys) -> None:
    assert main(["demo", "--state", str(test_state_dir), "--entries", "800", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    for heading in ("committed retention GC: dry run", "uncommitted GC: dry run", "lifecycle policy"):
        assert heading in out
    reports = test_state_dir / "demo" / "reports"
    for job in JOBS:
        summary = json.loads((reports / job / "summary.json").read_text())
        assert summary["job"] == job and summary["dry_run"] is True
        assert summary["success"] is True and summary["num_failed"] == 0, job
        assert summary["num_marked"] > 0, f"the demo should show {job} deleting something"
        with open(reports / job / "sweep" / "outcomes.csv", newline="", encoding="utf-8") as handle:
            outcomes = list(csv.DictReader(handle))
        assert len(outcomes) == summary["num_marked"] and {row["status"] for row in outcomes} == {"deleted"}
        assert not any(local_file(row["physical_address"]).exists() for row in outcomes)
    assert (test_state_dir / "demo" / "storage" / "sample-repo" / "_lakefs").is_dir()
