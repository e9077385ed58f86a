"""End to end, as a user runs it: ``lakewarden extract`` from a lakeFS, then the jobs.

lakeFS is the fake of fake_lakefs.py (lakeFS's endpoints, lakeFS's files in the namespace) with
the scenario of :func:`fake_lakefs.build_scenario`: a deleted branch whose tip is 2 days old, a
commit that empties the tree, a version-0 merge on main, staged objects on two branches (a new
path and an overwrite), ``dummy`` at the namespace root and truly abandoned objects. The
expected answers come from the fake (what lakeFS's GC computes), never from lakewarden.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fake_lakefs import SCENARIO_NOW, LocalNamespace, S3Namespace, Scenario, build_scenario, use_scenario_credentials
from lakewarden.cli import main
import report_files
from test_sweep_support import S3_ENV, moto_endpoint, new_bucket, s3_client_for

pytestmark = pytest.mark.spark
NOW = SCENARIO_NOW.isoformat().replace("+00:00", "Z")


@pytest.fixture
def creds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_scenario_credentials(monkeypatch, tmp_path)


def _extract(scenario: Scenario, endpoint: str, out: Path, *extra: str) -> None:
    code = main(["extract", "--lakefs-endpoint", endpoint, "--repo", scenario.fake.repo_id, "--out", str(out),
                 "--cache-dir", str(out.parent / "range-cache"), *extra])
    assert code == 0


def _job(*args: str) -> int:
    return main([*args, "--now", NOW, "--dry-run"])


@pytest.mark.parametrize("scheme", ["file", "local"])
def test_extract_then_gc_marks_what_lakefs_would(
    spark: Any, test_state_dir: Path, creds: None, scheme: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a file:// namespace, and on lakeFS's local blockstore (local://, what a quickstart uses)."""
    if scheme == "local":
        blockstore = tmp_path / "blockstore"
        namespace = LocalNamespace(blockstore / "repo1", uri="local://repo1")
        extra: tuple[str, ...] = ("--local-blockstore", str(blockstore))
    else:
        namespace, extra = LocalNamespace(tmp_path / "storage" / "ns"), ()
    scenario = build_scenario(namespace)
    server = scenario.fake.serve()
    try:
        _check_jobs_on(scenario, server.endpoint, test_state_dir, tmp_path, capsys, extra)
    finally:
        server.stop()


def _check_jobs_on(
    scenario: Scenario, endpoint: str, test_state_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    extra: tuple[str, ...],
) -> None:
    addr = scenario.addresses
    snapshot = tmp_path / "snap"
    _extract(scenario, endpoint, snapshot, *extra)
    state = str(test_state_dir)

    # Uncommitted GC, listing the namespace: exactly the abandoned objects. Not the young one,
    # not dummy, not _lakefs/ (lakeFS's own GC files included), not the staged new path or
    # overwrite, not the objects of the deleted branch's 2-day-old tip.
    report = tmp_path / "uncommitted"
    code = _job("gc", "uncommitted", "--snapshot", str(snapshot), "--state", state, "--report", str(report), *extra)
    assert code == 0, capsys.readouterr().err
    marked = report_files.marked(report, "address")
    assert marked == scenario.abandoned
    assert not marked & {addr["X1"], addr["D1"], addr["B2"], "dummy"}

    # Committed GC with the repository's rules: exactly what lakeFS's retention expires.
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(scenario.rules))
    report = tmp_path / "committed"
    code = _job("gc", "committed", "--snapshot", str(snapshot), "--state", state, "--rules", str(rules), "--report", str(report), *extra)
    assert code == 0, capsys.readouterr().err
    marked = report_files.marked(report, "address")
    assert scenario.committed_marked == {addr["A1"], addr["F1"]}  # the scenario is what it says
    assert marked == scenario.committed_marked
    assert addr["A2"] not in marked  # only M's main parent (m2, the LAST of [s1, m2]) holds it
    assert addr["X1"] not in marked  # the dangling tip is 2 days old: kept by the default 7 days

    # The same job straight from lakeFS (it extracts first): the same answer.
    if extra:  # once is enough (a Spark job costs ~1 min here)
        return
    report = tmp_path / "committed-live"
    code = _job("gc", "committed", "--lakefs-endpoint", endpoint, "--repo", scenario.fake.repo_id, "--state", state,
                "--rules", str(rules), "--report", str(report), "--cache-dir", str(tmp_path / "range-cache"), *extra)
    assert code == 0, capsys.readouterr().err
    assert report_files.marked(report, "address") == scenario.committed_marked


def test_s3_repository_runs_every_job(
    spark: Any, test_state_dir: Path, creds: None, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in S3_ENV.items():
        monkeypatch.setenv(name, value)
        # as if the process had started with these credentials: Spark's Python workers get their
        # environment from the JVM (started earlier by the session), plus this mapping
        monkeypatch.setitem(spark.sparkContext.environment, name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    s3 = moto_endpoint(request)
    bucket = new_bucket(s3)
    scenario = build_scenario(S3Namespace(s3_client_for(s3), bucket, "repos/repo1"))
    server = scenario.fake.serve()
    try:
        snapshot = tmp_path / "snap"
        _extract(scenario, server.endpoint, snapshot, "--s3-endpoint", s3, "--s3-region", "us-east-1")
    finally:
        server.stop()
    state = str(test_state_dir)
    s3_args = ("--s3-endpoint", s3, "--s3-region", "us-east-1")

    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(scenario.rules))
    code = _job("gc", "committed", "--snapshot", str(snapshot), "--state", state, "--rules", str(rules),
                "--report", str(tmp_path / "committed"))
    assert code == 0, capsys.readouterr().err
    assert report_files.marked(tmp_path / "committed", "address") == scenario.committed_marked

    # The S3 server stamps objects with its own (current) clock, later than the scenario's: every
    # object is younger than --min-age there, so nothing is old enough to mark.
    code = _job("gc", "uncommitted", "--snapshot", str(snapshot), "--state", state, *s3_args,
                "--report", str(tmp_path / "uncommitted"))
    assert code == 0, capsys.readouterr().err
    assert report_files.marked(tmp_path / "uncommitted", "address") <= scenario.abandoned

    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"csv": {"prefix": "a", "days": 30, "enabled": True, "branch_days": {"dev": 60}}}))
    code = _job("lifecycle", "--snapshot", str(snapshot), "--state", state, "--policy", str(policy),
                "--report", str(tmp_path / "lifecycle"))
    assert code == 0, capsys.readouterr().err
    assert report_files.summary(tmp_path / "lifecycle")["success"] is True
