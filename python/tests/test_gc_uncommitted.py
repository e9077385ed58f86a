"""Uncommitted GC end to end on the embedded Spark: CLI -> snapshot + storage listing/inventory ->
dbt models -> report and lakeFS-style outputs -> sweep of real files, against the naive oracle.
Clean and optimized runs, the subset property over random histories, bad input, S3 (moto)."""

from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterator
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakewarden.cli import main
from lakewarden.errors import BadInput
from lakewarden.jobs import gc_uncommitted
from lakewarden.sample import SampleConfig, SampleRepository, generate
from model_forms import large_repository_forms
from oracles import Snapshot, local_file, local_storage, gc_uncommitted_marked
from report_files import address_rows, marked, summary
from test_gc_uncommitted_support import Repo, rfc3339

pytestmark = pytest.mark.spark


def run_uc(snapshot: Path, state: Path, report: Path, now: datetime, *extra: str) -> int:
    return main(
        ["gc", "uncommitted", "--snapshot", str(snapshot), "--state", str(state), "--report", str(report), "--now", rfc3339(now), *extra]
    )


@contextmanager
def without_history() -> Iterator[None]:
    """A run that leaves the run history as it was (for a clean run beside an optimized chain)."""
    with mock.patch.object(gc_uncommitted, "_append_history", lambda *args, **kwargs: None):
        yield


@pytest.fixture
def sample(tmp_path: Path) -> SampleRepository:
    return generate(tmp_path / "sample", SampleConfig(seed=23, entries=600))


# -- clean runs on the sample repository ---------------------------------------------------------


def test_clean_run_deletes_exactly_the_oracle_set(spark, test_state_dir: Path, sample: SampleRepository, tmp_path: Path) -> None:
    now = sample.end + timedelta(hours=1)
    storage = local_storage(sample.namespace_path)
    snapshot = Snapshot.read(sample.snapshot_dir)
    expected = gc_uncommitted_marked(snapshot, storage, now, timedelta(hours=24))
    uploads = {(sample.namespace_path / name).as_uri(): name for name in sample.unreferenced_objects}
    old_uploads = {uri for uri, name in uploads.items() if not name.endswith("abandoned-2.bin")}
    assert old_uploads <= expected and not (set(uploads) - old_uploads) & expected

    report = tmp_path / "report"
    assert run_uc(sample.snapshot_dir, test_state_dir, report, now, "--clean") == 0  # marks, then sweeps
    rows = address_rows(report)
    assert [r["address"] for r in rows] == sorted(r["address"] for r in rows)
    assert {r["physical_address"] for r in rows} == expected
    assert all(r["address_type"] == "RELATIVE" and r["physical_address"].endswith("/" + r["address"]) for r in rows)
    result = summary(report)
    assert result["success"] and result["run_mode"] == "clean" and result["num_marked"] == len(expected)
    assert result["num_deleted"] == len(expected) and result["num_failed"] == 0
    # deleted exactly those; the young upload, everything referenced and _lakefs/ remain
    after = local_storage(sample.namespace_path)
    assert set(after) == set(storage) - expected
    assert (sample.namespace_path / "_lakefs" / "dummy-metarange").exists()
    assert all(p.exists() for p in sample.external_path.iterdir())
    # lakeFS-style outputs beside the data
    out = sample.namespace_path / "_lakefs" / "retention" / "gc" / "uncommitted" / result["run_id"]
    for name in ("uncommitted", "ranges", "deleted", "summary.json"):
        assert (out / name).exists(), name
    meta = json.loads((out / "summary.json").read_text())
    newest = max(snapshot.commits.values(), key=lambda c: (c["creation_date"], c["commit_id"]))
    assert meta["last_commit_id"] == newest["commit_id"] and meta["run_at"].startswith(rfc3339(now)[:19])
    uncommitted = {r["physical_address"] for r in spark.read.parquet(str(out / "uncommitted")).collect()}
    young_upload = set(uploads) - old_uploads
    assert expected | young_upload <= uncommitted  # young (and staged) objects stay in it for the next run
    assert len(uncommitted) == result["uncommitted_objects"] > len(expected | young_upload)


