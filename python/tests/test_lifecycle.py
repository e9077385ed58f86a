"""Lifecycle policy job end to end on the embedded Spark: CLI -> snapshot + policy -> dbt models ->
report, ledger and lakeFS-style outputs -> sweep of real files, checked against the independent
oracle (lifecycle_oracle). A sequence of runs on one state dir (dry run, first run, a day later,
a policy change), the seed/complete worked example, --full, properties over random histories,
bad input."""

from __future__ import annotations

import csv
import json
import logging
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lakewarden.cli import main
from lakewarden.jobs import common as job_common
from lakewarden.jobs import lifecycle as lifecycle_job
from lakewarden.runtime import compiled_models, spark_session
from lakewarden.runtime.spark_session import small_form_for
from lakewarden.sample import SampleConfig, SampleRepository, generate
from lakewarden.snapshot.check import check_snapshot
from lakewarden.state_tables import table_location
from lifecycle_oracle import lifecycle_marked, surviving_physicals
from model_forms import large_repository_forms
from oracles import Snapshot, local_file
from report_files import address_rows, marked, summary
from test_gc_uncommitted_support import START, Repo, rfc3339

pytestmark = pytest.mark.spark

EVENTS_TABLE = "lakewarden_snapshot.lifecycle_run_events"


def run_lc(snapshot: Path, state: Path, report: Path, policy: dict | str, now: datetime, *extra: str) -> int:
    policy_path = report.parent / f"{report.name}-policy.json"
    policy_path.write_text(policy if isinstance(policy, str) else json.dumps(policy))
    args = ["lifecycle", "--snapshot", str(snapshot), "--policy", str(policy_path), "--state", str(state)]
    return main([*args, "--report", str(report), "--now", rfc3339(now), *extra])


def state_files(state: Path, table: str) -> set[Path]:
    """The Parquet files of a state table (lakewarden.state_tables)."""
    return set(table_location(state, table).glob("*.parquet"))


def cutoffs(policy: dict, now: datetime) -> dict[tuple[str, str | None], datetime]:
    """The (prefix, branch) -> date_to_be_deleted a deleting run with ``policy`` at ``now`` leaves
    for the next run (the largest, when two rules share a prefix and branch)."""
    found: dict[tuple[str, str | None], datetime] = {}
    for rule in policy.values():
        if not rule.get("enabled", True):
            continue
        rows = [(None, rule["days"])] if "days" in rule else []
        rows += list(rule.get("branch_days", {}).items())
        for branch, days in rows:
            key = (rule["prefix"], branch)
            found[key] = max(found.get(key, now - timedelta(days=days)), now - timedelta(days=days))
    return found


def assert_matches_oracle(report: Path, expected: dict[str, dict[str, list[str]]]) -> None:
    rows = address_rows(report)
    assert [r["address"] for r in rows] == sorted(r["address"] for r in rows), "addresses.csv must be sorted"
    assert {r["physical_address"] for r in rows} == set(expected)
    for row in rows:
        assert row["paths"].split(";") == expected[row["physical_address"]]["paths"]
        assert row["matched_rules"].split(";") == expected[row["physical_address"]]["matched_rules"]


def assert_survivors_exist(snapshot: Snapshot, policy: dict, now: datetime) -> None:
    """Nothing a path that should survive (or a staged entry) references is gone."""
    for physical in surviving_physicals(snapshot, policy, now):
        if physical.startswith(snapshot.namespace + "/") and "/_lakefs/" not in physical:
            assert local_file(physical).exists(), f"live object deleted: {physical}"


def ledger(spark, namespace_run_ids: set[str]) -> dict[str, set[str]]:
    rows = spark.table(EVENTS_TABLE).select("run_id", "status").collect()
    statuses: dict[str, set[str]] = {}
    for row in rows:
        if row["run_id"] in namespace_run_ids:
            statuses.setdefault(row["run_id"], set()).add(row["status"])
    return statuses


