"""S3 test endpoints on 127.0.0.1 shared by the sweep, deleter and inventory tests (no tests here).

``moto_endpoint()`` is a real S3 HTTP server (moto in server mode), started once per test
session and stopped at its end. ``ThrottlingProxy`` sits in front of it and answers some
DeleteObjects requests the way a throttled S3 does (503 SlowDown, or per-key SlowDown errors in
a 200), so retry paths run over real HTTP rather than a patched client.
"""

from __future__ import annotations

import http.client
import logging
import subprocess
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

S3_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}

_SERVER: Any = None


def moto_endpoint(request: pytest.FixtureRequest) -> str:
    """URL of the session's moto server, started on first use and stopped at session end."""
    global _SERVER
    if _SERVER is None:
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        _SERVER = server

        def stop() -> None:
            global _SERVER
            server.stop()
            _SERVER = None

        request.addfinalizer(stop)
    host, port = _SERVER.get_host_and_port()
    return f"http://{host}:{port}"


def s3_options(endpoint: str) -> dict[str, str]:
    """Deleter/client options for the test endpoint (explicit, so the env is not needed)."""
    return {
        "endpoint_url": endpoint,
        "region_name": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }


def new_bucket(endpoint: str) -> str:
    """Create a fresh bucket (unique name) so tests never see each other's objects."""
    name = f"lw-{uuid.uuid4().hex[:20]}"
    s3_client_for(endpoint).create_bucket(Bucket=name)
    return name


def put_keys(endpoint: str, bucket: str, keys: list[str], body: bytes = b"x") -> None:
    """Objects for a test to work on, in ``bucket`` at ``endpoint``.

    On the session's moto server they are written straight into its store: the server runs in
    this process, and one HTTP PUT each costs its handler and boto3's client a few milliseconds
    of this process's CPU (2,100 objects, measured alone: 10.9 s against 0.04 s; the sweep
    tests on 2,100-2,500 objects took 1-6 s instead of 10-13). The code under test still lists,
    reads and deletes them over HTTP. Any other endpoint (a proxy, another process's server)
    gets one PUT per object."""
    store = _in_process_store(endpoint)
    if store is not None:
        for key in keys:
            store.put_object(bucket, key, body)
        return
    from concurrent.futures import ThreadPoolExecutor

    client = s3_client_for(endpoint)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda key: client.put_object(Bucket=bucket, Key=key, Body=body), keys))


def _in_process_store(endpoint: str) -> Any:
    """moto's S3 store behind ``endpoint`` when that is the session's server (this process's
    own, :func:`moto_endpoint`), else None. Its requests signed with the test credentials are
    moto's default account's."""
    if _SERVER is None:
        return None
    host, port = _SERVER.get_host_and_port()
    if endpoint.rstrip("/") != f"http://{host}:{port}":
        return None
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    return s3_backends[DEFAULT_ACCOUNT_ID]["global"]


def list_keys(endpoint: str, bucket: str, prefix: str = "") -> set[str]:
    client = s3_client_for(endpoint)
    keys: set[str] = set()
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys.update(obj["Key"] for obj in page.get("Contents", []))
    return keys


def s3_client_for(endpoint: str) -> Any:
    from lakewarden.s3client import s3_client

    return s3_client(s3_options(endpoint))


class ThrottlingProxy:
    """HTTP proxy to an S3 endpoint that throttles the first DeleteObjects requests.

    ``reject_requests``: that many DeleteObjects requests get ``503 SlowDown``.
    ``slowdown_keys``: then that many get a 200 whose every key failed with ``SlowDown``.
    Everything else is forwarded unchanged. ``delete_requests`` counts DeleteObjects seen.
    """

    def __init__(self, upstream: str, *, reject_requests: int = 0, slowdown_keys: int = 0):
        self.upstream = upstream.removeprefix("http://")
        self.reject_requests = reject_requests
        self.slowdown_keys = slowdown_keys
        self.delete_requests = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.command == "POST" and "delete" in self.path.split("?", 1)[-1]:
                    verdict = proxy._verdict()
                    if verdict == "reject":
                        self._reply(503, b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>")
                        return
                    if verdict == "slowdown":
                        self._reply(200, _per_key_slowdown(body))
                        return
                conn = http.client.HTTPConnection(proxy.upstream, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "transfer-encoding")}
                conn.request(self.command, self.path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in ("connection", "transfer-encoding", "content-length", "server", "date"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            def _reply(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _verdict(self) -> str:
        with self._lock:
            self.delete_requests += 1
            if self.reject_requests > 0:
                self.reject_requests -= 1
                return "reject"
            if self.slowdown_keys > 0:
                self.slowdown_keys -= 1
                return "slowdown"
            return "forward"

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "ThrottlingProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _per_key_slowdown(request_body: bytes) -> bytes:
    keys = [el.text or "" for el in ET.fromstring(request_body).iter() if el.tag.endswith("Key")]
    errors = "".join(
        f"<Error><Key>{_xml_escape(key)}</Key><Code>SlowDown</Code><Message>Reduce your rate</Message></Error>" for key in keys
    )
    return f'<?xml version="1.0" encoding="UTF-8"?><DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{errors}</DeleteResult>'.encode()


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def wait_held(process: "subprocess.Popen[str]", tmp_path: Path, timeout: float = 120.0) -> None:
    """Wait until a sweep started through ``sweep_holding.py`` (its observer of lakewarden.sweep.hooks) is held
    at its point, the marker file naming its pid; then remove the marker."""
    marker = tmp_path / "held"
    deadline = time.monotonic() + timeout
    while not marker.exists():
        if process.poll() is not None:
            pytest.fail(f"sweep exited ({process.returncode}) before its hold point: {process.stderr.read() if process.stderr else ''}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("sweep never reached its hold point")
        time.sleep(0.02)
    assert int(marker.read_text().strip()) == process.pid
    marker.unlink()
