"""Azure and GCS emulators on 127.0.0.1 for the store tests, and a throttling proxy for all three
stores (no tests here).

* Azure: Azurite's Blob service (npm ``azurite``, installed under ``.tools/`` by
  ``scripts/setup-azurite.sh``, which ``scripts/test.sh`` runs), in memory, on a free port;
  stopped at the end of the session.
* GCS: ``gcp-storage-emulator`` (PyPI), in memory, on a free port. It implements the JSON API's
  batch endpoint, which the GCS deleter uses (fake-gcs-server answers batches with an empty
  multipart body, so it cannot stand in for the real service here).
* :class:`ThrottleProxy` forwards to an emulator and answers a share of the *delete* requests
  the way a throttled store does (S3 ``503 SlowDown``, Azure ``503 ServerBusy``, GCS ``429``)
  without forwarding them, and counts every key each forwarded delete carried: a key counted
  twice would have been deleted twice.
"""

from __future__ import annotations

import http.client
import random
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Azurite's documented development account and key (public, emulator only).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f}s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL: Azurite waits for idle keep-alive connections otherwise."""
    process.terminate()
    try:
        process.wait(timeout=3)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def azurite_binary() -> str:
    local = REPO_ROOT / ".tools" / "node_modules" / ".bin" / "azurite-blob"
    if local.exists():
        return str(local)
    found = shutil.which("azurite-blob")
    if found:
        return found
    pytest.fail("Azurite is not installed: run scripts/setup-azurite.sh (npm ci under .tools/)")
    raise AssertionError  # unreachable


class Emulator:
    """A started emulator process: ``url`` to reach it, ``stop()`` to end it."""

    def __init__(self, command: list[str], port: int, what: str, url: str) -> None:
        self.port = port
        self.url = url
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        try:
            _wait_for_port(port, self.process, what)
        except Exception:
            _stop(self.process)
            raise

    def stop(self) -> None:
        _stop(self.process)


def start_azurite() -> Emulator:
    port = free_port()
    command = [
        azurite_binary(), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
        "--skipApiVersionCheck", "--silent", "--disableProductStyleUrl",
    ]
    return Emulator(command, port, "Azurite", f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}")


def start_gcs_emulator() -> Emulator:
    port = free_port()
    command = [sys.executable, "-m", "gcp_storage_emulator", "start", "--host", "127.0.0.1", "--port", str(port), "--in-memory"]
    return Emulator(command, port, "gcp-storage-emulator", f"http://127.0.0.1:{port}")


def azure_container(endpoint: str, name: str | None = None) -> Any:
    """A fresh container on the Azurite at ``endpoint`` (SDK client, not lakewarden's)."""
    from azure.core.credentials import AzureNamedKeyCredential
    from azure.storage.blob import BlobServiceClient

    service = BlobServiceClient(endpoint, credential=AzureNamedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY), retry_total=1)
    container = service.get_container_client(name or f"lw-{uuid.uuid4().hex[:20]}")
    container.create_container()
    return container


def gcs_bucket(endpoint: str, name: str | None = None) -> Any:
    """A fresh bucket on the GCS emulator at ``endpoint`` (SDK client, not lakewarden's)."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    client = storage.Client(project="test", credentials=AnonymousCredentials(), client_options={"api_endpoint": endpoint})
    return client.create_bucket(name or f"lw-{uuid.uuid4().hex[:20]}")


def put_many(put: Callable[[str], None], keys: list[str]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, keys))


# -- the throttling proxy ------------------------------------------------------------------------


def s3_delete_keys(method: str, path: str, body: bytes) -> list[str] | None:
    if method != "POST" or "delete" not in path.split("?", 1)[-1]:
        return None
    bucket = path.split("?", 1)[0].strip("/")
    return [f"{bucket}/{el.text or ''}" for el in ET.fromstring(body).iter() if el.tag.endswith("Key")]


_SUBREQUEST = re.compile(rb"^DELETE (\S+) HTTP/1\.1\r?$", re.MULTILINE)


def azure_delete_keys(method: str, path: str, body: bytes) -> list[str] | None:
    if method != "POST" or "comp=batch" not in path:
        return None
    return [unquote(match.decode()) for match in _SUBREQUEST.findall(body)]


def gcs_delete_keys(method: str, path: str, body: bytes) -> list[str] | None:
    if method != "POST" or not path.startswith("/batch/storage/v1"):
        return None
    return [unquote(match.decode().split("?", 1)[0]) for match in _SUBREQUEST.findall(body)]


THROTTLED_ANSWERS: dict[str, tuple[int, dict[str, str], bytes]] = {
    "s3": (503, {"Content-Type": "application/xml"}, b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"),
    "azure": (
        503,
        {"Content-Type": "application/xml", "x-ms-error-code": "ServerBusy"},
        b'<?xml version="1.0" encoding="utf-8"?><Error><Code>ServerBusy</Code><Message>Ingress is over the account limit.</Message></Error>',
    ),
    "gcs": (429, {"Content-Type": "application/json"}, b'{"error": {"code": 429, "message": "The rate of change requests to the bucket is too high."}}'),
}
DELETE_KEYS = {"s3": s3_delete_keys, "azure": azure_delete_keys, "gcs": gcs_delete_keys}


class ThrottleProxy:
    """Forwards to ``upstream``; answers ``share`` of the delete requests as throttled (seeded)."""

    def __init__(self, upstream: str, store: str, *, share: float = 0.3, seed: int = 7) -> None:
        split = upstream.removeprefix("http://").split("/", 1)
        self.upstream_host = split[0]
        self.upstream_path = "/" + split[1] if len(split) > 1 else ""
        self.store = store
        self.share = share
        self.random = random.Random(seed)
        self.forwarded: Counter[str] = Counter()  # key -> times a forwarded delete carried it
        self.throttled = 0
        self.deletes = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    data = b""
                    while True:
                        size = int(self.rfile.readline().strip().split(b";")[0], 16)
                        if size == 0:
                            self.rfile.readline()
                            return data
                        data += self.rfile.read(size)
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _handle(self) -> None:
                body = self._body()
                keys = DELETE_KEYS[proxy.store](self.command, self.path, body)
                if keys is not None and proxy._throttle(keys):
                    status, headers, data = THROTTLED_ANSWERS[proxy.store]
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                conn = http.client.HTTPConnection(proxy.upstream_host, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "transfer-encoding", "content-length")}
                headers["Content-Length"] = str(len(body))
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

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _throttle(self, keys: list[str]) -> bool:
        with self._lock:
            self.deletes += 1
            if self.random.random() < self.share:
                self.throttled += 1
                return True
            self.forwarded.update(keys)
            return False

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{self.upstream_path}"

    def __enter__(self) -> "ThrottleProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


__all__ = [
    "AZURITE_ACCOUNT", "AZURITE_KEY", "Emulator", "ThrottleProxy", "azure_container", "free_port", "gcs_bucket",
    "put_many", "start_azurite", "start_gcs_emulator",
]
