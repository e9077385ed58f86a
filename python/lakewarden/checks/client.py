"""HTTP client of the checks service, used by ``lakewarden checks run|list|retry|show``.

The server's JSON reasons are passed through: a 4xx answer (unknown ref, bad action file, retry of
a check that is not FAILED/LOST, wrong token) is the user's input problem and becomes
:class:`~lakewarden.errors.BadInput` (exit 2); transport failures and 5xx are other errors (exit 1).
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import quote

import requests

from lakewarden.errors import BadInput, LakewardenError
from lakewarden.runtime.state_dir import state_dir

DEFAULT_PORT = 8770
DEFAULT_SERVER = f"http://127.0.0.1:{DEFAULT_PORT}"
TOKEN_FILE = "checks-api-token"
_REF_URI = re.compile(r"lakefs://([^/\s]+)/([^\s]+)")


def parse_ref_uri(uri: str) -> tuple[str, str]:
    """``lakefs://REPO/REF`` -> ``(REPO, REF)``; anything else is bad input."""
    match = _REF_URI.fullmatch(uri.strip())
    if not match:
        raise BadInput(f"expected lakefs://REPOSITORY/REF, got {uri!r}", field="ref")
    repo, ref = match.groups()
    return repo, ref.rstrip("/")


def find_token(explicit: str | None, state: str | None = None) -> str | None:
    """``--token``, else ``$LAKEWARDEN_CHECKS_TOKEN``, else the token file a local server wrote."""
    if explicit:
        return explicit
    if os.environ.get("LAKEWARDEN_CHECKS_TOKEN"):
        return os.environ["LAKEWARDEN_CHECKS_TOKEN"]
    path = state_dir(state) / TOKEN_FILE
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


class ChecksServiceError(LakewardenError):
    """The service failed (5xx) or could not be reached."""


class ChecksClient:
    def __init__(self, server: str | None = None, token: str | None = None, timeout: float = 120):
        self.server = (server or os.environ.get("LAKEWARDEN_CHECKS_URL") or DEFAULT_SERVER).rstrip("/")
        if not self.server.startswith(("http://", "https://")):
            raise BadInput(f"--server must be an http(s) URL, got {self.server!r}", field="server")
        self.token = token
        self.timeout = timeout

    def _checks_path(self, repo: str, ref: str) -> str:
        return f"{self.server}/api/v1/repositories/{quote(repo, safe='')}/refs/{quote(ref, safe='')}/checks"

    def _call(self, method: str, url: str, *, auth: bool = False, **kwargs: Any) -> Any:
        headers = {}
        if auth:
            if not self.token:
                raise BadInput("no API token: pass --token or set LAKEWARDEN_CHECKS_TOKEN", field="token")
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            answer = requests.request(method, url, headers=headers, timeout=self.timeout, **kwargs)
        except requests.RequestException as exc:
            raise ChecksServiceError(f"cannot reach the checks service at {self.server}: {exc.__class__.__name__}") from None
        try:
            body = answer.json()
        except ValueError:
            body = {"error": answer.text[:200]}
        if 400 <= answer.status_code < 500:
            raise BadInput(f"{body.get('error', answer.reason)} (HTTP {answer.status_code})")
        if answer.status_code >= 500:
            raise ChecksServiceError(f"checks service failed: HTTP {answer.status_code}: {body.get('error', '')}")
        return body

    def list(self, repo: str, ref: str) -> dict[str, Any]:
        return self._call("GET", self._checks_path(repo, ref))

    def get(self, repo: str, ref: str, check_id: str) -> dict[str, Any]:
        return self._call("GET", f"{self._checks_path(repo, ref)}/{quote(check_id, safe='')}")

    def trigger(self, repo: str, ref: str, check_id: str | None = None) -> dict[str, Any]:
        return self._call("POST", self._checks_path(repo, ref), auth=True, json={"id": check_id} if check_id else {})

    def retry(self, repo: str, ref: str, check_id: str) -> dict[str, Any]:
        return self._call("POST", f"{self._checks_path(repo, ref)}/{quote(check_id, safe='')}/retry", auth=True)
