"""Committed GC end to end on the embedded Spark: CLI -> snapshot load -> dbt models -> report
-> sweep of real files, checked against the naive oracle; bad input changes nothing; plain
``dbt build`` (Python models, data tests, unit tests) passes on a loaded sample."""

from __future__ import annotations

import csv
import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakewarden.cli import main
from lakewarden.sample import SampleConfig, SampleRepository, generate
from oracles import Snapshot, committed_gc_active, committed_gc_marked, local_file

pytestmark = pytest.mark.spark

RULES = {"default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 14}]}


def rfc3339(moment) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def read_addresses(report: Path) -> list[dict[str, str]]:
    with open(report / "addresses.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def run_gc(sample: SampleRepository, state: Path, report: Path, *extra: str, rules: dict | None = RULES) -> int:
    args = ["gc", "committed", "--snapshot", str(sample.snapshot_dir), "--state", str(state), "--report", str(report)]
    if rules is not None:
        rules_path = report.parent / f"{report.name}-rules.json"
        rules_path.write_text(json.dumps(rules))
        args += ["--rules", str(rules_path)]
    return main([*args, *extra])


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> SampleRepository:
    return generate(tmp_path_factory.mktemp("sample"), SampleConfig(seed=11))


def test_dry_run_marks_exactly_what_the_oracle_marks_then_sweep_deletes_only_that(
    spark, test_state_dir: Path, sample: SampleRepository, tmp_path: Path
) -> None:
    now = sample.end + timedelta(days=1)
    report = tmp_path / "report"
    assert run_gc(sample, test_state_dir, report, "--now", rfc3339(now), "--dry-run") == 0

    snapshot = Snapshot.read(sample.snapshot_dir)
    expected = committed_gc_marked(snapshot, now, RULES)
    rows = read_addresses(report)
    assert [r["address"] for r in rows] == sorted(r["address"] for r in rows), "addresses.csv must be sorted"
    marked = {r["physical_address"] for r in rows}
    assert marked == expected
    assert expected, "the sample must give the GC something to delete"

    active = committed_gc_active(snapshot, now, RULES)
    live = snapshot.addresses_of(active) | snapshot.staged_addresses()
    assert not marked & live, "a live object was marked"

    summary = json.loads((report / "summary.json").read_text())
    assert summary["success"] is True and summary["dry_run"] is True
    assert summary["num_marked"] == len(expected) and summary["num_deleted"] == 0
    assert summary["active_commits"] == len(active)
    for key in ("run_id", "job", "now", "num_failed", "started_at", "finished_at"):
        assert key in summary
    # lakeFS-style outputs beside the data
    gc_dir = sample.namespace_path / "_lakefs" / "retention" / "gc"
    assert (gc_dir / "commits" / f"run_id={summary['run_id']}").is_dir()
    assert (gc_dir / "addresses" / f"mark_id={summary['run_id']}").is_dir()
    # the dry run deleted nothing
    assert all(local_file(uri).exists() for uri in marked)

    assert main(["sweep", "--report", str(report), "--state", str(test_state_dir)]) == 0
    assert not any(local_file(uri).exists() for uri in marked)
    for uri in live:
        assert local_file(uri).exists(), f"live object deleted: {uri}"
    assert (sample.namespace_path / "_lakefs" / "dummy-metarange").exists()
    assert all(p.exists() for p in sample.external_path.iterdir())
    swept = json.loads((report / "summary.json").read_text())
    assert swept["num_deleted"] == len(expected) and swept["num_failed"] == 0


def test_without_rules_nothing_expires(spark, test_state_dir: Path, sample: SampleRepository, tmp_path: Path) -> None:
    report = tmp_path / "report"
    assert run_gc(sample, test_state_dir, report, "--now", rfc3339(sample.end + timedelta(days=3650)), "--dry-run", rules=None) == 0
    assert read_addresses(report) == []
    assert json.loads((report / "summary.json").read_text())["expired_commits"] == 0


def corrupt_copy(sample: SampleRepository, tmp_path: Path) -> Path:
    target = tmp_path / "snapshot"
    shutil.copytree(sample.snapshot_dir, target)
    return target


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: (d / "staged.jsonl").unlink(), "missing table 'staged'"),
        (lambda d: (d / "repository.json").write_text("{}"), "repository.json: repository_id"),
        (
            lambda d: (d / "commits.jsonl").write_text(
                (d / "commits.jsonl").read_text().replace('"parents": []', '"parents": ["feedface"]', 1)
            ),
            "parent 'feedface'",
        ),
        (lambda d: (d / "commits.jsonl").write_text("{not json\n"), "commits.jsonl: malformed"),
        (lambda d: (d / "ranges.jsonl").write_text(""), "which has no entries in the snapshot"),
    ],
    ids=["missing-table", "bad-repository", "missing-parent", "malformed-jsonl", "missing-ranges"],
)
def test_bad_snapshot_exits_2_and_changes_nothing(
    spark, test_state_dir: Path, sample: SampleRepository, tmp_path: Path, capsys, damage, message
) -> None:
    snapshot = corrupt_copy(sample, tmp_path)
    damage(snapshot)
    broken = SampleRepository(**{**sample.__dict__, "snapshot_dir": snapshot})
    before = sorted(p for p in sample.namespace_path.rglob("*") if p.is_file())
    code = run_gc(broken, test_state_dir, tmp_path / "report", "--now", rfc3339(sample.end + timedelta(days=1)))
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    after = sorted(p for p in sample.namespace_path.rglob("*") if p.is_file())
    assert before == after


