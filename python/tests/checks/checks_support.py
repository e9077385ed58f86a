"""Test support for branch checks: build snapshots, receive webhooks, run the service in-process."""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from lakewarden.checks.catalog import SnapshotCatalog
from lakewarden.checks.config import parse_service_config
from lakewarden.checks.server import ChecksServer
from lakewarden.checks.service import ChecksService
from lakewarden.checks.store import Store
from lakewarden.checks.timeout_reaper import TimeoutReaper

API_TOKEN = "test-api-token-0123456789"
REPO = "sample"


class SnapshotBuilder:
    """A snapshot directory (docs/contract.md §2) whose objects live under a file:// namespace."""

    def __init__(self, directory: Path, namespace: Path, repository_id: str = REPO):
        self.directory = directory
        self.namespace = namespace
        self.repository_id = repository_id
        self.commits: list[dict[str, Any]] = []
        self.branches: dict[str, str] = {}
        self.tags: dict[str, str] = {}
        self.metaranges: list[dict[str, str]] = []
        self.ranges: list[dict[str, Any]] = []
        namespace.mkdir(parents=True, exist_ok=True)

    def commit(
        self,
        files: dict[str, str | bytes],
        *,
        message: str = "commit",
        parents: list[str] | None = None,
        branch: str | None = None,
        full_address: bool = False,
    ) -> str:
        seed = json.dumps([message, sorted(files), len(self.commits)]).encode()
        commit_id = hashlib.sha256(seed).hexdigest()
        meta_range_id = hashlib.sha256(b"mr" + seed).hexdigest()
        range_id = hashlib.sha256(b"r" + seed).hexdigest()
        self.metaranges.append({"meta_range_id": meta_range_id, "range_id": range_id})
        now = datetime.now(timezone.utc).isoformat()
        for key, content in sorted(files.items()):
            data = content.encode() if isinstance(content, str) else content
            address = f"data/{uuid.uuid4().hex}"
            target = self.namespace / address
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            self.ranges.append(
                {
                    "range_id": range_id,
                    "key": key,
                    "address": target.as_uri() if full_address else address,
                    "address_type": "FULL" if full_address else "RELATIVE",
                    "last_modified": now,
                    "size": len(data),
                    "etag": hashlib.md5(data).hexdigest(),
                }
            )
        self.commits.append(
            {
                "commit_id": commit_id,
                "parents": parents or [],
                "creation_date": now,
                "meta_range_id": meta_range_id,
                "committer": "tester",
                "message": message,
                "version": 1,
            }
        )
        if branch:
            self.branches[branch] = commit_id
        return commit_id

    def write(self, fmt: str = "jsonl") -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "repository.json").write_text(
            json.dumps(
                {"repository_id": self.repository_id, "storage_namespace": self.namespace.as_uri(), "default_branch": "main"}
            )
        )
        tables = {
            "commits": self.commits,
            "branches": [{"branch_id": b, "commit_id": c, "hidden": False} for b, c in self.branches.items()],
            "tags": [{"tag_id": t, "commit_id": c} for t, c in self.tags.items()],
            "metaranges": self.metaranges,
            "ranges": self.ranges,
        }
        for name, rows in tables.items():
            for old in (self.directory / f"{name}.jsonl", self.directory / f"{name}.parquet"):
                old.unlink(missing_ok=True)
            if fmt == "parquet":
                import pyarrow as pa
                import pyarrow.parquet as pq

                if rows:
                    pq.write_table(pa.Table.from_pylist(rows), self.directory / f"{name}.parquet")
                else:
                    (self.directory / f"{name}.jsonl").write_text("")
            else:
                (self.directory / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return self.directory


@dataclass
class Received:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: dict[str, Any]


class WebhookReceiver:
    """A tiny webhook executor: records each event and, in ``callback`` mode, calls back.

    ``mode`` is ``callback`` (answer 202, then call back ``result`` from another thread),
    ``record`` (answer 202 only) or ``error`` (answer 500).
    """

    def __init__(self) -> None:
        self.mode = "callback"
        self.result: dict[str, Any] = {"status": "SUCCESS", "metadata": {"rows": "3"}}
        self.callback_delay = 0.05
        #: When set, the executor POSTs this text to the event's output_url before calling back.
        self.log_text: str | None = None
        self.log_answers: list[int] = []
        self.received: list[Received] = []
        self.callback_answers: list[int] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                split = urlsplit(self.path)
                item = Received(split.path, parse_qs(split.query), dict(self.headers.items()), body)
                with outer._lock:
                    outer.received.append(item)
                status = 500 if outer.mode == "error" else 202
                payload = json.dumps({"accepted": status == 202}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                if outer.mode == "callback":
                    threading.Thread(target=outer._call_back, args=(body,), daemon=True).start()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def _call_back(self, event: dict[str, Any]) -> None:
        time.sleep(self.callback_delay)
        if self.log_text is not None:
            logged = requests.post(event["output_url"], data=self.log_text.encode(), timeout=10,
                                   headers={"Content-Type": "text/plain; charset=utf-8"})
            with self._lock:
                self.log_answers.append(logged.status_code)
        answer = requests.post(event["callback_url"], json=self.result, timeout=10)
        with self._lock:
            self.callback_answers.append(answer.status_code)

    def answers(self, at_least: int = 1, timeout: float = 90) -> list[int]:
        """The status codes the service answered this receiver's callbacks with, once at least
        ``at_least`` arrived: the service stores the state before it answers, so a test that saw
        the state may run ahead of the answer."""
        deadline = time.monotonic() + timeout
        while len(self.callback_answers) < at_least and time.monotonic() < deadline:
            time.sleep(0.05)
        return list(self.callback_answers)

    def events(self, at_least: int = 0, timeout: float = 90) -> list[dict[str, Any]]:
        """The events received so far, waiting until there are ``at_least`` (triggers return
        before the executors are called)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                if len(self.received) >= at_least:
                    return [r.body for r in self.received]
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {at_least} events, got {len(self.received)}")
            time.sleep(0.02)

    def __enter__(self) -> "WebhookReceiver":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


@dataclass
class LiveService:
    """A checks service on 127.0.0.1 with its store and reaper; ``api`` helpers wrap requests."""

    url: str
    store: Store
    service: ChecksService
    server: ChecksServer
    reaper: TimeoutReaper
    stopped: bool = field(default=False)

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.reaper.stop()
            self.server.stop()
            self.service.close()
            self.store.close()

    def checks_url(self, ref: str, repo: str = REPO) -> str:
        return f"{self.url}/api/v1/repositories/{repo}/refs/{ref}/checks"

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {API_TOKEN}"}

    def trigger(self, ref: str, check_id: str | None = None, repo: str = REPO) -> requests.Response:
        params = {"id": check_id} if check_id else None
        return requests.post(self.checks_url(ref, repo), params=params, headers=self.auth(), timeout=30)

    def retry(self, ref: str, check_id: str) -> requests.Response:
        return requests.post(f"{self.checks_url(ref)}/{check_id}/retry", headers=self.auth(), timeout=30)

    def checks_report(self, ref: str) -> dict[str, Any]:
        answer = requests.get(self.checks_url(ref), timeout=10)
        answer.raise_for_status()
        return dict(answer.json())

    def checks(self, ref: str) -> dict[str, dict[str, Any]]:
        answer = requests.get(self.checks_url(ref), timeout=10)
        answer.raise_for_status()
        return {c["id"]: c for c in answer.json()["checks"]}

    def gate(self, branch: str, source_ref: str, **extra: Any) -> requests.Response:
        body = {
            "event_type": "pre-merge",
            "event_time": "2024-01-01T00:00:00Z",
            "action_name": "gate",
            "hook_id": "branch-checks",
            "repository_id": REPO,
            "branch_id": branch,
            "source_ref": source_ref,
            "commit_message": "Merge",
            "committer": "tester",
            **extra,
        }
        return requests.post(f"{self.url}/api/v1/hooks/pre-merge", json=body, timeout=10)

    def wait_for(self, ref: str, check_id: str, statuses: set[str], timeout: float = 90) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            last = self.checks(ref).get(check_id, {})
            if last.get("status") in statuses:
                return last
            time.sleep(0.05)
        raise AssertionError(f"{check_id} did not reach {statuses} in {timeout}s; last: {last}")


def start_service(
    snapshot_dir: Path,
    state_dir: Path,
    config: dict[str, Any],
    *,
    env: dict[str, str] | None = None,
    reaper_interval: float | None = None,
    body_timeout: float = 30.0,
    limits: Any = None,
) -> LiveService:
    state_dir.mkdir(parents=True, exist_ok=True)
    cfg = parse_service_config({"api_token": API_TOKEN, **config}, source="test-config", env=env or {})
    store = Store(f"sqlite:///{state_dir / 'checks.sqlite'}", max_rejections=cfg.max_rejections)
    service = ChecksService(SnapshotCatalog(snapshot_dir), store, cfg, env=env or {})
    server = ChecksServer(service, host="127.0.0.1", port=0, api_token=cfg.api_token, body_timeout=body_timeout,
                          limits=limits).start()
    from datetime import timedelta

    interval = timedelta(seconds=reaper_interval) if reaper_interval else cfg.reaper_interval
    reaper = TimeoutReaper(store, interval).start()
    return LiveService(server.url, store, service, server, reaper)


def webhook_actions(url: str, checks: list[str], name: str = "branch checks", **extra: Any) -> str:
    """An action file lakeFS accepts (name, on: pre-merge) defining webhook checks that POST to ``url``."""
    entries = []
    for check in checks:
        entry: dict[str, Any] = {"id": check, "type": "webhook", "properties": {"url": url, **extra.get("properties", {})}}
        if "timeout" in extra:
            entry["timeout"] = extra["timeout"]
        entries.append(entry)
    import yaml

    return yaml.safe_dump({"name": name, "on": {"pre-merge": {"branches": ["main"]}}, "checks": entries})



class CapturingServer:
    """Records every request it gets, whole (headers, query, body), and answers ``status`` with a
    body that echoes the request: the worst case of an executor that reflects what it was sent."""

    def __init__(self, status: int = 500) -> None:
        self.status = status
        self.requests: list[str] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                text = f"{self.command} {self.path}\n{self.headers}\n{raw.decode('utf-8', 'replace')}"
                with outer._lock:
                    outer.requests.append(text)
                payload = ("echo: " + text).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _handle  # noqa: N815

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def all_text(self) -> str:
        with self._lock:
            return "\n".join(self.requests)

    def __enter__(self) -> "CapturingServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)
