"""``lakewarden extract`` against the fake lakeFS (python/tests/fake_lakefs.py) on local storage.

The fake answers with JSON built from ``lakefs_sdk``'s own models on lakeFS's paths and writes
into the namespace what lakeFS writes there (refs dump SSTables, the GC commits CSV, the
uncommitted Parquet files), so these tests exercise extract as it runs against lakeFS.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import socket
from collections.abc import Iterator
from datetime import timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fake_lakefs import serve  # noqa: F401 - a fixture
from fake_lakefs import (
    KEY,
    SECRET,
    SCENARIO_RULES,
    Commit,
    LocalNamespace,
    Scenario,
    build_scenario,
)
from lakewarden.cli import main
from lakewarden.errors import BadInput
from lakewarden.extract import extract_repository
from lakewarden.lakefs.client import resolve_config

FIXTURE_RANGE_ID = "a83af763ba098c15369d9d6d723731eb9ce18b8dfac4f88c6f1287e772393d0e"
FIXTURE_METARANGE_ID = "f1x7ure0000000000000000000000000000000000000000000000000000000000"


@pytest.fixture
def scenario(tmp_path: Path) -> Iterator[Scenario]:
    yield build_scenario(LocalNamespace(tmp_path / "storage" / "ns"))




@pytest.fixture
def creds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAKECTL_CREDENTIALS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("LAKECTL_CONFIG_FILE", str(tmp_path / "no-lakectl.yaml"))
    monkeypatch.delenv("LAKECTL_SERVER_ENDPOINT_URL", raising=False)


def _extract(capsys: pytest.CaptureFixture[str], endpoint: str, out: Path, cache: Path, *extra: str) -> tuple[int, str, str]:
    code = main(["extract", "--lakefs-endpoint", endpoint, "--repo", "repo1", "--out", str(out),
                 "--cache-dir", str(cache), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _rows(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def _commits(out: Path) -> dict[str, dict[str, Any]]:
    return {c["commit_id"]: c for c in _rows(out / "commits.parquet")}


def _staged(out: Path) -> set[tuple[Any, ...]]:
    return {(r["branch_id"], r["key"], r["address"], r["address_type"]) for r in _rows(out / "staged.parquet")}


def test_extract_writes_every_commit_as_lakefs_stores_it(
    scenario: Scenario, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake, names, addr = scenario.fake, scenario.commits, scenario.addresses
    out = tmp_path / "snap"
    code, stdout, err = _extract(capsys, serve(fake), out, tmp_path / "cache")
    assert code == 0, err
    assert "staged from prepare_uncommited" in stdout

    assert json.loads((out / "repository.json").read_text()) == {
        "repository_id": "repo1", "storage_namespace": fake.ns.uri, "default_branch": "main",
    }
    commits = _commits(out)
    # Every commit, those of deleted branches (X 2 days old, of1) and the merged side (s1) too.
    assert set(commits) == set(fake.commits)
    for commit_id, commit in fake.commits.items():
        row = commits[commit_id]
        assert row["parents"] == commit.parents  # stored order, never reordered
        assert row["version"] == commit.version
        assert row["creation_date"] == commit.creation_date
        assert row["committer"] == "ann" and row["message"] == commit.message
    merge = commits[names["M"]]
    assert merge["version"] == 0 and merge["parents"] == [names["s1"], names["m2"]]  # main parent last
    assert commits[names["c0"]]["meta_range_id"] is None and commits[names["c0"]]["parents"] == []

    # The empty tree: one metarange row with that id and no range.
    metaranges = _rows(out / "metaranges.parquet")
    empty_id = fake.commits[names["w1"]].meta_range_id
    assert [m for m in metaranges if m["meta_range_id"] == empty_id] == [{"meta_range_id": empty_id, "range_id": None}]
    listed = {m["meta_range_id"] for m in metaranges}
    assert listed == {c.meta_range_id for c in fake.commits.values() if c.meta_range_id}
    assert all(m["range_id"] for m in metaranges if m["meta_range_id"] != empty_id)

    # Ranges: every committed entry of every commit, with its address.
    ranges = _rows(out / "ranges.parquet")
    assert {r["address"] for r in ranges} == fake.addresses()
    assert {r["key"] for r in ranges} >= {"a.csv", "b.csv", "s.csv", "f.csv", "x.csv"}

    branches = {b["branch_id"]: (b["commit_id"], b["hidden"]) for b in _rows(out / "branches.parquet")}
    assert branches == {
        "main": (names["M"], False), "dev": (names["M"], False), "wipe": (names["w1"], False), "_sys": (names["M"], True),
    }
    assert _rows(out / "tags.parquet") == [{"tag_id": "v1", "commit_id": names["M"]}]

    # Staged, from prepare_uncommited: no branch/path; the entry outside the namespace left out.
    assert _staged(out) == {(None, None, addr["D1"], "RELATIVE"), (None, None, addr["B2"], "RELATIVE")}
    assert {r["last_modified"] for r in _rows(out / "staged.parquet")} == {
        fake.branches["dev"].staging["new/d.csv"].last_modified  # type: ignore[union-attr]
    }

    # lakeFS's own GC answer, kept as lakeFS wrote it.
    assert json.loads((out / "gc_rules.json").read_text()) == SCENARIO_RULES
    document = json.loads((out / "lakefs_gc_commits.json").read_text())
    assert set(document) == {"run_id", "prepared_at", "gc_rules"} and document["gc_rules"] == SCENARIO_RULES
    assert document["prepared_at"].endswith("Z")
    csv_key = f"_lakefs/retention/gc/commits/run_id={document['run_id']}/commits.csv"
    assert (out / "lakefs_gc_commits.csv").read_bytes() == fake.ns.get(csv_key)
    rows = list(csv.DictReader(io.StringIO((out / "lakefs_gc_commits.csv").read_text())))
    assert {r["commit_id"] for r in rows} == {names[n] for n in ("M", "m2", "X", "w1")}
    assert {r["metarange_id"] for r in rows if r["commit_id"] == names["w1"]} == {empty_id}

    # The log API is no longer used; the dump is read from _lakefs/.
    assert not [p for p in fake.paths() if p.endswith("/commits")]
    assert ("POST", "/api/v1/repositories/repo1/dump") in fake.requests
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".snap")]
    assert SECRET not in stdout + err


def test_real_lakefs_range_files_are_read(
    scenario: Scenario, serve: Any, creds: None, sstable_fixtures: Path, tmp_path: Path
) -> None:
    """A commit whose metarange and range were written by lakeFS itself (shared fixtures)."""
    fake = scenario.fake
    lakefs_dir = fake.ns.root / "_lakefs"  # type: ignore[attr-defined]
    shutil.copyfile(sstable_fixtures / "lakefs" / "range.sst", lakefs_dir / FIXTURE_RANGE_ID)
    shutil.copyfile(sstable_fixtures / "lakefs" / "metarange.sst", lakefs_dir / FIXTURE_METARANGE_ID)
    head = fake.head("dev")
    fake.commits["f" * 64] = Commit("f" * 64, [head.commit_id], head.creation_date, FIXTURE_METARANGE_ID,
                                    "ann", "real lakeFS tables", 1, head.generation + 1, {})
    fake.branches["dev"].commit_id = "f" * 64
    result = extract_repository(
        config=resolve_config(serve(fake)), repository="repo1", out=tmp_path / "s", cache_dir=tmp_path / "c"
    )
    by_key = {r["key"]: r for r in _rows(tmp_path / "s" / "ranges.parquet") if r["range_id"] == FIXTURE_RANGE_ID}
    assert by_key["a/b/c/no"]["address"] == "b0c968736d8f42a2b1c6284835f08226"
    assert by_key["a/b/c/no"]["size"] == 11
    assert result.rows["commits"] == len(fake.commits)


def test_pages_of_every_listing_are_followed(scenario: Scenario, serve: Any, creds: None, tmp_path: Path) -> None:
    """One uncommitted entry and one branch per page: every page is read, nothing lost."""
    fake = scenario.fake
    fake.page_size = 1
    fake.uncommitted_page = 1
    result = extract_repository(
        config=resolve_config(serve(fake)), repository="repo1", out=tmp_path / "s", cache_dir=tmp_path / "c"
    )
    addr = scenario.addresses
    assert _staged(tmp_path / "s") == {(None, None, addr["D1"], "RELATIVE"), (None, None, addr["B2"], "RELATIVE")}
    assert fake.paths("POST").count("/api/v1/repositories/repo1/gc/prepare_uncommited") == 2
    # every branch before lakeFS's GC answer (_sys, dev, main, wipe), then the visible ones (dev, main, wipe)
    assert fake.paths("GET").count("/api/v1/repositories/repo1/branches") == 4 + 3
    assert result.rows["branches"] == 4


def test_staged_fallback_diff_and_stat_when_prepare_uncommited_is_absent(
    scenario: Scenario, serve: Any, creds: None, tmp_path: Path
) -> None:
    fake, addr = scenario.fake, scenario.addresses
    fake.disabled = {"prepare_uncommitted"}
    result = extract_repository(
        config=resolve_config(serve(fake)), repository="repo1", out=tmp_path / "s", cache_dir=tmp_path / "c"
    )
    assert result.staged_source == "diff + stat"
    assert _staged(tmp_path / "s") == {
        ("dev", "new/d.csv", addr["D1"], "RELATIVE"),
        ("dev", "ext.csv", "s3://elsewhere-bucket/ext.csv", "FULL"),
        ("main", "b.csv", addr["B2"], "RELATIVE"),
    }
    assert len([p for p in fake.paths("GET") if p.endswith("/objects/stat")]) == 3  # one per staged object


def test_older_lakefs_deprecated_dump_and_synchronous_prepare(
    scenario: Scenario, serve: Any, creds: None, tmp_path: Path
) -> None:
    fake = scenario.fake
    fake.disabled = {"dump_submit", "prepare_commits_async"}
    result = extract_repository(
        config=resolve_config(serve(fake)), repository="repo1", out=tmp_path / "s", cache_dir=tmp_path / "c"
    )
    assert result.dump_endpoint == "PUT /repositories/{repository}/refs/dump"
    assert ("PUT", "/api/v1/repositories/repo1/refs/dump") in fake.requests
    assert ("POST", "/api/v1/repositories/repo1/gc/prepare_commits") in fake.requests
    assert set(_commits(tmp_path / "s")) == set(fake.commits)
    assert result.lakefs_gc_commits == 4


def test_a_dump_racing_a_commit_is_dumped_again(
    scenario: Scenario, serve: Any, creds: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """lakeFS dumps commits, then branches: a commit landing in between leaves a branch on a
    commit the dump lacks. Extract dumps again rather than fail or write a broken snapshot."""
    fake = scenario.fake
    fake.upload("dev", "late.csv", scenario.now)
    late = fake.commit("dev", "landed during the dump", scenario.now)
    original = fake._dump
    dumps: list[Any] = []

    def racing(every_time: bool) -> Any:
        if dumps and not every_time:
            dumps.append(original())
            return dumps[-1]
        commit = fake.commits.pop(late)  # not yet there when commits are dumped...
        try:
            dumps.append(original())  # ...but dev already points at it when branches are
        finally:
            fake.commits[late] = commit
        return dumps[-1]

    monkeypatch.setattr(fake, "_dump", lambda: racing(False))
    extract_repository(config=resolve_config(serve(fake)), repository="repo1", out=tmp_path / "s", cache_dir=tmp_path / "c")
    assert len(dumps) == 2
    assert late in _commits(tmp_path / "s")

    dumps.clear()
    monkeypatch.setattr(fake, "_dump", lambda: racing(True))
    with pytest.raises(BadInput, match=f"branch 'dev' points at commit '{late}'"):
        extract_repository(config=resolve_config(serve(fake)), repository="repo1", out=tmp_path / "t", cache_dir=tmp_path / "c")
    assert len(dumps) == 3 and not (tmp_path / "t").exists()


def test_no_gc_rules_no_lakefs_answer(scenario: Scenario, serve: Any, creds: None, tmp_path: Path) -> None:
    fake = scenario.fake
    fake.gc_rules = None
    result = extract_repository(
        config=resolve_config(serve(fake)), repository="repo1", out=tmp_path / "s", cache_dir=tmp_path / "c", jobs=2
    )
    names = {p.name for p in (tmp_path / "s").iterdir()}
    assert not names & {"gc_rules.json", "lakefs_gc_commits.csv", "lakefs_gc_commits.json"}
    assert not [p for p in fake.paths() if "prepare_commits" in p]
    assert not result.gc_rules and result.rows["ranges"] == len(_rows(tmp_path / "s" / "ranges.parquet"))


def test_second_extract_reuses_cached_ranges(
    scenario: Scenario, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = scenario.fake
    endpoint = serve(fake)
    cache = tmp_path / "cache"
    code, stdout, err = _extract(capsys, endpoint, tmp_path / "a", cache)
    assert code == 0, err
    total = int(stdout.split("ranges: ")[1].split(" ")[0])
    code, stdout, _ = _extract(capsys, endpoint, tmp_path / "b", cache)
    assert code == 0 and f"ranges: {total} ({total} reused from cache, 0 read)" in stdout

    fake.upload("dev", "later.csv", scenario.now)
    fake.commit("dev", "later", scenario.now)
    code, stdout, _ = _extract(capsys, endpoint, tmp_path / "b", cache, "--force")
    assert code == 0 and "0 reused" not in stdout and " 0 read" not in stdout
    assert "later.csv" in {r["key"] for r in _rows(tmp_path / "b" / "ranges.parquet")}


def test_local_namespace_with_local_blockstore(serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blockstore = tmp_path / "blockstore"
    scenario = build_scenario(LocalNamespace(blockstore / "repo1", uri="local://repo1"))
    endpoint = serve(scenario.fake)
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, endpoint, out, tmp_path / "cache")
    assert code == 2 and "--local-blockstore" in err and not out.exists()
    code, _, err = _extract(capsys, endpoint, out, tmp_path / "cache", "--local-blockstore", str(blockstore))
    assert code == 0, err
    assert set(_commits(out)) == set(scenario.fake.commits)
    assert (out / "lakefs_gc_commits.csv").is_file() and len(_rows(out / "staged.parquet")) == 2


def test_no_staged_option_is_gone(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["extract", "--repo", "r", "--out", str(tmp_path / "o"), "--no-staged"])
    assert raised.value.code == 2
    assert "--no-staged" in capsys.readouterr().err


# -- bad input: exit 2, one line, nothing that looks like a snapshot -------------------------


def _assert_failed_cleanly(code: int, err: str, out: Path, *needles: str) -> None:
    assert code == 2
    assert err.startswith("lakewarden: ") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err
    assert SECRET not in err
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}")]


def test_unreachable_endpoint(creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, f"http://127.0.0.1:{port}", out, tmp_path / "cache")
    _assert_failed_cleanly(code, err, out, "cannot reach lakeFS", str(port))


def test_rejected_credentials(
    scenario: Scenario, serve: Any, creds: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", "wrong-secret")
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, serve(scenario.fake), out, tmp_path / "cache")
    _assert_failed_cleanly(code, err, out, "rejected the credentials (401)")
    assert "wrong-secret" not in err


@pytest.mark.parametrize(
    "forbidden", ["GET ", "POST /dump", "POST /gc/prepare_uncommited"], ids=["repository", "dump", "uncommitted"]
)
def test_denied_access(
    scenario: Scenario, serve: Any, creds: None, forbidden: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Valid credentials without permission (403): at once, or midway (a 403 is never "absent")."""
    fake = scenario.fake
    fake.forbidden = forbidden
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, serve(fake), out, tmp_path / "cache")
    _assert_failed_cleanly(code, err, out, "denied access (403)")
    assert "rejected the credentials" not in err