def test_now_before_newest_commit_is_refused(spark, test_state_dir: Path, sample: SampleRepository, tmp_path: Path, capsys) -> None:
    code = run_gc(sample, test_state_dir, tmp_path / "report", "--now", rfc3339(sample.end - timedelta(days=30)), "--dry-run")
    assert code == 2
    assert "before the newest commit" in capsys.readouterr().err


def test_bad_rules_fail_before_spark_work(test_state_dir: Path, sample: SampleRepository, tmp_path: Path, capsys) -> None:
    code = run_gc(sample, test_state_dir, tmp_path / "report", "--dry-run", rules={"default_retention_days": -3})
    assert code == 2
    assert "default_retention_days: must not be negative" in capsys.readouterr().err
    assert not (tmp_path / "report").exists()


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(min_value=0, max_value=10_000),
    default_days=st.integers(min_value=0, max_value=20),
    main_days=st.integers(min_value=0, max_value=30),
    retain_tags=st.booleans(),
)
def test_property_random_histories_never_mark_live_objects(
    spark, test_state_dir: Path, tmp_path_factory, seed: int, default_days: int, main_days: int, retain_tags: bool
) -> None:
    workdir = tmp_path_factory.mktemp("prop")
    sample = generate(
        workdir, SampleConfig(seed=seed, entries=600, slots=5, days=20, feature_branches=4, write_objects=False)
    )
    rules = {"default_retention_days": default_days, "branches": [{"branch_id": "main", "retention_days": main_days}]}
    now = sample.end + timedelta(hours=seed % 72)
    extra = [] if retain_tags else ["--no-retain-tags"]
    assert run_gc(sample, test_state_dir, workdir / "report", "--now", rfc3339(now), "--dry-run", *extra, rules=rules) == 0
    snapshot = Snapshot.read(sample.snapshot_dir)
    marked = {r["physical_address"] for r in read_addresses(workdir / "report")}
    active = committed_gc_active(snapshot, now, rules, retain_tags)
    assert set(snapshot.branches.values()) <= active
    live = snapshot.addresses_of(active) | snapshot.staged_addresses()
    assert not marked & live
    assert all(snapshot.inside_namespace(a) for a in marked)
    assert marked == committed_gc_marked(snapshot, now, rules, retain_tags)


def test_plain_dbt_build_passes_including_python_models_and_unit_tests(spark, test_state_dir: Path, sample, tmp_path) -> None:
    """`dbt build` over the whole project, as CI and users run it, on the last loaded snapshot."""
    from lakewarden.project import run_dbt

    report = tmp_path / "report"
    assert run_gc(sample, test_state_dir, report, "--now", rfc3339(sample.end + timedelta(days=1)), "--dry-run") == 0
    results = run_dbt(["build"], state=test_state_dir, variables={"now": rfc3339(sample.end + timedelta(days=1))})
    names = {r.node.name for r in results.results}
    assert {"int_commit_branch_sets", "int_branch_set_members", "int_gc_active_commits"} <= names
    assert any(r.node.resource_type == "unit_test" for r in results.results)
    assert all(str(r.status) in ("success", "pass") for r in results.results)
    members = spark.table("lakewarden.int_branch_set_members")
    assert members.where("branch_id = 'main'").count() >= 1
