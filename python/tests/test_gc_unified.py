"""``lakewarden gc``: committed and uncommitted GC in one run, lakeFS's unified-GC system test.

The scenario is lakeFS's own (``esti/unified_gc_test.go``, TestUnifiedGC), played on the fake
lakeFS of fake_lakefs.py and extracted as a user would: branches dev and dev2 from main; rules
main 10 days, dev 7, default 7; ten files created and committed 14 days ago, six of them deleted
on commits 12, 8, 8, 8, 6 and 4 days ago; four files staged, one of them deleted again; dev2
deleted, dev reset. lakeFS's test expects file_2, file_4, file_5, file_7, file_9 and file_10
gone and the others kept; here each carries its reason, the union equals what ``gc committed``
and ``gc uncommitted`` mark alone, the mark is also written in lakeFS's layout, and the sweep
deletes exactly the marked objects. On local disk and on the local servers of S3 (moto), Azure
(Azurite) and GCS (gcp-storage-emulator), as every job's end-to-end test uses them
(test_stores_e2e). Each job alone runs on local disk only: there it is the reference the union
is compared with; elsewhere the expected sets are lakeFS's.
"""

from __future__ import annotations

import csv
import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import pyarrow.parquet as pq
import pytest

from fake_lakefs import KEY, SECRET, FakeLakeFS, LocalNamespace, Namespace, serve  # noqa: F401 - serve: a fixture
from lakewarden.cli import main
import report_files
from test_stores_e2e import make_store, server  # noqa: F401 - server: a fixture (the stores' local servers)

# second_process: the embedded step is the command's longest by minutes; this module's ~2.5 min
# (four stores) run beside it instead, on a session of the second process's own (conftest.py)
pytestmark = [pytest.mark.spark, pytest.mark.second_process]

