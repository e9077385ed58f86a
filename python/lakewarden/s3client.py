"""The one definition of how lakewarden talks to S3 (and S3-compatible stores).

Every S3 client lakewarden makes comes from :func:`s3_client`, so an endpoint, a region or a
credential given once means the same thing to extract, inventory, sweep and the deleters.

Where each setting comes from, first match wins:

* **endpoint**: ``--s3-endpoint`` (``endpoint_url`` option), else boto3's own sources
  (``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``, the profile's ``endpoint_url``), else AWS.
  A custom endpoint (MinIO, Ceph, moto...) gets path-style addressing, which every
  S3-compatible store accepts; AWS keeps boto3's automatic choice.
* **region**: ``--s3-region`` (``region_name``), else ``AWS_REGION``, else boto3's
  (``AWS_DEFAULT_REGION``, the profile).
* **credentials**: explicit options (tests), else boto3's chain: ``AWS_ACCESS_KEY_ID`` /
  ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, ``AWS_PROFILE``, instance roles...
  lakewarden never logs them.
* **retries**: botocore's ``standard`` mode (exponential backoff with jitter on throttling,
  5xx and connection errors) with ``max_attempts`` attempts in all. Readers keep the default;
  a caller that retries per key itself (the deleters, which must see per-key errors inside a
  200 response) passes ``max_attempts=1`` so the two layers do not multiply.

Clients are cached per process and settings (boto3 clients are thread-safe, and building one
costs ~50 ms); they hold sockets, so they are never pickled into Spark tasks: a task calls
:func:`s3_client` again in its own process.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["s3_client", "s3_options", "SESSION_OPTIONS", "CLIENT_OPTIONS", "DEFAULT_MAX_ATTEMPTS"]

#: Options passed to ``boto3.session.Session``.
SESSION_OPTIONS = ("aws_access_key_id", "aws_secret_access_key", "aws_session_token", "region_name", "profile_name")
#: Options passed to ``session.client``.
CLIENT_OPTIONS = ("endpoint_url", "verify")
#: Attempts per request (the first try included) for callers that do not retry themselves.
DEFAULT_MAX_ATTEMPTS = 5

_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def s3_options(endpoint: str | None = None, region: str | None = None) -> dict[str, str]:
    """Client options from the command line's ``--s3-endpoint`` / ``--s3-region`` (unset ones
    are left out, so the environment decides)."""
    options: dict[str, str] = {}
    if endpoint:
        options["endpoint_url"] = endpoint
    if region:
        options["region_name"] = region
    return options


def s3_client(
    options: Mapping[str, Any] | None = None,
    *,
    max_pool_connections: int = 32,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> Any:
    """A boto3 S3 client for ``options`` (see the module docstring for every option's source).

    Besides the session and client options above, ``options`` may carry ``connect_timeout``,
    ``read_timeout`` (seconds; default 10 and 60) and ``addressing_style``.
    """
    import boto3
    from botocore.config import Config

    opts = {key: value for key, value in (options or {}).items() if value is not None}
    if "region_name" not in opts and os.environ.get("AWS_REGION"):
        opts["region_name"] = os.environ["AWS_REGION"]
    cache_key = (
        os.getpid(),
        max_pool_connections,
        max_attempts,
        tuple(sorted((k, repr(v)) for k, v in opts.items())),
    )
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(cache_key)
        if client is not None:
            return client
        custom_endpoint = opts.get("endpoint_url") or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        session = boto3.session.Session(**{k: opts[k] for k in SESSION_OPTIONS if k in opts})
        config = Config(
            retries={"mode": "standard", "total_max_attempts": max(1, int(max_attempts))},
            max_pool_connections=max_pool_connections,
            connect_timeout=float(opts.get("connect_timeout", 10)),
            read_timeout=float(opts.get("read_timeout", 60)),
            s3={"addressing_style": opts.get("addressing_style", "path" if custom_endpoint else "auto")},
        )
        client = session.client("s3", config=config, **{k: opts[k] for k in CLIENT_OPTIONS if k in opts})
        _CLIENTS[cache_key] = client
        return client
