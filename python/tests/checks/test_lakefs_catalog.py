"""LakeFSCatalog against a local fake of the lakeFS REST endpoints it uses (through lakefs-sdk)."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

pytest.importorskip("lakefs_sdk")

from lakewarden.checks.catalog import LakeFSCatalog  # noqa: E402
from lakewarden.checks.errors import CatalogError, NotFound  # noqa: E402
from lakewarden.lakefs.client import LakeFSConfig, resolve_config  # noqa: E402

COMMIT = "a" * 64
ACTION = b"checks:\n  - {id: a, type: webhook, properties: {url: 'http://127.0.0.1:9'}}\n"
OBJECTS = {
    "_lakefs_actions/a.yaml": ACTION,
    "_lakefs_actions/b.yaml": ACTION.replace(b"id: a", b"id: b"),
    "_lakefs_actions/sub/c.yaml": b"ignored",
}
AUTH = "Basic " + base64.b64encode(b"AKIA:secret").decode()


class FakeLakeFS:
    def __init__(self) -> None:
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def reply(self, status: int, body: Any, raw: bytes | None = None) -> None:
                data = raw if raw is not None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/octet-stream" if raw is not None else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                split = urlsplit(self.path)
                q = {k: v[0] for k, v in parse_qs(split.query).items()}
                path = unquote(split.path)
                outer.paths.append(path)
                if self.headers.get("Authorization") != AUTH:
                    return self.reply(401, {"message": "unauthorized"})
                p = path.removeprefix("/api/v1")
                if p == "/repositories/repo":
                    return self.reply(200, {"id": "repo", "creation_date": 1, "default_branch": "main", "storage_namespace": "s3://b/repo"})
                if p == "/repositories/repo/branches/main":
                    return self.reply(200, {"id": "main", "commit_id": COMMIT})
                if p == "/repositories/repo/tags/v1":
                    return self.reply(200, {"id": "v1", "commit_id": COMMIT})
                if p == f"/repositories/repo/commits/{COMMIT}":
                    return self.reply(200, {"id": COMMIT, "parents": [], "committer": "me", "message": "m", "creation_date": 1700000000, "meta_range_id": "mr", "metadata": {"k": "v"}})
                if p == f"/repositories/repo/refs/{COMMIT}/objects/ls":
                    keys = sorted(k for k in OBJECTS if k.startswith(q.get("prefix", "")) and k > q.get("after", ""))
                    page, more = keys[:2], len(keys) > 2
                    results = [{"path": k, "path_type": "object", "physical_address": "s3://b/x", "checksum": "c", "mtime": 1, "size_bytes": len(OBJECTS[k])} for k in page]
                    return self.reply(200, {"pagination": {"has_more": more, "next_offset": page[-1] if more else "", "results": len(page), "max_per_page": 2}, "results": results})
                if p == f"/repositories/repo/refs/{COMMIT}/objects" and q.get("path") in OBJECTS:
                    return self.reply(200, None, OBJECTS[q["path"]])
                return self.reply(404, {"message": "not found"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def lakefs() -> Iterator[FakeLakeFS]:
    fake = FakeLakeFS()
    yield fake
    fake.close()


def test_resolves_refs_and_reads_action_files(lakefs: FakeLakeFS) -> None:
    catalog = LakeFSCatalog(LakeFSConfig(lakefs.url, "AKIA", "secret"))
    main = catalog.resolve("repo", "main")
    assert (main.kind, main.commit_id, main.branch_id, main.committer) == ("branch", COMMIT, "main", "me")
    assert main.repository.storage_namespace == "s3://b/repo" and main.commit_metadata == {"k": "v"}
    assert catalog.resolve("repo", "v1").kind == "tag"
    assert catalog.resolve("repo", COMMIT).kind == "commit"
    assert catalog.action_files("repo", COMMIT) == [
        ("_lakefs_actions/a.yaml", OBJECTS["_lakefs_actions/a.yaml"]),
        ("_lakefs_actions/b.yaml", OBJECTS["_lakefs_actions/b.yaml"]),
    ]
    with pytest.raises(NotFound, match="ref 'nope' not found"):
        catalog.resolve("repo", "nope")
    with pytest.raises(NotFound, match="repository 'other' not found"):
        catalog.resolve("other", "main")
    with pytest.raises(CatalogError, match="401"):
        LakeFSCatalog(LakeFSConfig(lakefs.url, "AKIA", "wrong")).resolve("repo", "main")


def test_serve_finds_its_credentials_by_lakectls_rule_and_by_the_former_names(lakefs: FakeLakeFS, tmp_path) -> None:
    """checks serve builds its catalog from resolve_config (the rule every command follows):
    lakectl's variables authenticate, and so do the names the service read before."""
    absent = {"LAKECTL_CONFIG_FILE": str(tmp_path / "absent.yaml")}
    lakectl = {**absent, "LAKECTL_CREDENTIALS_ACCESS_KEY_ID": "AKIA", "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY": "secret"}
    former = {**absent, "LAKEFS_ACCESS_KEY_ID": "AKIA", "LAKEFS_SECRET_ACCESS_KEY": "secret"}
    for env in (lakectl, former):
        assert LakeFSCatalog(resolve_config(lakefs.url, env=env)).resolve("repo", "main").commit_id == COMMIT
    with pytest.raises(CatalogError, match="401"):
        LakeFSCatalog(resolve_config(lakefs.url, env=absent)).resolve("repo", "main")
