"""``lakewarden extract`` against a fake lakeFS on 127.0.0.1 and SSTables on local storage.

The fake server answers with JSON built from ``lakefs_sdk``'s own models (``.to_dict()``), so
the response shapes are the SDK's, not ours; it pages with a tiny page size to exercise
pagination. Storage holds real lakeFS fixture files plus ranges written by our writer.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import lakefs_sdk
import pyarrow.parquet as pq
import pytest

from lakewarden.cli import main
from lakewarden.errors import BadInput
from lakewarden.extract import extract_repository
from lakewarden.extract.config import LakeFSConfig, api_base_url, resolve_config
from lakewarden.sstable_writer import RangeInfo, write_metarange, write_range

KEY, SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
FIXTURE_RANGE_ID = "a83af763ba098c15369d9d6d723731eb9ce18b8dfac4f88c6f1287e772393d0e"
FIXTURE_METARANGE_ID = "f1x7ure0000000000000000000000000000000000000000000000000000000000"
PAGE = 2


@dataclass
class FakeLakeFS:
    """Repository state served by :class:`_Handler`."""

    repo: lakefs_sdk.Repository
    branches: list[lakefs_sdk.Ref]
    hidden: set[str]
    tags: list[lakefs_sdk.Ref]
    commits: dict[str, lakefs_sdk.Commit]
    gc_rules: lakefs_sdk.GarbageCollectionRules | None
    diffs: dict[str, list[lakefs_sdk.Diff]] = field(default_factory=dict)
    stats: dict[tuple[str, str], lakefs_sdk.ObjectStats] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    forbidden: str | None = None  # regex over the path after /repositories/{repo}: answered 403

    def log(self, ref: str) -> list[lakefs_sdk.Commit]:
        head = next((b.commit_id for b in self.branches + self.tags if b.id == ref), ref)
        seen: dict[str, lakefs_sdk.Commit] = {}
        todo = [head]
        while todo:
            commit = self.commits[todo.pop()]
            if commit.id not in seen:
                seen[commit.id] = commit
                todo.extend(commit.parents)
        return sorted(seen.values(), key=lambda c: (-c.creation_date, c.id))


def _page(items: list[Any], query: dict[str, list[str]]) -> dict[str, Any]:
    start = int(query.get("after", ["0"])[0] or 0)
    chunk = items[start : start + PAGE]
    has_more = start + PAGE < len(items)
    pagination = lakefs_sdk.Pagination(
        has_more=has_more, next_offset=str(start + PAGE) if has_more else "", results=len(chunk), max_per_page=PAGE
    )
    return {"pagination": pagination.to_dict(), "results": [item.to_dict() for item in chunk]}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLakeFS

    def log_message(self, *_: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        fake = self.fake
        url = urlparse(self.path)
        query = parse_qs(url.query)
        fake.requests.append(url.path)
        expected = "Basic " + base64.b64encode(f"{KEY}:{SECRET}".encode()).decode()
        if self.headers.get("Authorization") != expected:
            return self._send(401, lakefs_sdk.Error(message="error authenticating request").to_dict())
        match = re.fullmatch(r"/api/v1/repositories/([^/]+)(/.*)?", url.path)
        if not match or unquote(match.group(1)) != fake.repo.id:
            return self._send(404, lakefs_sdk.Error(message="repository not found").to_dict())
        rest = match.group(2) or ""
        if fake.forbidden is not None and re.fullmatch(fake.forbidden, rest):
            return self._send(403, lakefs_sdk.Error(message="insufficient permissions").to_dict())
        if rest == "":
            return self._send(200, fake.repo.to_dict())
        if rest == "/branches":
            show_hidden = query.get("show_hidden", ["false"])[0].lower() == "true"
            refs = [b for b in fake.branches if show_hidden or b.id not in fake.hidden]
            return self._send(200, _page(refs, query))
        if rest == "/tags":
            return self._send(200, _page(fake.tags, query))
        if rest == "/settings/gc_rules":
            if fake.gc_rules is None:
                return self._send(404, lakefs_sdk.Error(message="no gc rules").to_dict())
            return self._send(200, fake.gc_rules.to_dict())
        if m := re.fullmatch(r"/refs/([^/]+)/commits", rest):
            return self._send(200, _page(fake.log(unquote(m.group(1))), query))
        if m := re.fullmatch(r"/branches/([^/]+)/diff", rest):
            return self._send(200, _page(fake.diffs.get(unquote(m.group(1)), []), query))
        if m := re.fullmatch(r"/refs/([^/]+)/objects/stat", rest):
            stat = fake.stats.get((unquote(m.group(1)), query["path"][0]))
            if stat is None:
                return self._send(404, lakefs_sdk.Error(message="not found").to_dict())
            return self._send(200, stat.to_dict())
        return self._send(404, lakefs_sdk.Error(message=f"no route {rest}").to_dict())


@pytest.fixture
def serve() -> Iterator[Any]:
    """Start a fake lakeFS for a given state; stopped at the end of the test."""
    servers: list[ThreadingHTTPServer] = []

    def start(fake: FakeLakeFS) -> str:
        handler = type("Handler", (_Handler,), {"fake": fake})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _entry(key: str, address: str, address_type: str = "RELATIVE", day: int = 1) -> dict[str, Any]:
    return {
        "key": key,
        "address": address,
        "address_type": address_type,
        "last_modified": datetime(2024, 5, day, 12, 0, tzinfo=timezone.utc),
        "size": len(key),
        "etag": f"{abs(hash(key)):032x}"[:32],
    }


def _commit(cid: str, parents: list[str], day: int, meta_range_id: str) -> lakefs_sdk.Commit:
    return lakefs_sdk.Commit(
        id=cid,
        parents=parents,
        committer="ann",
        message=f"commit {cid}",
        creation_date=int(datetime(2024, 5, day, tzinfo=timezone.utc).timestamp()),
        meta_range_id=meta_range_id,
        metadata={},
        generation=len(parents),
        version=1,
    )


@dataclass
class Repo:
    fake: FakeLakeFS
    namespace: Path
    ranges: dict[str, RangeInfo]


@pytest.fixture
def repo(tmp_path: Path, sstable_fixtures: Path) -> Repo:
    """main: c0 <- c1 (real lakeFS metarange) <- c2; dev: c1 <- c3; tag v1 -> c1; hidden branch."""
    ns = tmp_path / "storage" / "ns"
    lakefs_dir = ns / "_lakefs"
    lakefs_dir.mkdir(parents=True)
    shutil.copyfile(sstable_fixtures / "lakefs" / "range.sst", lakefs_dir / FIXTURE_RANGE_ID)
    shutil.copyfile(sstable_fixtures / "lakefs" / "metarange.sst", lakefs_dir / FIXTURE_METARANGE_ID)
    fixture_range = RangeInfo(FIXTURE_RANGE_ID, b"a/b/c/no", b"a/b/c/yes", 2, 1182)
    r1 = write_range(
        [
            _entry("data/one.csv", "data/0001"),
            _entry("data/two.csv", "s3://elsewhere/two.csv", "FULL"),
            _entry("legacy/old.bin", "9f86d081884c7d659a2feaa0c55ad015", "BY_PREFIX_DEPRECATED"),
        ],
        directory=lakefs_dir,
    )
    r3 = write_range([_entry(f"zz/{i:04d}", f"data/z{i:04d}", day=2) for i in range(500)], directory=lakefs_dir)
    m2 = write_metarange([fixture_range, r1], directory=lakefs_dir)
    m3 = write_metarange([fixture_range, r3], directory=lakefs_dir)
    commits = {
        "c0": _commit("c0", [], 1, ""),
        "c1": _commit("c1", ["c0"], 2, FIXTURE_METARANGE_ID),
        "c2": _commit("c2", ["c1"], 3, m2),
        "c3": _commit("c3", ["c1"], 4, m3),
    }
    fake = FakeLakeFS(
        repo=lakefs_sdk.Repository(
            id="repo1", creation_date=1714521600, default_branch="main", storage_namespace=f"file://{ns}"
        ),
        branches=[
            lakefs_sdk.Ref(id="_hidden", commit_id="c2"),
            lakefs_sdk.Ref(id="dev", commit_id="c3"),
            lakefs_sdk.Ref(id="main", commit_id="c2"),
        ],
        hidden={"_hidden"},
        tags=[lakefs_sdk.Ref(id="v1", commit_id="c1")],
        commits=commits,
        gc_rules=lakefs_sdk.GarbageCollectionRules(
            default_retention_days=7,
            branches=[lakefs_sdk.GarbageCollectionRule(branch_id="main", retention_days=14)],
        ),
        diffs={
            "dev": [
                lakefs_sdk.Diff(type="added", path="new/file.txt", path_type="object", size_bytes=3),
                lakefs_sdk.Diff(type="removed", path="data/one.csv", path_type="object"),
                lakefs_sdk.Diff(type="changed", path="ext/link", path_type="object", size_bytes=9),
            ]
        },
        stats={
            ("dev", "new/file.txt"): lakefs_sdk.ObjectStats(
                path="new/file.txt", path_type="object", physical_address=f"file://{ns}/data/staged01",
                checksum="abc", mtime=1717200000, size_bytes=3,
            ),
            ("dev", "ext/link"): lakefs_sdk.ObjectStats(
                path="ext/link", path_type="object", physical_address="s3://other-bucket/x/y",
                checksum="def", mtime=1717200060, size_bytes=9,
            ),
        },
    )
    return Repo(fake, ns, {"r1": r1, "r3": r3, "fixture": fixture_range, "m2": m2, "m3": m3})  # type: ignore[dict-item]


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


def test_extract_writes_a_complete_snapshot(
    repo: Repo, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint = serve(repo.fake)
    out = tmp_path / "snap"
    code, stdout, err = _extract(capsys, endpoint, out, tmp_path / "cache")
    assert code == 0, err
    assert "ranges: 3 (0 reused from cache, 3 read)" in stdout

    assert json.loads((out / "repository.json").read_text()) == {
        "repository_id": "repo1", "storage_namespace": f"file://{repo.namespace}", "default_branch": "main",
    }
    assert json.loads((out / "gc_rules.json").read_text()) == {
        "default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 14}],
    }
    commits = {c["commit_id"]: c for c in _rows(out / "commits.parquet")}
    assert set(commits) == {"c0", "c1", "c2", "c3"}
    assert commits["c2"]["parents"] == ["c1"] and commits["c0"]["parents"] == []
    assert commits["c3"]["creation_date"] == datetime(2024, 5, 4, tzinfo=timezone.utc)
    assert commits["c1"]["meta_range_id"] == FIXTURE_METARANGE_ID and commits["c0"]["meta_range_id"] == ""
    assert commits["c1"]["version"] == 1 and commits["c1"]["committer"] == "ann"

    branches = {b["branch_id"]: (b["commit_id"], b["hidden"]) for b in _rows(out / "branches.parquet")}
    assert branches == {"main": ("c2", False), "dev": ("c3", False), "_hidden": ("c2", True)}
    assert _rows(out / "tags.parquet") == [{"tag_id": "v1", "commit_id": "c1"}]

    metaranges = {(m["meta_range_id"], m["range_id"]) for m in _rows(out / "metaranges.parquet")}
    assert metaranges == {
        (FIXTURE_METARANGE_ID, FIXTURE_RANGE_ID),
        (repo.ranges["m2"], FIXTURE_RANGE_ID), (repo.ranges["m2"], repo.ranges["r1"].range_id),
        (repo.ranges["m3"], FIXTURE_RANGE_ID), (repo.ranges["m3"], repo.ranges["r3"].range_id),
    }

    ranges = pq.read_table(out / "ranges.parquet").to_pylist()
    assert len(ranges) == 2 + 3 + 500
    by_key = {r["key"]: r for r in ranges}
    assert by_key["a/b/c/no"]["range_id"] == FIXTURE_RANGE_ID
    assert by_key["a/b/c/no"]["address"] == "b0c968736d8f42a2b1c6284835f08226"
    assert by_key["a/b/c/no"]["size"] == 11
    assert by_key["data/two.csv"]["address_type"] == "FULL"
    assert by_key["legacy/old.bin"]["address_type"] == "RELATIVE"  # deprecated type resolved
    assert by_key["zz/0499"]["last_modified"] == datetime(2024, 5, 2, 12, 0, tzinfo=timezone.utc)
    assert {r["address_type"] for r in ranges} == {"RELATIVE", "FULL"}

    assert _rows(out / "staged.parquet") == [
        {"branch_id": "dev", "key": "new/file.txt", "address": "data/staged01", "address_type": "RELATIVE",
         "last_modified": datetime.fromtimestamp(1717200000, tz=timezone.utc)},
        {"branch_id": "dev", "key": "ext/link", "address": "s3://other-bucket/x/y", "address_type": "FULL",
         "last_modified": datetime.fromtimestamp(1717200060, tz=timezone.utc)},
    ]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".snap")]
    assert SECRET not in stdout + err


def test_second_extract_reuses_cached_ranges(
    repo: Repo, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint = serve(repo.fake)
    cache = tmp_path / "cache"
    assert _extract(capsys, endpoint, tmp_path / "a", cache)[0] == 0
    # Cached ranges are used even when the storage copy is gone: they are immutable.
    (repo.namespace / "_lakefs" / repo.ranges["r3"].range_id).unlink()
    code, stdout, _ = _extract(capsys, endpoint, tmp_path / "b", cache)
    assert code == 0 and "ranges: 3 (3 reused from cache, 0 read)" in stdout
    assert pq.read_table(tmp_path / "b" / "ranges.parquet").num_rows == 505

    # A new commit with one new range: only that range is read.
    r4 = write_range([_entry("new/x", "data/x")], directory=repo.namespace / "_lakefs")
    m4 = write_metarange([repo.ranges["r1"], r4], directory=repo.namespace / "_lakefs")
    repo.fake.commits["c4"] = _commit("c4", ["c2"], 5, m4)
    repo.fake.branches[2] = lakefs_sdk.Ref(id="main", commit_id="c4")
    code, stdout, _ = _extract(capsys, endpoint, tmp_path / "b", cache, "--force")
    assert code == 0 and "ranges: 4 (3 reused from cache, 1 read)" in stdout
    assert "new/x" in {r["key"] for r in _rows(tmp_path / "b" / "ranges.parquet")}


def test_commit_walk_reads_shared_history_once(repo: Repo, serve: Any, creds: None, tmp_path: Path) -> None:
    endpoint = serve(repo.fake)
    extract_repository(
        config=resolve_config(endpoint), repository="repo1", out=tmp_path / "s", cache_dir=tmp_path / "c"
    )
    log_calls = [p for p in repo.fake.requests if p.endswith("/commits")]
    # c2 (main and _hidden): 2 pages; c3 (dev): 1 page reaching known c1; tag v1 -> c1 known: none.
    assert log_calls == ["/api/v1/repositories/repo1/refs/c2/commits"] * 2 + ["/api/v1/repositories/repo1/refs/c3/commits"]


def test_no_gc_rules_and_jobs(repo: Repo, serve: Any, creds: None, tmp_path: Path) -> None:
    repo.fake.gc_rules = None
    result = extract_repository(
        config=resolve_config(serve(repo.fake)), repository="repo1", out=tmp_path / "s",
        cache_dir=tmp_path / "c", jobs=2,
    )
    assert not (tmp_path / "s" / "gc_rules.json").exists()
    assert result.ranges_read == 3 and result.rows["ranges"] == 505 and not result.gc_rules


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
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, f"http://127.0.0.1:{port}", out, tmp_path / "cache")
    _assert_failed_cleanly(code, err, out, "cannot reach lakeFS", str(port))


def test_rejected_credentials(
    repo: Repo, serve: Any, creds: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", "wrong-secret")
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, serve(repo.fake), out, tmp_path / "cache")
    _assert_failed_cleanly(code, err, out, "rejected the credentials (401)")
    assert "wrong-secret" not in err


@pytest.mark.parametrize("forbidden", ["", r"/refs/[^/]+/commits"], ids=["repository", "commit-log"])
def test_denied_access(
    repo: Repo, serve: Any, creds: None, forbidden: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Valid credentials without permission (403): at once, or midway through the commit walk."""
    repo.fake.forbidden = forbidden
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, serve(repo.fake), out, tmp_path / "cache")
    _assert_failed_cleanly(code, err, out, "denied access (403)")
    assert "rejected the credentials" not in err
    assert any(re.fullmatch(r"/api/v1/repositories/[^/]+" + forbidden, path) for path in repo.fake.requests)
    if forbidden:  # the failure came after the extract had started reading the repository
        assert f"/api/v1/repositories/{repo.fake.repo.id}" in repo.fake.requests


