"""Where lakeFS is, how to authenticate, and the one ``lakefs-sdk`` client every part talks through.

One rule for every command that talks to a lakeFS server (``lakewarden extract``, a job's
``--repo``, ``lakewarden checks serve --lakefs-endpoint``), the places ``lakectl`` looks, first
found wins, field by field:

1. the command's arguments (``--lakefs-endpoint``);
2. ``LAKECTL_SERVER_ENDPOINT_URL``, ``LAKECTL_CREDENTIALS_ACCESS_KEY_ID``,
   ``LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY``;
3. ``LAKEFS_ACCESS_KEY_ID``, ``LAKEFS_SECRET_ACCESS_KEY``: the names the branch checks service
   read before it followed this rule, still read (with a warning) so a running deployment keeps
   its credentials;
4. ``~/.lakectl.yaml`` (or the file ``LAKECTL_CONFIG_FILE`` names): ``server.endpoint_url``,
   ``credentials.access_key_id``, ``credentials.secret_access_key``.

The secret key is never logged or printed: :class:`LakeFSConfig`'s ``repr`` leaves it out.
Both clients (the extract's :class:`lakewarden.extract.api.LakeFSApi`, the checks service's
:class:`lakewarden.checks.catalog.LakeFSCatalog`) are built by :func:`sdk_client`, so the API
base, the credentials and the retry policy have one definition.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from lakewarden.errors import BadInput

if TYPE_CHECKING:  # pragma: no cover
    import lakefs_sdk

__all__ = ["LakeFSConfig", "api_base_url", "resolve_config", "sdk_client"]

log = logging.getLogger(__name__)

#: the checks service's former credential variables (rule step 3), in the rule's order after lakectl's
FORMER_ACCESS_KEY = "LAKEFS_ACCESS_KEY_ID"
FORMER_SECRET_KEY = "LAKEFS_SECRET_ACCESS_KEY"


@dataclass(frozen=True)
class LakeFSConfig:
    """A lakeFS server and the credentials to use with it (None: none found; lakeFS decides)."""

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


def _lakectl_yaml(env: Mapping[str, str]) -> dict[str, Any]:
    import yaml

    path = Path(env.get("LAKECTL_CONFIG_FILE") or Path.home() / ".lakectl.yaml")
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
    *,
    env: Mapping[str, str] | None = None,
) -> LakeFSConfig:
    """The server and credentials by the module's rule (arguments, ``LAKECTL_*``, the former
    ``LAKEFS_*`` names, ``~/.lakectl.yaml``). No endpoint anywhere is bad input."""
    env = os.environ if env is None else env
    document = _lakectl_yaml(env)
    credentials = document.get("credentials") or {}
    server = document.get("server") or {}
    endpoint = endpoint or env.get("LAKECTL_SERVER_ENDPOINT_URL") or server.get("endpoint_url")
    if not endpoint:
        raise BadInput(
            "no lakeFS endpoint: pass --lakefs-endpoint, set LAKECTL_SERVER_ENDPOINT_URL or "
            "server.endpoint_url in ~/.lakectl.yaml",
            field="--lakefs-endpoint",
        )
    key = access_key_id or env.get("LAKECTL_CREDENTIALS_ACCESS_KEY_ID")
    secret = secret_access_key or env.get("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY")
    former = [name for name, value in ((FORMER_ACCESS_KEY, key), (FORMER_SECRET_KEY, secret)) if value is None and env.get(name)]
    if former:
        log.warning(
            "lakeFS credentials from %s: these names are still read, lakectl's are read first "
            "(LAKECTL_CREDENTIALS_ACCESS_KEY_ID, LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY)",
            " and ".join(former),
        )
    key = key or env.get(FORMER_ACCESS_KEY) or credentials.get("access_key_id")
    secret = secret or env.get(FORMER_SECRET_KEY) or credentials.get("secret_access_key")
    return LakeFSConfig(
        endpoint=str(endpoint),
        access_key_id=None if key is None else str(key),
        secret_access_key=None if secret is None else str(secret),
    )


def sdk_client(config: LakeFSConfig) -> "lakefs_sdk.ApiClient":
    """A ``lakefs-sdk`` API client for ``config``: its API base, basic auth with the access key,
    and the retry policy every caller gets. An unreachable endpoint fails at once (no connect
    retries); a dropped read is retried twice (urllib3 never retries POST/PUT, so an extract
    never starts a preparation twice); an HTTP status is the caller's to judge, never retried."""
    try:
        import lakefs_sdk
    except ImportError:  # pragma: no cover - a dependency of the package
        raise BadInput("talking to lakeFS needs the lakefs-sdk package (pip install lakefs-sdk)") from None
    import urllib3

    configuration = lakefs_sdk.Configuration(
        host=api_base_url(config.endpoint),
        username=config.access_key_id,
        password=config.secret_access_key,
    )
    # lakefs_sdk types retries by its default (None); its REST client hands any value to urllib3
    configuration.retries = urllib3.Retry(  # type: ignore[assignment]
        total=2, connect=0, read=2, status=0, backoff_factor=0.5
    )
    return lakefs_sdk.ApiClient(configuration)