def test_no_refs_dump_endpoint_at_all(scenario: Scenario, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario.fake.disabled = {"dump_submit", "dump_refs"}
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, serve(scenario.fake), out, tmp_path / "cache")
    _assert_failed_cleanly(code, err, out, "refs dump", "--lakefs-endpoint")


def test_unknown_repository(scenario: Scenario, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "snap"
    code = main(["extract", "--lakefs-endpoint", serve(scenario.fake), "--repo", "nope", "--out", str(out),
                 "--cache-dir", str(tmp_path / "c")])
    _assert_failed_cleanly(code, capsys.readouterr().err, out, "repository 'nope' does not exist")


def _a_range_of(scenario: Scenario, commit: str) -> str:
    from lakewarden.extract.ranges import read_metarange

    metarange = scenario.fake.commits[scenario.commits[commit]].meta_range_id
    return read_metarange(scenario.fake.ns.get(f"_lakefs/{metarange}"), metarange)[0]


def test_missing_range_file(scenario: Scenario, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = _a_range_of(scenario, "s1")
    scenario.fake.ns.delete(f"_lakefs/{missing}")
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, serve(scenario.fake), out, tmp_path / "cache")
    _assert_failed_cleanly(code, err, out, f"range {missing} is missing from storage")


def test_corrupt_range_file(scenario: Scenario, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = scenario.fake.ns.root / "_lakefs" / _a_range_of(scenario, "X")  # type: ignore[attr-defined]
    data = bytearray(path.read_bytes())
    data[20] ^= 0xFF
    path.write_bytes(bytes(data))
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, serve(scenario.fake), out, tmp_path / "cache")
    _assert_failed_cleanly(code, err, out, "checksum mismatch", str(path))


def test_bad_gc_commits_csv(
    scenario: Scenario, serve: Any, creds: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake = scenario.fake
    original = fake._prepare_commits

    def wrong_header() -> Any:
        answer = original()
        fake.ns.put(f"_lakefs/retention/gc/commits/run_id={answer.run_id}/commits.csv", b"id,metarange\nx,y\n")
        return answer

    monkeypatch.setattr(fake, "_prepare_commits", wrong_header)
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, serve(fake), out, tmp_path / "cache")
    _assert_failed_cleanly(code, err, out, "commits.csv: header:", "commit_id,expired,metarange_id")


def test_bad_uncommitted_file(
    scenario: Scenario, serve: Any, creds: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake = scenario.fake
    original = fake._prepare_uncommitted

    def without_address(token: str | None) -> Any:
        answer = original(token)
        key = answer.gc_uncommitted_location[len(fake.ns.uri) + 1:]
        for name in (fake.ns.root / key).iterdir():  # type: ignore[attr-defined]
            sink = io.BytesIO()
            pq.write_table(pa.table({"address": ["x"], "creation_date": [1]}), sink)
            name.write_bytes(sink.getvalue())
        return answer

    monkeypatch.setattr(fake, "_prepare_uncommitted", without_address)
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, serve(fake), out, tmp_path / "cache")
    _assert_failed_cleanly(code, err, out, "_lakefs/retention/gc/uncommitted/", ": physical_address: column missing")


def test_existing_output_needs_force(scenario: Scenario, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "snap"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    code, _, err = _extract(capsys, serve(scenario.fake), out, tmp_path / "cache")
    assert code == 2 and "--force" in err
    assert (out / "keep.txt").exists()
    assert scenario.fake.requests == []  # refused before any network call


def test_failed_forced_extract_keeps_the_old_snapshot(
    scenario: Scenario, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = scenario.fake
    endpoint = serve(fake)
    out = tmp_path / "snap"
    assert _extract(capsys, endpoint, out, tmp_path / "cache")[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    head = fake.head("dev")
    fake.commits["e" * 64] = Commit("e" * 64, [head.commit_id], head.creation_date, "no-such-metarange",
                                    "ann", "broken", 1, head.generation + 1, {})
    fake.branches["dev"].commit_id = "e" * 64
    code, _, err = _extract(capsys, endpoint, out, tmp_path / "cache", "--force")
    assert code == 2 and "metarange no-such-metarange is missing from storage" in err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_job_needs_a_snapshot_or_a_repository(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gc", "committed", "--dry-run"]) == 2
    assert "--snapshot" in capsys.readouterr().err


def test_creation_dates_are_utc(scenario: Scenario, serve: Any, creds: None, tmp_path: Path) -> None:
    extract_repository(config=resolve_config(serve(scenario.fake)), repository="repo1", out=tmp_path / "s", cache_dir=tmp_path / "c")
    table = pq.read_table(tmp_path / "s" / "commits.parquet")
    assert table.schema.field("creation_date").type == pa.timestamp("us", tz="UTC")
    assert all(row["creation_date"].utcoffset() == timezone.utc.utcoffset(None) for row in table.to_pylist())