# -- a sequence of runs on one state dir -------------------------------------------------------

POLICY = {
    "events": {"prefix": "events/", "days": 20, "branch_days": {"main": 12}},
    "logs": {"prefix": "logs/", "days": 25},
    "orders-feature": {"prefix": "orders/", "branch_days": {"feature-1": 5}},
    "disabled": {"prefix": "users/", "days": 1, "enabled": False},
}


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> SampleRepository:
    return generate(tmp_path_factory.mktemp("lc-sample"), SampleConfig(seed=11, entries=900))


#: the mark's phases, as a run's summary.json gives them (phase_seconds), in the order they run
PHASES = ("policy_and_ledger", "before_decision", "newly_expired", "references", "marks", "tests_report_and_outputs")


@pytest.mark.usefixtures("large_repository_forms")  # the small forms: every other test here
def test_runs_in_sequence_delete_exactly_what_the_oracle_marks(
    spark, test_state_dir: Path, sample: SampleRepository, tmp_path: Path, caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snapshot = Snapshot.read(sample.snapshot_dir)
    feature = sorted(b for b in sample.branches if b != "main")[0]
    policy = {**POLICY, "orders-feature": {"prefix": "orders/", "branch_days": {feature: 5}}}
    day0 = sample.end + timedelta(hours=1)

    # 1. a dry run: marks, deletes nothing, and does not count as a run that deleted; its policy
    # rows and the windows of the ranges it read first go to the state tables as one file each
    # (every later read opens every file of a state table)
    files_before = {table: state_files(test_state_dir, table) for table in ("lifecycle_policy_history", "range_windows")}
    dry = tmp_path / "dry"
    # each stretch's form with the rows it was chosen by (JobContext.form_for, small_form_for)
    forms: list[tuple[int | None, bool]] = []

    @contextmanager
    def recording(spark_session: Any, rows: int | None) -> Iterator[bool]:
        with small_form_for(spark_session, rows) as small:
            forms.append((rows, small))
            yield small

    monkeypatch.setattr(lifecycle_job, "small_form_for", recording)
    monkeypatch.setattr(job_common, "small_form_for", recording)  # JobContext.form_for's
    # the intermediates the run holds in the session's memory (ModelRunner._hold), by view
    held: list[str] = []
    hold = compiled_models.ModelRunner._hold

    def holding(runner: compiled_models.ModelRunner, node: Any) -> None:
        hold(runner, node)
        held.append(runner.relation(node.relation))

    monkeypatch.setattr(compiled_models.ModelRunner, "_hold", holding)
    assert run_lc(sample.snapshot_dir, test_state_dir, dry, policy, day0, "--dry-run") == 0
    # when the run ends, its held views go with it (JobContext.end): a long-lived session
    # keeps no run's rows in memory
    assert held, "a small repository's run holds its intermediates"
    assert not set(held) & {table.name for table in spark.catalog.listTables() if table.isTemporary}, held
    # the steps up to the read decision of a snapshot small as a whole: its rows, no count asked
    counts = check_snapshot(sample.snapshot_dir, cache_dir=tmp_path / "checked").row_counts
    whole = counts["commits"] + counts["metaranges"] + counts["ranges"]
    assert forms[0] == (whole, True), forms
    added = {table: len(state_files(test_state_dir, table) - before) for table, before in files_before.items()}
    assert added["lifecycle_policy_history"] == 1 and added["range_windows"] <= 1, added
    expected = lifecycle_marked(snapshot, policy, day0)
    assert expected, "the sample must give the policy something to delete"
    assert_matches_oracle(dry, expected)
    assert all(local_file(uri).exists() for uri in expected)
    first = summary(dry)
    assert first["success"] is True and first["dry_run"] is True and first["num_marked"] == len(expected)
    assert first["num_deleted"] == 0 and first["potential_commits"] == first["commits"]
    assert first["last_deleting_run_id"] is None

    # 2. the first real run: the dry run did not delete, so it starts from the beginning too
    run1 = tmp_path / "run1"
    assert run_lc(sample.snapshot_dir, test_state_dir, run1, policy, day0) == 0
    assert_matches_oracle(run1, expected)
    assert not any(local_file(uri).exists() for uri in expected), "marked objects must be gone"
    assert_survivors_exist(snapshot, policy, day0)
    done = summary(run1)
    assert done["success"] is True and done["num_deleted"] == len(expected) and done["num_failed"] == 0
    assert (run1 / "sweep" / "outcomes.csv").is_file()

    # 3. a day later, same policy: only what newly expired, judged from run 1's cutoffs. It reads
    # a few ranges: their newly expired entries, and then what the pass over every entry found,
    # take the small form (JobContext.form_for), the pass itself the large one
    day1 = day0 + timedelta(days=1)
    run2 = tmp_path / "run2"
    forms.clear()
    # one row too many to be small as a whole: the decision's form is taken from the windows kept
    monkeypatch.setattr(spark_session, "SMALL_FORM_ROWS", whole - 1)
    assert run_lc(sample.snapshot_dir, test_state_dir, run2, policy, day1) == 0
    monkeypatch.undo()
    # the windows kept, the steps up to the decision (every window kept: commits and metarange
    # rows only), the windows' count, the newly expired entries, the steps after the pass
    assert [small for _, small in forms] == [True] * 5, forms
    assert forms[1][0] == counts["commits"] + counts["metaranges"], forms
    expected2 = lifecycle_marked(snapshot, policy, day1, cutoffs(policy, day0))
    assert_matches_oracle(run2, expected2)
    assert not set(expected2) & set(expected), "nothing deleted by run 1 is marked again"
    second = summary(run2)
    assert second["last_deleting_run_id"] == done["run_id"]
    assert second["potential_commits"] < second["commits"], "the incremental run reads fewer commits"
    assert_survivors_exist(snapshot, policy, day1)
    # where its mark's time went, in the order the steps ran (benchmarks/lifecycle.py subtracts
    # a no-op run's phases from these): every step of a run that reads ranges, none negative
    assert [name for name, _ in second["phase_seconds"]] == list(PHASES), second["phase_seconds"]
    assert all(seconds >= 0 for _, seconds in second["phase_seconds"])

    # 4. a policy change: events expire sooner everywhere, a new rule for raw/
    changed = {**policy, "events": {"prefix": "events/", "days": 14, "branch_days": {"main": 12}}, "raw": {"prefix": "raw/", "days": 30}}
    day2 = day1 + timedelta(days=1)
    run3 = tmp_path / "run3"
    assert run_lc(sample.snapshot_dir, test_state_dir, run3, changed, day2) == 0
    expected3 = lifecycle_marked(snapshot, changed, day2, cutoffs(policy, day1))
    assert_matches_oracle(run3, expected3)
    assert expected3, "the policy change must expire something new"
    assert_survivors_exist(snapshot, changed, day2)

    # 5. nothing changed (same snapshot, policy and clock): no range is read, so the steps after
    # that decision plan no scan, and the run marks what the oracle marks from run 3's cutoffs: nothing
    noop = tmp_path / "noop"
    with caplog.at_level(logging.INFO, logger="lakewarden.jobs.lifecycle"):
        assert run_lc(sample.snapshot_dir, test_state_dir, noop, changed, day2) == 0
    assert lifecycle_marked(snapshot, changed, day2, cutoffs(changed, day2)) == {}
    assert_matches_oracle(noop, {})
    repeated = summary(noop)
    assert repeated["success"] is True and repeated["num_marked"] == 0 and repeated["ranges_read"] == 0
    assert repeated["last_deleting_run_id"] == summary(run3)["run_id"]
    assert "this run reads no range" in caplog.text
    # a run that reads no range has no newly expired entries and no pass over every entry: the
    # phases it did not run are absent, not zero
    assert [name for name, _ in repeated["phase_seconds"]] == [name for name in PHASES if name not in ("newly_expired", "references")]

    # what was marked across the runs is what a from-scratch run now would mark
    scratch = lifecycle_marked(snapshot, changed, day2)
    assert set(scratch) <= set(expected) | set(expected2) | set(expected3)

    # the ledger, the lakeFS-style outputs, the stats
    run_ids = {summary(r)["run_id"] for r in (dry, run1, run2, run3)}
    statuses = ledger(spark, run_ids)
    assert statuses[first["run_id"]] == {"running", "marked"}
    assert all(statuses[summary(r)["run_id"]] == {"running", "marked", "swept"} for r in (run1, run2, run3))
    lc_dir = sample.namespace_path / "_lakefs" / "retention" / "lc"
    day_dirs = sorted(p.name for p in (lc_dir / "addresses").iterdir() if p.is_dir())
    assert day_dirs == [f"date={d.date().isoformat()}" for d in (day0, day1, day2)]
    written = spark.read.parquet(str(lc_dir / "addresses"))
    assert {r["physical_address"] for r in written.where(f"run_id = '{summary(run3)['run_id']}'").collect()} == set(expected3)
    with open(lc_dir / "stats" / f"{day2.date().isoformat()}.csv", newline="") as handle:
        stats = [row for row in csv.DictReader(handle) if row["run_id"] == summary(run3)["run_id"]]
    assert {(r["rule_id"], r["branch_id"]) for r in stats} >= {("events", ""), ("events", "main"), ("raw", "")}
    assert all(r["run_status"] == "swept" for r in stats)
    assert "disabled" not in {r["rule_id"] for r in stats}


# -- the worked examples of the README ------------------------------------------------------------


def two_branch_history(root: Path) -> tuple[Repo, str]:
    """main and dev share a commit holding logs/old (written at START); main moves on."""
    repo = Repo(root, genesis=False)
    address = repo.stage("main", key="logs/old")
    repo.commit("main")
    repo.create_branch("dev")
    repo.advance(timedelta(days=1))
    repo.stage("main", key="other/new")
    repo.commit("main")
    repo.write_snapshot()
    return repo, address


def test_seed_mode_skips_an_object_complete_mode_deletes(spark, test_state_dir: Path, tmp_path: Path) -> None:
    repo, address = two_branch_history(tmp_path / "repo")
    physical = f"{repo.storage_namespace}/{address}"
    day40 = START + timedelta(days=40)
    # run 1: logs expire on main only; dev (no rule there) still shows logs/old, so it is kept
    only_main = {"logs": {"prefix": "logs/", "branch_days": {"main": 10}}}
    run1 = tmp_path / "run1"
    assert run_lc(repo.snapshot_dir, test_state_dir, run1, only_main, day40) == 0
    assert marked(run1) == set() and summary(run1)["addresses_kept_for_duplicates"] == 0
    # run 2: logs now expire on dev too. Seed: the shared commit is older than main's cutoff
    # (the largest), so it is not read. Complete: dev starts from the beginning, so it is.
    both = {"logs": {"prefix": "logs/", "branch_days": {"main": 10, "dev": 10}}}
    day41 = day40 + timedelta(days=1)
    seed = tmp_path / "seed"
    assert run_lc(repo.snapshot_dir, test_state_dir, seed, both, day41, "--dry-run", "--potential-commits", "seed") == 0
    assert marked(seed) == set()
    complete = tmp_path / "complete"
    assert run_lc(repo.snapshot_dir, test_state_dir, complete, both, day41, "--dry-run") == 0
    assert marked(complete) == {physical}
    assert set(lifecycle_marked(Snapshot.read(repo.snapshot_dir), both, day41, cutoffs(only_main, day40))) == {physical}


def test_full_run_retries_an_address_kept_for_a_reference_that_went_away(spark, test_state_dir: Path, tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo", genesis=False)
    address = repo.stage("main", key="logs/a")
    repo.commit("main")
    repo.stage("main", address=address, key="restored/a")  # staged: keeps the object alive
    repo.write_snapshot()
    policy = {"logs": {"prefix": "logs/", "days": 10}}
    day30 = START + timedelta(days=30)
    run1 = tmp_path / "run1"
    assert run_lc(repo.snapshot_dir, test_state_dir, run1, policy, day30) == 0
    assert marked(run1) == set() and summary(run1)["addresses_kept_for_duplicates"] == 1
    assert (repo.namespace_path / address).exists()

    repo.unstage_address("main", address)  # the staged entry is reset: nothing keeps it now
    repo.write_snapshot()
    day31 = day30 + timedelta(days=1)
    incremental = tmp_path / "incremental"
    assert run_lc(repo.snapshot_dir, test_state_dir, incremental, policy, day31) == 0
    assert marked(incremental) == set(), "the documented limitation: logs/a matched the last run"
    full = tmp_path / "full"
    assert run_lc(repo.snapshot_dir, test_state_dir, full, policy, day31, "--full") == 0
    assert marked(full) == {f"{repo.storage_namespace}/{address}"}
    assert summary(full)["full_run"] is True
    assert not (repo.namespace_path / address).exists()


# -- properties over random histories ------------------------------------------------------------

PREFIXES = ("events/", "logs/", "raw/")
OPERATIONS = st.sampled_from(["commit", "commit", "copy", "branch", "delete_branch", "stage_copy"])


def random_history(root: Path, seed: int, operations: list[str]) -> Repo:
    repo = Repo(root, seed=seed, genesis=False)
    rng = repo.rng
    repo.stage("main", key=f"{rng.choice(PREFIXES)}k-0")
    repo.commit("main")
    for operation in operations:
        branch = rng.choice(sorted(repo.branches))
        committed = [(e["key"], e["address"]) for entries in repo.ranges.values() for e in entries]
        if operation == "commit":
            for _ in range(rng.randrange(1, 4)):
                repo.stage(branch, key=f"{rng.choice(PREFIXES)}k-{repo.counter + 1}")
            repo.commit(branch)
        elif operation == "copy" and committed:  # another path, maybe under no rule, shares an object
            _, address = rng.choice(committed)
            repo.stage(branch, address=address, key=f"{rng.choice(PREFIXES + ('kept/',))}copy-{repo.counter}-{rng.randrange(999)}")
            repo.commit(branch)
        elif operation == "branch":
            repo.create_branch(f"b{repo.counter}", branch)
        elif operation == "delete_branch" and branch != "main":
            repo.delete_branch(branch)
        elif operation == "stage_copy" and committed:
            repo.stage(branch, address=rng.choice(committed)[1], key=f"staged/{repo.counter}")
        repo.advance(timedelta(days=rng.randrange(1, 6)))
    repo.write_snapshot()
    return repo


def random_policy(rng, branches: list[str]) -> dict:
    policy = {}
    for index, prefix in enumerate(rng.sample(PREFIXES, rng.randrange(1, len(PREFIXES) + 1))):
        rule: dict[str, Any] = {"prefix": prefix}
        if rng.random() < 0.8:
            rule["days"] = rng.randrange(0, 30)
        named = rng.sample(branches + ["gone"], rng.randrange(0, min(3, len(branches) + 1)))
        if named or "days" not in rule:
            rule["branch_days"] = {b: rng.randrange(0, 30) for b in named or ["main"]}
        policy[f"r{index}"] = rule
    return policy


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    large=st.booleans(),  # the forms of a large repository (model_forms.py)
    # what a large repository's stretch of few rows does: its tables written, or held in memory
    # in the large form's settings (a stretch of 100,000 to 500,000 rows)
    few_rows=st.sampled_from(["written", "held"]),
    seed=st.integers(min_value=0, max_value=10_000),
    operations=st.lists(OPERATIONS, min_size=4, max_size=14),
    days_later=st.sampled_from([1, 3, 10]),
)
# every run of the suite meets a large repository's forms in every stretch at least once (the
# steps before the read decision included: the other tests' samples are small as a whole)
@example(large=True, few_rows="written", seed=7, operations=["commit", "branch", "copy", "commit", "stage_copy", "delete_branch", "commit"], days_later=3)
def test_property_complete_equals_the_oracle_never_deletes_a_survivor_and_seed_reads_less(
    spark, test_state_dir: Path, tmp_path_factory, seed: int, operations: list[str], days_later: int,
    large: bool, few_rows: str,
) -> None:
    # a large repository's forms everywhere, the steps after the pass over every entry too
    with large_repository_forms(large, few_rows=few_rows):
        root = tmp_path_factory.mktemp("lc-history")
        repo = random_history(root / "repo", seed, operations)
        snapshot = Snapshot.read(repo.snapshot_dir)
        policy = random_policy(repo.rng, sorted(repo.branches))
        now = repo.clock + timedelta(days=1)

        # first run deletes; what it leaves must include every survivor
        first = root / "first"
        assert run_lc(repo.snapshot_dir, test_state_dir, first, policy, now) == 0
        assert_matches_oracle(first, lifecycle_marked(snapshot, policy, now))
        assert not marked(first) & surviving_physicals(snapshot, policy, now)
        assert_survivors_exist(snapshot, policy, now)

        # later, a changed policy: complete mode marks exactly what the oracle marks with the same
        # cutoffs (every commit considered); seed mode never marks more
        later = now + timedelta(days=days_later)
        changed = random_policy(repo.rng, sorted(repo.branches))
        complete = root / "complete"
        assert run_lc(repo.snapshot_dir, test_state_dir, complete, changed, later, "--dry-run") == 0
        expected = lifecycle_marked(snapshot, changed, later, cutoffs(policy, now))
        assert_matches_oracle(complete, expected)
        assert not marked(complete) & surviving_physicals(snapshot, changed, later)
        seed_run = root / "seed"
        assert run_lc(repo.snapshot_dir, test_state_dir, seed_run, changed, later, "--dry-run", "--potential-commits", "seed") == 0
        assert marked(seed_run) <= marked(complete)
        assert summary(seed_run)["potential_commits"] <= summary(complete)["potential_commits"]


# -- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "policy, field",
    [
        ('{"r1": {"prefix": "logs/", "dayz": 3}}', "r1.dayz"),
        ('{"r1": {"prefix": "logs/", "days": -1}}', "r1.days"),
        ('{"r1": {"prefix": "logs/", "days": 1.5}}', "r1.days"),
        ('{"r1": {"prefix": "", "days": 1}}', "r1.prefix"),
        ('{"r1": {"prefix": "a/", "days": 1}, "r1": {"prefix": "b/", "days": 2}}', "r1"),
        ('{"r1": {"prefix": "logs/", "branch_days": {"main": "5"}}}', "r1.branch_days.main"),
        ('{"r1": {"prefix": "logs/", "days": 1', None),
    ],
)
def test_bad_policy_exits_2_and_changes_nothing(
    spark, test_state_dir: Path, sample: SampleRepository, tmp_path: Path, capsys, policy: str, field: str | None
) -> None:
    before = spark.table(EVENTS_TABLE).count() if spark.catalog.tableExists(EVENTS_TABLE) else 0
    files = sorted(p for p in sample.namespace_path.rglob("*") if p.is_file())
    report = tmp_path / "report"
    assert run_lc(sample.snapshot_dir, test_state_dir, report, policy, sample.end + timedelta(days=1)) == 2
    message = capsys.readouterr().err.strip()
    assert len(message.splitlines()) == 1 and "policy.json" in message
    if field:
        assert field in message
    assert not report.exists(), "bad input must not create a report"
    after = spark.table(EVENTS_TABLE).count() if spark.catalog.tableExists(EVENTS_TABLE) else 0
    assert after == before, "bad input must not touch the run ledger"
    assert sorted(p for p in sample.namespace_path.rglob("*") if p.is_file()) == files