def test_staged_and_young_objects_are_kept(spark, test_state_dir: Path, sample: SampleRepository, tmp_path: Path) -> None:
    """min-age 1h: the 90-minute-old upload goes; an old upload a staged entry (FULL, s3-style
    doubled slash) holds stays, and so does everything younger than an hour."""
    snapshot_dir = tmp_path / "snapshot"
    shutil.copytree(sample.snapshot_dir, snapshot_dir)
    held = sample.namespace_path / "data" / "uploads" / "abandoned-0.bin"
    with open(snapshot_dir / "staged.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"branch_id": "main", "key": "restore/me", "address": sample.storage_namespace + "//data/uploads/abandoned-0.bin", "address_type": "FULL", "last_modified": "2025-12-31T00:00:00Z"}) + "\n")
    young = sample.namespace_path / "data" / "uploads" / "fresh.bin"
    young.write_bytes(b"new")
    now = sample.end + timedelta(hours=1)
    stamp = (now - timedelta(minutes=59)).timestamp()
    os.utime(young, (stamp, stamp))

    report = tmp_path / "report"
    assert run_uc(snapshot_dir, test_state_dir, report, now, "--min-age", "1h", "--dry-run", "--clean") == 0
    got = marked(report)
    expected = gc_uncommitted_marked(Snapshot.read(snapshot_dir), local_storage(sample.namespace_path), now, timedelta(hours=1))
    assert got == expected
    names = {uri.rsplit("/", 1)[-1] for uri in got}
    assert {"abandoned-1.bin", "abandoned-2.bin"} <= names
    assert held.as_uri() not in got and young.as_uri() not in got
    assert all(local_file(uri).exists() for uri in got)  # a dry run deletes nothing


# -- optimized runs ------------------------------------------------------------------------------


@pytest.mark.usefixtures("large_repository_forms")  # the small forms: every other test here
def test_optimized_run_after_new_commits_and_uploads(spark, test_state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lakewarden.runtime import compiled_models

    views: list[str] = []  # the key lists' views the runs make (the large form's: the keys written since)
    real_view = compiled_models.key_list_view

    def key_list_view(*args: Any, **kwargs: Any) -> str:
        query = real_view(*args, **kwargs)
        views.append(query.removeprefix("select key from "))
        return query

    monkeypatch.setattr(compiled_models, "key_list_view", key_list_view)
    repo = Repo(tmp_path / "repo", seed=5)
    repo.stage("main")
    repo.commit("main")
    lost = repo.upload()  # abandoned upload
    repo.stage("main")  # staged at run 1, committed before run 2
    dropped = repo.stage("main")  # staged at run 1, reset before run 2
    repo.create_branch("dev")
    repo.stage("dev")
    repo.commit("dev")
    repo.advance(timedelta(days=2))
    now1 = repo.clock
    first = tmp_path / "r1"
    assert run_uc(repo.write_snapshot(), test_state_dir, first, now1, "--min-age", "1h", "--dry-run") == 0
    assert summary(first)["run_mode"] == "clean"
    assert marked(first) == {(repo.namespace_path / lost).as_uri()}

    repo.advance(timedelta(hours=3))
    repo.unstage_address("main", dropped)
    repo.commit("main")  # the other staged entry is committed now
    new_lost = repo.upload()
    repo.stage("dev")
    repo.commit("dev")
    repo.copy_commit("dev")
    repo.advance(timedelta(days=1))
    young = repo.upload()  # written 10 minutes before run 2: too young
    repo.advance(timedelta(minutes=10))
    now2 = repo.clock
    snapshot = repo.write_snapshot()
    expected = gc_uncommitted_marked(Snapshot.read(snapshot), local_storage(repo.namespace_path), now2, timedelta(hours=1))
    assert expected == {(repo.namespace_path / a).as_uri() for a in (lost, dropped, new_lost)}
    assert (repo.namespace_path / young).as_uri() not in expected

    second = tmp_path / "r2"
    assert run_uc(snapshot, test_state_dir, second, now2, "--min-age", "1h", "--dry-run") == 0
    result = summary(second)
    assert result["run_mode"] == "optimized" and result["previous_run_id"] == summary(first)["run_id"]
    # where each run's time went, in the order its steps ran (docs/reports.md)
    for run in (summary(first), result):
        assert [name for name, _ in run["phase_seconds"]] == ["storage_inventory_and_models", "report_and_outputs"]
        assert all(seconds >= 0 for _, seconds in run["phase_seconds"])
    assert result["newly_read_ranges"] == 3 < result["listed_ranges"]  # only the three new commits' ranges
    assert result["new_commits"] == 3
    assert marked(second) == expected
    sources = {row["physical_address"].rsplit("/", 1)[-1]: row["candidate_source"] for row in address_rows(second)}
    assert sources[lost.rsplit("/", 1)[-1]] == "previous_uncommitted"
    assert sources[dropped.rsplit("/", 1)[-1]] == "previous_uncommitted"
    assert sources[new_lost.rsplit("/", 1)[-1]] == "created_since_previous_run"
    # the key lists' views lasted as long as their run: a long-lived session keeps none of them
    assert views and not [view for view in views if spark.catalog.tableExists(view)], views

    third = tmp_path / "r3"
    assert run_uc(snapshot, test_state_dir, third, now2, "--min-age", "1h", "--dry-run", "--clean") == 0
    assert summary(third)["run_mode"] == "clean" and marked(third) == expected

    # after a sweep, the next optimized run no longer sees the deleted objects
    assert main(["sweep", "--report", str(third), "--state", str(test_state_dir)]) == 0
    repo.advance(timedelta(hours=2))
    fourth = tmp_path / "r4"
    assert run_uc(snapshot, test_state_dir, fourth, repo.clock, "--min-age", "1h", "--dry-run") == 0
    assert summary(fourth)["run_mode"] == "optimized"
    assert marked(fourth) == {(repo.namespace_path / young).as_uri()}


def test_previous_run_in_the_future_of_now_forces_a_clean_run(spark, test_state_dir: Path, tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo", seed=6)
    repo.advance(timedelta(days=2))
    snapshot = repo.write_snapshot()
    assert run_uc(snapshot, test_state_dir, tmp_path / "r1", repo.clock + timedelta(days=1), "--dry-run") == 0
    assert run_uc(snapshot, test_state_dir, tmp_path / "r2", repo.clock, "--dry-run") == 0
    result = summary(tmp_path / "r2")
    assert result["run_mode"] == "clean" and "before the previous run" in result["run_mode_reason"]


def test_storage_clock_ahead_of_lakefs_never_unprotects_a_committed_object(spark, test_state_dir: Path, tmp_path: Path) -> None:
    """Storage stamps an object 2 minutes after the commit that references it (its clock runs
    ahead of lakeFS's), and a run comes right after that commit: the next, optimized, run must
    not take the object for one written after the previous run (and, its range read, delete it)."""
    repo = Repo(tmp_path / "repo", seed=8)
    repo.advance(timedelta(days=1))
    address = repo.stage("main")
    stamp = (repo.clock + timedelta(minutes=2)).timestamp()
    os.utime(repo.namespace_path / address, (stamp, stamp))
    repo.advance(timedelta(seconds=30))
    repo.commit("main")
    first = tmp_path / "r1"
    assert run_uc(repo.write_snapshot(), test_state_dir, first, repo.clock, "--min-age", "1h", "--dry-run") == 0
    assert summary(first)["run_mode"] == "clean" and not marked(first)

    repo.advance(timedelta(days=2))
    snapshot = repo.write_snapshot()
    second = tmp_path / "r2"
    assert run_uc(snapshot, test_state_dir, second, repo.clock, "--min-age", "1h", "--dry-run") == 0
    assert summary(second)["run_mode"] == "optimized"
    assert gc_uncommitted_marked(Snapshot.read(snapshot), local_storage(repo.namespace_path), repo.clock, timedelta(hours=1)) == set()
    assert marked(second) == set(), "a committed object was marked"


def test_committed_object_rewritten_in_place_stays_kept_in_later_runs(spark, test_state_dir: Path, tmp_path: Path) -> None:
    """A committed object rewritten in place after run 1 (same address, a later storage time) is
    written since run 1 to run 2, whose check against every entry keeps it. Run 2's uncommitted
    inventory must not carry it either: run 3 takes that inventory's objects as referenced by no
    range read before, and would mark it."""
    repo = Repo(tmp_path / "repo", seed=9)
    repo.advance(timedelta(days=1))
    address = repo.stage("main")
    repo.commit("main")
    repo.advance(timedelta(days=1))
    first = tmp_path / "r1"
    assert run_uc(repo.write_snapshot(), test_state_dir, first, repo.clock, "--min-age", "1h", "--dry-run") == 0
    assert summary(first)["run_mode"] == "clean" and not marked(first)

    repo.advance(timedelta(days=1))
    stamp = repo.clock.timestamp()  # rewritten in place, a day after run 1
    os.utime(repo.namespace_path / address, (stamp, stamp))
    repo.advance(timedelta(days=1))
    snapshot = repo.write_snapshot()
    for number in (2, 3):
        report = tmp_path / f"r{number}"
        assert run_uc(snapshot, test_state_dir, report, repo.clock, "--min-age", "1h", "--dry-run") == 0
        assert summary(report)["run_mode"] == "optimized"
        assert marked(report) == set(), f"run {number} marked a committed object"
        repo.advance(timedelta(days=1))


def entry_key_runs(report: Path) -> list[str]:
    """The runs whose entry keys cover every range the run of ``report`` has read."""
    output_dir = Path(summary(report)["output_dir"])
    return json.loads((output_dir / gc_uncommitted.ENTRY_KEY_RUNS_FILE).read_text())["runs"]


def entry_key_count(report: Path) -> int:
    import pyarrow.parquet as pq

    return pq.read_table(Path(summary(report)["output_dir"]) / gc_uncommitted.ENTRY_KEYS_DIR).num_rows


def test_entry_keys_chain_continues_restarts_and_recovers(spark, test_state_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """Each run keeps the keys of the entries of the ranges it keyed and the runs whose keys cover
    every range it has read. An optimized run continues that chain (keying only the ranges it
    reads); one whose chain has reached MAX_ENTRY_KEY_RUNS keys every range again and starts a
    new one; and one whose chain lost a run's keys does not trust it: it checks the objects
    written since against every entry itself. The marks are the oracle's throughout, and an
    object written since that only an old range references (rewritten in place) stays kept."""
    monkeypatch.setattr(gc_uncommitted, "MAX_ENTRY_KEY_RUNS", 2)
    repo = Repo(tmp_path / "repo", seed=12)
    repo.advance(timedelta(days=1))
    rewritten = repo.stage("main")
    repo.commit("main")
    repo.upload()
    repo.advance(timedelta(days=2))

    def run(number: int) -> Path:
        snapshot = repo.write_snapshot()
        report = tmp_path / f"r{number}"
        assert run_uc(snapshot, test_state_dir, report, repo.clock, "--min-age", "1h", "--dry-run") == 0
        expected = gc_uncommitted_marked(Snapshot.read(snapshot), local_storage(repo.namespace_path), repo.clock, timedelta(hours=1))
        assert marked(report) == expected
        assert (repo.namespace_path / rewritten).as_uri() not in marked(report)
        repo.advance(timedelta(hours=1))  # what follows is written after this run
        return report

    def all_entries() -> int:
        return sum(len(entries) for entries in repo.ranges.values())

    first = run(1)
    assert summary(first)["run_mode"] == "clean"
    assert entry_key_runs(first) == [summary(first)["run_id"]] and entry_key_count(first) == all_entries()

    repo.stage("main")
    repo.commit("main")
    repo.upload()
    stamp = repo.clock.timestamp()  # the committed object rewritten in place after run 1
    os.utime(repo.namespace_path / rewritten, (stamp, stamp))
    repo.advance(timedelta(days=1))
    second = run(2)
    assert "the entry keys of 1 run(s)" in summary(second)["run_mode_reason"]
    assert entry_key_runs(second) == [summary(first)["run_id"], summary(second)["run_id"]]
    assert entry_key_count(second) == summary(second)["newly_read_ranges"] == 1  # the new commit's range: one entry

    repo.upload()
    repo.advance(timedelta(days=1))
    third = run(3)  # a chain of MAX_ENTRY_KEY_RUNS runs: used, then started again
    assert "the entry keys of 2 run(s)" in summary(third)["run_mode_reason"]
    assert entry_key_runs(third) == [summary(third)["run_id"]] and entry_key_count(third) == all_entries()

    (Path(summary(third)["output_dir"]) / gc_uncommitted.ENTRY_KEYS_DIR / "_SUCCESS").unlink()
    repo.upload()
    repo.advance(timedelta(days=1))
    fourth = run(4)  # run 3's keys lost: every entry checked, and a new chain
    assert "entry keys" in summary(fourth)["run_mode_reason"] and "missing" in summary(fourth)["run_mode_reason"]
    assert summary(fourth)["run_mode"] == "optimized"
    assert entry_key_runs(fourth) == [summary(fourth)["run_id"]] and entry_key_count(fourth) == all_entries()


# -- property: optimized is always a subset of clean -----------------------------------------------

OPERATIONS = st.sampled_from(
    ["upload", "upload", "stage", "stage_full", "unstage", "commit", "commit", "copy", "late_commit", "branch", "delete_branch", "delete_object", "stage_external"]
)


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    large=st.booleans(),  # the forms of a large repository (model_forms.py)
    seed=st.integers(min_value=0, max_value=10_000),
    steps=st.lists(
        st.tuples(
            st.lists(OPERATIONS, min_size=1, max_size=8),
            st.sampled_from([timedelta(minutes=20), timedelta(hours=2), timedelta(days=1), timedelta(days=3)]),
            st.sampled_from(["1h", "2h", "24h"]),
            st.booleans(),  # sweep the optimized run's marks afterwards
        ),
        min_size=2,
        max_size=3,
    ),
)
def test_optimized_run_is_always_a_subset_of_a_clean_run(spark, test_state_dir: Path, tmp_path_factory, seed: int, steps, large: bool) -> None:
    with large_repository_forms(large):
        root = tmp_path_factory.mktemp("history")
        repo = Repo(root / "repo", seed=seed)
        rng = repo.rng
        for number, (operations, delta, min_age, sweep) in enumerate(steps):
            for operation in operations:
                branch = rng.choice(sorted(repo.branches))
                if operation == "upload":
                    repo.upload()
                elif operation in ("stage", "stage_full"):
                    repo.stage(branch, full=operation == "stage_full")
                elif operation == "stage_external":
                    repo.stage(branch, address=repo.external())
                elif operation == "unstage":
                    repo.unstage(branch)
                elif operation == "commit":
                    repo.commit(branch)
                elif operation == "copy":
                    repo.copy_commit(branch)
                elif operation == "late_commit":
                    repo.commit(branch, late=True)  # may show up after a run yet be dated before it
                elif operation == "branch":
                    repo.create_branch(f"b{repo.counter}", branch)
                elif operation == "delete_branch" and branch != "main":
                    repo.delete_branch(branch)
                elif operation == "delete_object" and repo.uploads:
                    repo.delete_object(rng.choice(repo.uploads))
                repo.advance(timedelta(minutes=rng.randrange(1, 90)))
            repo.advance(delta)
            now = max(repo.clock, max(datetime.fromisoformat(c["creation_date"].replace("Z", "+00:00")) for c in repo.commits))
            snapshot = repo.write_snapshot()
            age = gc_uncommitted.parse_min_age(min_age)
            oracle = gc_uncommitted_marked(Snapshot.read(snapshot), local_storage(repo.namespace_path), now, age)

            optimized = root / f"opt-{number}"
            assert run_uc(snapshot, test_state_dir, optimized, now, "--min-age", min_age, "--dry-run") == 0
            assert summary(optimized)["run_mode"] == ("clean" if number == 0 else "optimized")
            clean = root / f"clean-{number}"
            with without_history():
                assert run_uc(snapshot, test_state_dir, clean, now, "--min-age", min_age, "--dry-run", "--clean") == 0
            assert marked(clean) == oracle
            assert marked(optimized) <= marked(clean), marked(optimized) - marked(clean)
            if sweep and marked(optimized):
                assert main(["sweep", "--report", str(optimized), "--state", str(test_state_dir)]) == 0


# -- bad input -------------------------------------------------------------------------------------


def test_min_age_parsing() -> None:
    assert gc_uncommitted.parse_min_age("24h") == timedelta(hours=24)
    assert gc_uncommitted.parse_min_age("1h30m") == timedelta(minutes=90)
    assert gc_uncommitted.parse_min_age("2d") == timedelta(days=2)
    assert gc_uncommitted.parse_min_age("3600s") == timedelta(hours=1)
    assert gc_uncommitted.parse_min_age("3600") == timedelta(hours=1)  # seconds, as everywhere
    assert gc_uncommitted.parse_min_age("10m", force=True) == timedelta(minutes=10)
    assert gc_uncommitted.parse_min_age("0s", force=True) == timedelta(0)
    for text in ("", "soon", "-1h", "1h30", "h", "1e9999"):
        with pytest.raises(BadInput, match="--min-age"):
            gc_uncommitted.parse_min_age(text)
    for text in ("59m", "24", "0s"):
        with pytest.raises(BadInput, match="below 1h"):
            gc_uncommitted.parse_min_age(text)


@pytest.mark.parametrize("min_age", ["30m", "0s", "soon"])
def test_min_age_below_an_hour_needs_force(sample: SampleRepository, test_state_dir: Path, tmp_path: Path, capsys, min_age: str) -> None:
    before = local_storage(sample.namespace_path)
    code = run_uc(sample.snapshot_dir, test_state_dir, tmp_path / "report", sample.end + timedelta(days=30), "--min-age", min_age)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--min-age" in err[0], err
    assert not (tmp_path / "report").exists()
    assert local_storage(sample.namespace_path) == before


# S3 Inventory reports for a repository on s3://source-bucket/repo/ns (test_inventory's layout)
from test_inventory import BUCKET, CREATED, T0, _rewrite_manifest, write_inventory  # noqa: E402


def s3_repo(root: Path, bucket: str = BUCKET) -> Repo:
    """A repository on ``s3://<bucket>/repo/ns`` (test_inventory's layout) whose entries reference
    data/a and stage data/with space."""
    repo = Repo(root, namespace=f"s3://{bucket}/repo/ns", write_objects=False, genesis=False)
    repo.clock = T0 + timedelta(hours=1)
    repo.stage("main", address="data/a")
    repo.commit("main")
    repo.stage("main", address=f"s3a://{bucket}/repo/ns/data//with space")
    repo.write_snapshot()
    return repo


def test_inventory_report_drives_a_clean_run(spark, test_state_dir: Path, tmp_path: Path) -> None:
    repo = s3_repo(tmp_path / "repo")
    manifest = write_inventory(tmp_path / "inventory", "Parquet")
    now = T0 + timedelta(days=2)
    report = tmp_path / "report"
    assert run_uc(repo.snapshot_dir, test_state_dir, report, now, "--inventory", str(manifest), "--dry-run", "--clean") == 0
    # of test_inventory's objects inside the namespace: data/a is committed, "with space" staged
    assert marked(report) == {f"s3://{BUCKET}/repo/ns/data/plus+sign", f"s3://{BUCKET}/repo/ns/data/ünï"}
    assert summary(report)["storage_observed_at"].startswith("2026-01-03T15:04:05")  # the manifest's creationTimestamp
    assert CREATED.isoformat().startswith("2026-01-03T15:04:05")


def test_the_same_inventory_report_again_starts_from_the_previous_uncommitted_inventory(spark, test_state_dir: Path, tmp_path: Path) -> None:
    """A run given its previous run's report again does not read the report's rows: it
    considers the previous uncommitted inventory, and still subtracts the ranges new since (an
    object committed since is kept) and the staged entries of now."""
    repo = s3_repo(tmp_path / "repo")
    manifest = write_inventory(tmp_path / "inventory", "Parquet")
    now = T0 + timedelta(days=2)
    first = tmp_path / "r1"
    assert run_uc(repo.snapshot_dir, test_state_dir, first, now, "--inventory", str(manifest), "--dry-run", "--clean") == 0
    assert summary(first)["run_mode"] == "clean" and summary(first)["storage_read"] == "inventory report"
    expected = {f"s3://{BUCKET}/repo/ns/data/plus+sign", f"s3://{BUCKET}/repo/ns/data/ünï"}
    assert marked(first) == expected

    second = tmp_path / "r2"
    assert run_uc(repo.snapshot_dir, test_state_dir, second, now, "--inventory", str(manifest), "--dry-run") == 0
    result = summary(second)
    assert result["run_mode"] == "optimized" and "same inventory report" in result["storage_read"]
    assert result["ranges_read"] == 0 and marked(second) == expected

    repo.advance(timedelta(minutes=5))
    repo.stage("main", address="data/plus+sign", key="tables/main/plus")  # committed since run 2: a range no run has read
    repo.commit("main")
    repo.stage("main", address="data/ünï", key="tables/main/uni")  # staged now
    third = tmp_path / "r3"
    assert run_uc(repo.write_snapshot(), test_state_dir, third, now + timedelta(hours=1), "--inventory", str(manifest), "--dry-run") == 0
    result = summary(third)
    assert "same inventory report" in result["storage_read"] and result["ranges_read"] == 1
    clean = tmp_path / "r4"
    with without_history():
        assert run_uc(repo.snapshot_dir, test_state_dir, clean, now + timedelta(hours=1), "--inventory", str(manifest), "--dry-run", "--clean") == 0
    assert marked(clean) == set()
    assert marked(third) == set()


def _checksum_mismatch(manifest: Path) -> str:
    (manifest.parent / "manifest.checksum").write_text("0" * 32 + "\n")
    return "manifest.checksum: md5: checksum mismatch"


def _missing_data_file(manifest: Path) -> str:
    key = json.loads(manifest.read_text())["files"][0]["key"]
    for path in manifest.parents[3].rglob(Path(key).name):
        path.unlink()
    return "files[0].key: missing data file"


def _no_key_field(manifest: Path) -> str:
    _rewrite_manifest(manifest, fileSchema="Bucket, Size, LastModifiedDate")
    return "fileSchema: has no Key field"


def _too_old(manifest: Path) -> str:
    """Taken 36 hours before --now (T0 + 2 days): the default --min-age (24h) refuses it, as for
    Azure and GCS reports."""
    taken = T0 + timedelta(hours=12)
    _rewrite_manifest(manifest, creationTimestamp=str(int(taken.timestamp() * 1000)))
    return f"manifest.json: creationTimestamp: inventory taken at {taken.isoformat()} is older than --min-age allows (1 day, 0:00:00)"


#: test_inventory's objects inside the namespace, stored in the test bucket (the inventory lists them)
STORED = ["repo/ns/data/a", "repo/ns/data/with space", "repo/ns/data/plus+sign", "repo/ns/data/ünï", "repo/ns/_lakefs/meta"]


def _inventory_run_on_s3(spark, test_state_dir: Path, tmp_path: Path, s3_endpoint: str, monkeypatch, damage) -> tuple[int, str, set[str], str | None]:
    """A real (not dry) run on a moto bucket holding STORED, from an S3 Inventory report damaged
    by ``damage`` (None: intact). Returns the exit code, the bucket, the keys left and the
    expected error message; asserts no run history or outputs appear unless the run succeeded."""
    from test_sweep_support import S3_ENV, list_keys, new_bucket, put_keys

    for name, value in S3_ENV.items():
        monkeypatch.setenv(name, value)
        # as if the process had started with these credentials: the sweep's Python workers get
        # their environment from the JVM (started earlier by the session), plus this mapping
        monkeypatch.setitem(spark.sparkContext.environment, name, value)
    bucket = new_bucket(s3_endpoint)
    put_keys(s3_endpoint, bucket, STORED)
    repo = s3_repo(tmp_path / "repo", bucket)
    message = None
    if damage == "other-bucket":
        manifest = write_inventory(tmp_path / "inventory", "CSV", bucket="other-bucket")
        message = "sourceBucket: inventory of bucket 'other-bucket'"
    else:
        manifest = write_inventory(tmp_path / "inventory", "CSV", bucket=bucket)
        if damage is not None:
            message = damage(manifest)
    outputs = test_state_dir / "retention" / "gc" / "uncommitted"
    outputs_before = set(outputs.iterdir()) if outputs.is_dir() else set()
    report = tmp_path / "report"
    code = run_uc(
        repo.snapshot_dir, test_state_dir, report, T0 + timedelta(days=2), "--inventory", str(manifest), "--clean", "--s3-endpoint", s3_endpoint, "--s3-region", "us-east-1"
    )
    history = spark.table(gc_uncommitted.RUNS_TABLE).where(f"storage_namespace = 's3://{bucket}/repo/ns'").count() if spark.catalog.tableExists(gc_uncommitted.RUNS_TABLE) else 0
    outputs_after = set(outputs.iterdir()) if outputs.is_dir() else set()
    if code != 0:
        assert not report.exists()
        assert history == 0 and outputs_after == outputs_before
    else:
        assert history == 1 and len(outputs_after - outputs_before) == 1
    return code, bucket, list_keys(s3_endpoint, bucket), message


def test_intact_inventory_on_s3_marks_and_sweeps(spark, test_state_dir: Path, tmp_path: Path, s3_endpoint: str, monkeypatch) -> None:
    """The control for the bad-input cases below: the same set-up with an intact report deletes."""
    code, bucket, left, _ = _inventory_run_on_s3(spark, test_state_dir, tmp_path, s3_endpoint, monkeypatch, None)
    assert code == 0
    assert left == set(STORED) - {"repo/ns/data/plus+sign", "repo/ns/data/ünï"}
    assert summary(tmp_path / "report")["num_deleted"] == 2


@pytest.mark.parametrize(
    "damage",
    [_checksum_mismatch, _missing_data_file, _no_key_field, _too_old, "other-bucket"],
    ids=["checksum-mismatch", "missing-data-file", "schema-without-key", "too-old-for-min-age", "other-bucket"],
)
def test_bad_inventory_exits_2_and_deletes_nothing(spark, test_state_dir: Path, tmp_path: Path, capsys, s3_endpoint: str, monkeypatch, damage) -> None:
    code, bucket, left, message = _inventory_run_on_s3(spark, test_state_dir, tmp_path, s3_endpoint, monkeypatch, damage)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert left == set(STORED)  # nothing deleted (no run history, no outputs, no report: checked above)


# -- S3 (moto server on 127.0.0.1) ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def s3_endpoint(request: pytest.FixtureRequest) -> str:
    from test_sweep_support import moto_endpoint

    return moto_endpoint(request)


def test_s3_namespace_listed_marked_and_swept(spark, test_state_dir: Path, tmp_path: Path, s3_endpoint: str, monkeypatch) -> None:
    from lakewarden.jobs.common import run_options_from_args, start_job
    from lakewarden.sweep import sweep_report
    from test_sweep_support import S3_ENV, list_keys, new_bucket, put_keys, s3_options

    for name, value in S3_ENV.items():
        monkeypatch.setenv(name, value)
    bucket = new_bucket(s3_endpoint)
    namespace = f"s3://{bucket}/repo/ns"
    repo = Repo(tmp_path / "repo", namespace=namespace, write_objects=False)  # genesis commits repo.uploads[0]
    repo.stage("main")  # staged
    abandoned = [f"data/lost/{i}" for i in range(5)]
    keys = [*repo.uploads, *abandoned, "_lakefs/meta", "other/outside-ns"]
    put_keys(s3_endpoint, bucket, [f"repo/ns/{k}" for k in keys[:-1]] + [keys[-1]])
    snapshot = repo.write_snapshot()

    args = gc_uncommitted_args(["--snapshot", str(snapshot), "--state", str(test_state_dir), "--report", str(tmp_path / "report"), "--min-age", "0s", "--force", "--clean"])
    context = start_job(run_options_from_args(args), gc_uncommitted.JOB)
    options = s3_options(s3_endpoint)
    result = gc_uncommitted.mark_uncommitted(context, min_age=timedelta(0), clean=True, report_dir=args.report, s3_options=options)
    assert marked(result.report.directory, "address") == set(abandoned)
    outcome = sweep_report(spark, result.report.directory, deleter_options=options)
    assert outcome.num_deleted == len(abandoned) and outcome.num_failed == 0
    assert list_keys(s3_endpoint, bucket) == {f"repo/ns/{k}" for k in repo.uploads} | {"repo/ns/_lakefs/meta", "other/outside-ns"}
    # outputs of a remote namespace live under the state dir
    assert (test_state_dir / "retention" / "gc" / "uncommitted" / context.run_id / "uncommitted").is_dir()


def gc_uncommitted_args(argv: list[str]):
    from lakewarden.cli import build_parser

    return build_parser().parse_args(["gc", "uncommitted", *argv])
