"""Where lakeFS is and how to authenticate: the same places ``lakectl`` looks.

Precedence: explicit arguments, then ``LAKECTL_*`` environment variables, then
``~/.lakectl.yaml`` (or ``LAKECTL_CONFIG_FILE``). The secret key is never logged or printed:
:class:`LakeFSConfig`'s ``repr`` masks it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lakewarden.errors import BadInput

__all__ = ["LakeFSSource", "LakeFSConfig", "resolve_config", "api_base_url"]


@dataclass(frozen=True)
class LakeFSSource:
    """Read the repository from a lakeFS server (an extract into ``STATE/snapshots/REPO``)
    instead of a snapshot directory. Credentials: lakectl's (``LAKECTL_CREDENTIALS_*`` or
    ``~/.lakectl.yaml``), as ``lakewarden extract`` reads them."""

    repo: str
    #: the server's URL (default: ``LAKECTL_SERVER_ENDPOINT_URL`` or ``~/.lakectl.yaml``)
    endpoint: str | None = None
    #: decoded-range cache (default: ``STATE/range-cache``)
    cache_dir: Path | None = None
    #: processes decoding ranges in parallel
    jobs: int = 1

    def __post_init__(self) -> None:
        if not self.repo:
            raise BadInput("a lakeFS source needs a repository name", field="--repo")
        if self.jobs < 1:
            raise BadInput(f"{self.jobs} is not a number of processes (1 or more)", field="--jobs")


@dataclass(frozen=True)
class LakeFSConfig:
    endpoint: str
    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)

    @property
    def has_credentials(self) -> bool:
        return bool(self.access_key_id and self.secret_access_key)


def api_base_url(endpoint: str) -> str:
    """``http://host:8000`` or ``http://host:8000/api/v1`` -> the API base ``.../api/v1``."""
    base = endpoint.rstrip("/")
    return base if base.endswith("/api/v1") else base + "/api/v1"


def _lakectl_yaml() -> dict[str, Any]:
    path = Path(os.environ.get("LAKECTL_CONFIG_FILE") or Path.home() / ".lakectl.yaml")
    if not path.is_file():
        return {}
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise BadInput(f"unreadable lakectl configuration ({type(exc).__name__})", source=str(path)) from None
    if not isinstance(document, dict):
        raise BadInput("lakectl configuration must be a mapping", source=str(path))
    return document


def resolve_config(
    endpoint: str | None = None,
    access_key_id: str | None = None,
    secret_access_key: str | None = None,
) -> LakeFSConfig:
    """Combine arguments, ``LAKECTL_*`` variables and ``~/.lakectl.yaml``."""
    env = os.environ
    document = _lakectl_yaml()
    credentials = document.get("credentials") or {}
    server = document.get("server") or {}
    endpoint = endpoint or env.get("LAKECTL_SERVER_ENDPOINT_URL") or server.get("endpoint_url")
    if not endpoint:
        raise BadInput(
            "no lakeFS endpoint: pass --lakefs-endpoint, set LAKECTL_SERVER_ENDPOINT_URL or "
            "server.endpoint_url in ~/.lakectl.yaml",
            field="--lakefs-endpoint",
        )
    return LakeFSConfig(
        endpoint=str(endpoint),
        access_key_id=access_key_id
        or env.get("LAKECTL_CREDENTIALS_ACCESS_KEY_ID")
        or credentials.get("access_key_id"),
        secret_access_key=secret_access_key
        or env.get("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY")
        or credentials.get("secret_access_key"),
    )
