"""The HTTP API, merge gate and commit page of ``lakewarden checks serve`` (stdlib server).

A thread per request is plenty for callbacks and gate calls; the state store does the
serialisation. Errors are always JSON ``{"error": reason, ...}`` with 400 (bad input), 401
(missing/wrong API token), 403 (rejected callback token), 404, 409 (wrong state) or 412 (gate).
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

from lakewarden.checks.errors import ChecksError, Unauthorized
from lakewarden.checks.service import ChecksService
from lakewarden.errors import BadInput

log = logging.getLogger(__name__)

MAX_BODY = 1 << 20
_SEG = r"([^/]+)"

Route = tuple[str, re.Pattern[str], str]
ROUTES: list[Route] = [
    ("GET", re.compile(r"/api/v1/healthz"), "health"),
    ("GET", re.compile(r"/api/v1/recent"), "recent"),
    ("POST", re.compile(r"/api/v1/hooks/pre-merge"), "gate"),
    ("GET", re.compile(rf"/api/v1/repositories/{_SEG}/refs/{_SEG}/checks"), "list"),
    ("POST", re.compile(rf"/api/v1/repositories/{_SEG}/refs/{_SEG}/checks"), "trigger"),
    ("GET", re.compile(rf"/api/v1/repositories/{_SEG}/refs/{_SEG}/checks/{_SEG}"), "get"),
    ("POST", re.compile(rf"/api/v1/repositories/{_SEG}/refs/{_SEG}/checks/{_SEG}/retry"), "retry"),
    ("POST", re.compile(rf"/api/v1/repositories/{_SEG}/refs/{_SEG}/checks/{_SEG}"), "callback"),
    ("GET", re.compile(r"/(?:ui/?)?"), "index_page"),
    ("GET", re.compile(rf"/ui/repositories/{_SEG}/refs/{_SEG}"), "commit_page"),
]


def _page(name: str) -> bytes:
    return (resources.files("lakewarden.checks.page") / name).read_bytes()


class _Handler(BaseHTTPRequestHandler):
    server: "ChecksHTTPServer"
    protocol_version = "HTTP/1.1"

    # -- plumbing ------------------------------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload, sort_keys=True).encode(), "application/json")

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise BadInput(f"request body larger than {MAX_BODY} bytes")
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BadInput(f"request body is not JSON: {exc}") from None

    def _require_api_token(self) -> None:
        expected = self.server.api_token
        header = self.headers.get("Authorization", "")
        given = header[7:].strip() if header.lower().startswith("bearer ") else ""
        if not expected or not given or not hmac.compare_digest(given.encode(), expected.encode()):
            raise Unauthorized("missing or wrong API token (Authorization: Bearer ...)")

    def _dispatch(self, method: str) -> None:
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        path = split.path.rstrip("/") or "/"
        try:
            for route_method, pattern, name in ROUTES:
                match = pattern.fullmatch(path)
                if match and route_method == method:
                    args = [unquote(g) for g in match.groups()]
                    handler: Callable[..., None] = getattr(self, f"h_{name}")
                    handler(*args, query=query)
                    return
            if any(p.fullmatch(path) for _, p, _ in ROUTES):
                self._json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": f"{method} not allowed on {path}"})
            else:
                self._json(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: {path}"})
        except BadInput as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc), "field": exc.field})
        except ChecksError as exc:
            self._json(exc.http_status, {"error": str(exc), **exc.details})
        except Exception:
            log.exception("%s %s failed", method, path)
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "internal error; see the service log"})

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    # -- endpoints -----------------------------------------------------------------------------

    @property
    def service(self) -> ChecksService:
        return self.server.service

    def h_health(self, *, query: dict[str, str]) -> None:
        self._json(200, {"status": "ok"})

    def h_recent(self, *, query: dict[str, str]) -> None:
        self._json(200, {"commits": self.service.store.recent_commits()})

    def h_gate(self, *, query: dict[str, str]) -> None:
        decision = self.service.gate(self._body())
        self._json(200 if decision.allowed else HTTPStatus.PRECONDITION_FAILED, decision.body)

    def h_list(self, repo: str, ref: str, *, query: dict[str, str]) -> None:
        self._json(200, self.service.list(repo, ref))

    def h_trigger(self, repo: str, ref: str, *, query: dict[str, str]) -> None:
        self._require_api_token()
        body = self._body() or {}
        if not isinstance(body, dict):
            raise BadInput('trigger body must be {"id": CHECK} or empty')
        check_id = query.get("id") or body.get("id")
        if check_id is not None and not isinstance(check_id, str):
            raise BadInput("id must be a string", field="id")
        report = self.service.trigger(repo, ref, check_id)
        self._json(202 if any(c["triggered"] for c in report["checks"]) else 200, report)

    def h_get(self, repo: str, ref: str, check_id: str, *, query: dict[str, str]) -> None:
        self._json(200, self.service.get(repo, ref, check_id))

    def h_retry(self, repo: str, ref: str, check_id: str, *, query: dict[str, str]) -> None:
        self._require_api_token()
        self._json(202, self.service.retry(repo, ref, check_id))

    def h_callback(self, repo: str, ref: str, check_id: str, *, query: dict[str, str]) -> None:
        result = self.service.callback(repo, ref, check_id, query.get("token"), self._body())
        self._json(200, result)

    def h_index_page(self, *, query: dict[str, str]) -> None:
        self._send(200, _page("index.html"), "text/html; charset=utf-8")

    def h_commit_page(self, repo: str, ref: str, *, query: dict[str, str]) -> None:
        self._send(200, _page("commit.html"), "text/html; charset=utf-8")


class ChecksHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # hundreds of executors may call back at once

    def __init__(self, address: tuple[str, int], service: ChecksService, api_token: str | None):
        super().__init__(address, _Handler)
        self.service = service
        self.api_token = api_token


class ChecksServer:
    """The HTTP server on its own thread; ``url`` is where it listens."""

    def __init__(self, service: ChecksService, *, host: str = "127.0.0.1", port: int = 0, api_token: str | None = None):
        self.httpd = ChecksHTTPServer((host, port), service, api_token)
        self.host, self.port = self.httpd.server_address[:2]  # type: ignore[misc]
        self.url = f"http://{self.host}:{self.port}"
        if not service.public_url:
            service.public_url = self.url
        self._thread: threading.Thread | None = None

    def start(self) -> "ChecksServer":
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="checks-http", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
