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

__all__ = ["LakeFSConfig", "resolve_config", "api_base_url"]


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