def test_unknown_repository(repo: Repo, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "snap"
    code = main(["extract", "--lakefs-endpoint", serve(repo.fake), "--repo", "nope", "--out", str(out),
                 "--cache-dir", str(tmp_path / "c")])
    _assert_failed_cleanly(code, capsys.readouterr().err, out, "repository 'nope' does not exist")


def test_missing_range_file(repo: Repo, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = repo.ranges["r3"].range_id
    (repo.namespace / "_lakefs" / missing).unlink()
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, serve(repo.fake), out, tmp_path / "cache")
    _assert_failed_cleanly(code, err, out, f"range {missing} is missing from storage")


def test_corrupt_range_file(repo: Repo, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = repo.namespace / "_lakefs" / repo.ranges["r3"].range_id
    data = bytearray(path.read_bytes())
    data[20] ^= 0xFF
    path.write_bytes(bytes(data))
    out = tmp_path / "snap"
    code, _, err = _extract(capsys, serve(repo.fake), out, tmp_path / "cache")
    _assert_failed_cleanly(code, err, out, "checksum mismatch", str(path))


def test_existing_output_needs_force(repo: Repo, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "snap"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    code, _, err = _extract(capsys, serve(repo.fake), out, tmp_path / "cache")
    assert code == 2 and "--force" in err
    assert (out / "keep.txt").exists()
    assert repo.fake.requests == []  # refused before any network call


def test_failed_forced_extract_keeps_the_old_snapshot(
    repo: Repo, serve: Any, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint = serve(repo.fake)
    out = tmp_path / "snap"
    assert _extract(capsys, endpoint, out, tmp_path / "cache")[0] == 0
    before = sorted(p.name for p in out.iterdir())
    repo.fake.commits["c5"] = _commit("c5", ["c2"], 6, "no-such-metarange")
    repo.fake.branches[2] = lakefs_sdk.Ref(id="main", commit_id="c5")
    code, _, err = _extract(capsys, endpoint, out, tmp_path / "cache", "--force")
    assert code == 2 and "metarange no-such-metarange is missing from storage" in err
    assert sorted(p.name for p in out.iterdir()) == before


# -- configuration ---------------------------------------------------------------------------


def test_config_from_lakectl_yaml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config_file = tmp_path / "lakectl.yaml"
    config_file.write_text(
        "credentials:\n  access_key_id: AKIAFILE\n  secret_access_key: file-secret\n"
        "server:\n  endpoint_url: http://lakefs.example:8000/api/v1\n"
    )
    for name in ("LAKECTL_CREDENTIALS_ACCESS_KEY_ID", "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", "LAKECTL_SERVER_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LAKECTL_CONFIG_FILE", str(config_file))
    config = resolve_config()
    assert config == LakeFSConfig("http://lakefs.example:8000/api/v1", "AKIAFILE", "file-secret")
    assert "file-secret" not in repr(config)
    monkeypatch.setenv("LAKECTL_CREDENTIALS_ACCESS_KEY_ID", "AKIAENV")
    assert resolve_config("http://other:8000").access_key_id == "AKIAENV"
    assert resolve_config("http://other:8000").endpoint == "http://other:8000"


def test_no_endpoint_is_bad_input(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LAKECTL_SERVER_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("LAKECTL_CONFIG_FILE", str(tmp_path / "absent.yaml"))
    with pytest.raises(BadInput, match="no lakeFS endpoint"):
        resolve_config()


def test_api_base_url() -> None:
    assert api_base_url("http://h:8000") == "http://h:8000/api/v1"
    assert api_base_url("http://h:8000/api/v1/") == "http://h:8000/api/v1"


# -- jobs straight from a live repository (extract, then run) ---------------------------------


@pytest.mark.spark
def test_gc_committed_runs_on_a_live_repository(
    repo: Repo, serve: Any, creds: None, spark: Any, test_state_dir: Path, tmp_path: Path
) -> None:
    endpoint = serve(repo.fake)
    rules = tmp_path / "rules.json"
    rules.write_text('{"default_retention_days": 1, "branches": []}')
    report = tmp_path / "report"
    code = main(
        ["gc", "committed", "--lakefs-endpoint", endpoint, "--repo", "repo1", "--rules", str(rules),
         "--now", "2024-07-01T00:00:00Z", "--dry-run", "--report", str(report), "--state", str(test_state_dir)]
    )
    assert code == 0
    assert (test_state_dir / "snapshots" / "repo1" / "repository.json").is_file()
    summary = json.loads((report / "summary.json").read_text())
    assert summary["repository_id"] == "repo1" and summary["success"] is True
    marked = (report / "addresses.csv").read_text().splitlines()[1:]
    # c0 (empty) expires; c1 stays (tag v1, retained by default); nothing outside the namespace
    assert all("elsewhere" not in line and "other-bucket" not in line for line in marked)


def test_job_needs_a_snapshot_or_a_repository(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gc", "committed", "--dry-run"]) == 2
    assert "--snapshot" in capsys.readouterr().err