RULES = {"default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 10}, {"branch_id": "dev", "retention_days": 7}]}
EXPIRED = {"file_2", "file_5", "file_9"}  # expired commits only
UNREFERENCED = {"file_4", "file_7", "file_10"}  # no reference
KEPT = {"file_1", "file_3", "file_6", "file_8"}


def unified_gc_scenario(namespace: Namespace, now: datetime) -> tuple[FakeLakeFS, dict[str, str]]:
    """lakeFS's TestUnifiedGC on the fake lakeFS; the physical address of each file."""

    def ago(days: float) -> datetime:
        return now - timedelta(days=days)

    fake = FakeLakeFS("repo1", namespace, created=ago(30), now=now)
    fake.gc_rules = RULES
    fake.branch("dev", "main")
    fake.branch("dev2", "main")
    addresses: dict[str, str] = {}
    for key, branch in (("file_1", "main"), ("file_2", "main"), ("file_5", "dev"), ("file_6", "dev"), ("file_8", "dev2"), ("file_9", "dev2")):
        addresses[key] = fake.upload(branch, key, ago(14))
        fake.commit(branch, "commit event", ago(14))  # creations are committed 14 days ago
    for key, branch, days in (("file_2", "main", 12), ("file_1", "main", 8), ("file_5", "dev", 8), ("file_9", "dev2", 8),
                              ("file_8", "dev2", 6), ("file_6", "dev", 4)):
        fake.delete(branch, key)
        fake.commit(branch, "commit event", ago(days))
    for key, branch in (("file_3", "main"), ("file_4", "main"), ("file_7", "dev"), ("file_10", "dev2")):
        addresses[key] = fake.upload(branch, key, ago(1 / 12))  # two hours old: past --min-age 1h
    fake.delete("main", "file_4")  # an uncommitted delete
    fake.delete_branch("dev2")
    fake.branches["dev"].staging.clear()  # reset dev: its staged file_7 is dropped
    return fake, addresses


def _rows(report: Path) -> dict[str, dict[str, str]]:
    with open(report / "addresses.csv", newline="", encoding="utf-8") as handle:
        return {row["address"]: row for row in csv.DictReader(handle)}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> datetime:
    """The scenario's clock, lakeFS's and extract's: now (the S3 server stamps objects with its own)."""
    now = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=1)
    monkeypatch.setenv("LAKECTL_CREDENTIALS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("LAKECTL_CONFIG_FILE", str(tmp_path / "no-lakectl.yaml"))
    monkeypatch.setattr("lakewarden.extract.api._now", lambda: now)
    return now


# GCS was once left out: now and then its uncommitted part marked nothing (file_4, file_7 and
# file_10 counted younger than --min-age 1s). The jobs' clock was the wall clock 1.5s after the
# extract, truncated to the second; GCS stamps objects to the sub-second, so after a fast extract
# the last uploads could be stamped later than that clock minus 1s, and the job rightly kept them
# (S3 and Azure stamp whole seconds: never). The clock is now taken from the stamps themselves
# (_past_newest_stamp).
@pytest.mark.parametrize("store", ["file", "s3", "azure", "gcs"])
def test_unified_gc_reproduces_lakefs_system_test(
    spark: Any, test_state_dir: Path, clock: datetime, serve: Any, store: str, server: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    store_args: tuple[str, ...] = ()
    min_age: tuple[str, ...] = ("--min-age", "1h")
    min_age_delta = timedelta(hours=1)
    keys: Callable[[], set[str]]
    if store == "file":
        namespace: Namespace = LocalNamespace(tmp_path / "storage" / "repo1")
        keys = lambda: _local_keys(namespace)  # noqa: E731
    else:
        # a fresh bucket or container on the store's local server (the same stores as every
        # job's end-to-end test: S3 (moto), Azure (Azurite), GCS (gcp-storage-emulator))
        for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_KEY", "STORAGE_EMULATOR_HOST", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
            monkeypatch.delenv(name, raising=False)
        reached = make_store(store, server, tmp_path, spark, monkeypatch)
        namespace, keys, store_args = reached.namespace, reached.keys, tuple(reached.args)
        # the server stamps every object with its own clock (now), as lakeFS's test runs its GC
        # with lakefs.debug.gc.uncommitted_min_age_seconds=1
        min_age, min_age_delta = ("--min-age", "1s", "--force"), timedelta(seconds=1)
    written_from = datetime.now(timezone.utc)
    fake, addresses = unified_gc_scenario(namespace, clock)
    by_address = {address: key for key, address in addresses.items()}
    # the scenario is what lakeFS's test says: its retention expires exactly these
    assert {by_address[a] for a in fake.addresses() - fake.addresses(fake.active_commits())} == EXPIRED

    snapshot = tmp_path / "snap"
    endpoint = serve(fake)
    assert main(["extract", "--lakefs-endpoint", endpoint, "--repo", "repo1", "--out", str(snapshot),
                 "--cache-dir", str(tmp_path / "range-cache"), *store_args]) == 0
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(RULES))
    # the jobs' clock: the scenario's; on a server a whole second --min-age past the newest stamp
    # the server put on an object (see _past_newest_stamp)
    job_clock = clock
    if store != "file":
        assert reached.world is not None
        job_clock = _past_newest_stamp(namespace.uri, reached.world.options, written_from, min_age_delta)
    now = job_clock.isoformat().replace("+00:00", "Z")
    common = ("--snapshot", str(snapshot), "--state", str(test_state_dir), "--now", now, "--dry-run", *store_args)

    # each job alone (on one store: the jobs' own tests cover every store; here they are the
    # reference the union is compared with)
    if store == "file":
        assert main(["gc", "committed", *common, "--rules", str(rules), "--report", str(tmp_path / "committed")]) == 0, capsys.readouterr().err
        assert main(["gc", "uncommitted", *common, *min_age, "--report", str(tmp_path / "uncommitted")]) == 0, capsys.readouterr().err
        committed, uncommitted = set(_rows(tmp_path / "committed")), set(_rows(tmp_path / "uncommitted"))
        assert {by_address[a] for a in committed} == EXPIRED
        assert {by_address[a] for a in uncommitted} == UNREFERENCED
    else:
        committed, uncommitted = {addresses[key] for key in EXPIRED}, {addresses[key] for key in UNREFERENCED}

    # both in one run: the union, each address with its reason
    report = tmp_path / "gc"
    capsys.readouterr()
    assert main(["gc", *common, "--rules", str(rules), *min_age, "--report", str(report)]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    rows = _rows(report)
    assert {by_address[a]: row["reason"] for a, row in rows.items()} == {
        **{key: "expired commits only" for key in EXPIRED}, **{key: "no reference" for key in UNREFERENCED},
    }
    assert set(rows) == committed | uncommitted
    summary = report_files.summary(report)
    assert summary["job"] == "gc" and summary["success"] is True and summary["num_marked"] == 6
    assert summary["num_marked_by_reason"] == {"expired commits only": 3, "no reference": 3}
    # where the run's time went: the two marks (each part's summary has its own phases) and the union
    assert [name for name, _ in summary["phase_seconds"]] == ["committed_mark", "uncommitted_mark", "union_report_and_outputs"]
    assert [name for name, _ in report_files.summary(report / "committed")["phase_seconds"]][-1] == "tests_report_and_outputs"
    assert (report / "report.html").is_file() and "expired commits only" in (report / "report.html").read_text()
    assert "3 expired commits only, 3 no reference" in out

    # the same mark where and as lakeFS's GC writes one
    mark_id = summary["lakefs_mark_id"]
    assert summary["run_id"] == mark_id
    assert summary["lakefs_mark"] == f"{namespace.uri}/_lakefs/retention/gc/unified/{mark_id}/"
    mark_summary = json.loads(namespace.get(f"_lakefs/retention/gc/unified/{mark_id}/summary.json"))
    assert set(mark_summary) == {"run_id", "success", "first_slice", "start_time", "cutoff_time", "num_deleted_objects"}
    assert mark_summary["run_id"] == mark_id and mark_summary["success"] is True
    assert mark_summary["num_deleted_objects"] == 6
    assert mark_summary["cutoff_time"] == (job_clock - min_age_delta).strftime("%Y-%m-%dT%H:%M:%SZ")
    mark_dir = _local_copy(namespace, keys(), f"_lakefs/retention/gc/unified/{mark_id}/", tmp_path / "mark")
    [parquet] = list((mark_dir / "deleted").glob("*.parquet"))
    table = pq.read_table(parquet)
    assert table.schema.names == ["address"] and str(table.schema.field("address").type) == "string"
    assert set(table.column("address").to_pylist()) == set(rows)  # relative to the namespace, as lakeFS lists
    [text] = list((mark_dir / "deleted.text").glob("*.txt"))
    assert set(text.read_text().splitlines()) == set(rows)

    # explain reads the reason
    capsys.readouterr()
    assert main(["explain", "--report", str(report), addresses["file_7"]]) == 0
    assert "MARKED: no commit and no staged entry references it" in capsys.readouterr().out
    assert main(["explain", "--report", str(report), addresses["file_2"]]) == 0
    assert "MARKED: only expired commits reference it" in capsys.readouterr().out

    if store == "file":
        # again on the same state, nothing changed: the no-op marks the same, reads no range and
        # draws no figure (those kept with the committed mark for this marked set and clock)
        again = tmp_path / "gc-again"
        assert main(["gc", *common, "--rules", str(rules), *min_age, "--report", str(again)]) == 0, capsys.readouterr().err
        again_summary = report_files.summary(again)
        assert again_summary["ranges_read"] == 0 and again_summary["num_marked"] == 6
        assert set(_rows(again)) == set(rows)
        assert (again / "figures.json").read_bytes() == (report / "figures.json").read_bytes()
        # one more unreferenced object, old enough: a clean run marks it, so its figures are
        # drawn again (the committed mark, reused, is the same)
        namespace.put("data/file_11", b"unreferenced", at=clock - timedelta(days=1))
        more = tmp_path / "gc-more"
        assert main(["gc", *common, "--rules", str(rules), *min_age, "--clean", "--report", str(more)]) == 0, capsys.readouterr().err
        assert json.loads((more / "figures.json").read_text())["marked"]["objects"] == 7
        namespace.delete("data/file_11")

    # the existing sweep deletes exactly the marked objects
    before_lakefs = {key for key in keys() if key.startswith("_lakefs/")}
    assert main(["sweep", "--report", str(report), "--state", str(test_state_dir), *store_args]) == 0, capsys.readouterr().err
    for key, address in addresses.items():
        assert namespace.exists(address) == (key in KEPT), key
    assert namespace.exists("dummy")
    assert before_lakefs <= {key for key in keys() if key.startswith("_lakefs/")}


def _past_newest_stamp(namespace_uri: str, options: Any, written_from: datetime, min_age: timedelta) -> datetime:
    """A clock at which every object of the namespace is provably older than ``min_age``: the
    first whole second after the newest stamp the server put on one (as the jobs read stamps:
    listed through the namespace's store), plus ``min_age``; returned once the wall clock has
    passed it. Not "the wall clock a moment later, truncated to the second": a store stamping
    sub-second times (GCS; S3 and Azure stamp whole seconds) can leave an object stamped after
    that clock minus ``min_age``, too young for the job, which rightly keeps it.

    Every stamp lies between the scenario's first write (to the second: S3 and Azure truncate)
    and now, so a listing misreading the server's clock (a time zone, a unit) fails here."""
    from lakewarden.stores import store_for

    with store_for(namespace_uri, options) as store:
        stamps = [listed.last_modified for listed in store.list(namespace_uri + "/")]
    listed_at = datetime.now(timezone.utc)
    assert stamps and all(written_from.replace(microsecond=0) <= stamp <= listed_at for stamp in stamps), (written_from, listed_at, stamps)
    clock = (max(stamps) + timedelta(seconds=1)).replace(microsecond=0) + min_age
    while (wait := (clock - datetime.now(timezone.utc)).total_seconds()) > 0:
        time.sleep(wait)
    return clock


def _local_keys(namespace: LocalNamespace) -> set[str]:
    return {str(p.relative_to(namespace.root)) for p in namespace.root.rglob("*") if p.is_file()}


def _local_copy(namespace: Namespace, keys: set[str], prefix: str, out: Path) -> Path:
    """The files under ``prefix`` of the namespace, in a local directory."""
    for key in keys:
        if key.startswith(prefix):
            target = out / key[len(prefix):]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(namespace.get(key))
    return out