def test_unknown_branch_in_branch_days_warns_and_runs(spark, test_state_dir: Path, sample: SampleRepository, tmp_path: Path, caplog) -> None:
    report = tmp_path / "report"
    policy = {"logs": {"prefix": "logs/", "branch_days": {"no-such-branch": 1}}}
    assert run_lc(sample.snapshot_dir, test_state_dir, report, policy, sample.end + timedelta(days=1), "--dry-run") == 0
    assert any("no-such-branch" in r.getMessage() and "logs" in r.getMessage() for r in caplog.records)
    assert marked(report) == set()


def test_future_clock_needs_a_dry_run(spark, test_state_dir: Path, sample: SampleRepository, tmp_path: Path, capsys) -> None:
    report = tmp_path / "report"
    future = datetime.now().astimezone() + timedelta(days=3)
    assert run_lc(sample.snapshot_dir, test_state_dir, report, POLICY, future) == 2
    assert "--now" in capsys.readouterr().err
    assert not report.exists()


def test_the_safety_test_catches_protected_addresses_in_the_mark(spark, test_state_dir: Path, tmp_path: Path) -> None:
    """The safety net the mark's build runs (tests/assert_lifecycle_never_marks_protected_addresses.sql)
    finds a staged object and an object on a path no rule covers slipped into the marked rows
    (neither among the objects whose references the job gathered), objects the job gathered and
    kept for a staged entry or an uncovered path, and nothing in the honest mark."""
    from lakewarden.jobs.lifecycle import MARK_MODELS
    from safety_tamper import held_views_kept, safety_verdicts, with_held_intermediates

    # a repository of its own: the module's sample has runs of other tests in the shared state
    sample = generate(tmp_path / "repo", SampleConfig(seed=12, entries=600))
    report = tmp_path / "report"
    now = sample.end + timedelta(days=1)
    with held_views_kept():  # the verdicts below read the run's held intermediates
        assert run_lc(sample.snapshot_dir, test_state_dir, report, POLICY, now, "--dry-run") == 0
    run_id = summary(report)["run_id"]
    protected = spark.sql(
        """
        select concat(repository.storage_namespace_root, '/', references.address) as physical_address
        from (
            (select address from lakewarden.stg_lakefs__staged where upper(address_type) = 'RELATIVE' limit 1)
            union all
            (select address from lakewarden.stg_lakefs__ranges
             where path like 'users/%' and upper(address_type) = 'RELATIVE' limit 1)
        ) as references
        cross join lakewarden.stg_lakefs__repository as repository
        """
    ).collect()
    protected_addresses = {row["physical_address"] for row in protected}
    assert len(protected_addresses) == 2

    def assert_caught_exactly(slipped_in: set[str]) -> None:
        honest, caught = safety_verdicts(
            spark, state=test_state_dir, selection=MARK_MODELS, test_name="assert_lifecycle_never_marks_protected_addresses",
            mart="lifecycle_marked_addresses", slipped_in=slipped_in,
            variables={"now": rfc3339(now), "run_id": run_id, "snapshot_schema": "lakewarden_snapshot"},
        )
        assert honest == []
        assert caught and set(caught) == slipped_in

    assert_caught_exactly(protected_addresses)

    # objects whose references the job gathered (their keys were searched for) and that a staged
    # entry or a path no rule covers keeps: the net judges those references itself
    gathered_but_protected = {
        row["physical_address"]
        for row in spark.sql(
            with_held_intermediates(
                spark,
                """
                select physical_address from lakewarden.int_lifecycle__deduplications
                where kept_reason like 'staged%' or kept_reason = 'no rule matches the path'
                """,
            )
        ).collect()
    }
    assert gathered_but_protected, "the sample should keep an object for a staged entry or an uncovered path"
    assert_caught_exactly(gathered_but_protected)
