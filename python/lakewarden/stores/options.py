"""Where lakewarden finds each object store: one frozen set of options, the command line that
fills it, and the SDKs' own environment variables.

Why one dataclass: extract, listing, inventory and the sweep must reach the *same* endpoint
with the same credentials; a setting given once (``--azure-endpoint``) means the same thing to
all of them. The options travel into Spark tasks, so they are plain picklable values, and the
deleters get them as keyword arguments (:meth:`StoreOptions.deleter_options`).

Each setting, first match wins: the option, else the SDK's own variable
(``AWS_ENDPOINT_URL[_S3]``/``AWS_REGION`` through boto3, ``AZURE_STORAGE_CONNECTION_STRING``,
``AZURE_STORAGE_KEY``, ``STORAGE_EMULATOR_HOST``, ``GOOGLE_CLOUD_PROJECT``), else the SDK's
default credential chain (boto3's, azure-identity's ``DefaultAzureCredential``, google-auth's
application default credentials). Secrets are never shown in ``repr``.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

__all__ = ["StoreOptions", "add_store_arguments", "store_options_from_args"]

#: Deleter keyword arguments that belong to S3's client (what ``s3client.s3_client`` reads).
_S3_KEYS = {"endpoint_url": "s3_endpoint", "region_name": "s3_region"}


@dataclass(frozen=True)
class StoreOptions:
    """How to reach the namespace's store; every field may stay ``None`` (the environment decides)."""

    s3_endpoint: str | None = None
    s3_region: str | None = None
    #: the Blob service URL, e.g. ``http://127.0.0.1:10000/devstoreaccount1`` for Azurite
    azure_endpoint: str | None = None
    azure_connection_string: str | None = field(default=None, repr=False)
    azure_account_key: str | None = field(default=None, repr=False)
    #: the JSON API's base URL, e.g. ``http://127.0.0.1:4443`` for an emulator
    gcs_endpoint: str | None = None
    gcs_project: str | None = None
    #: lakeFS's ``blockstore.local.path``, for ``local://`` namespaces
    local_blockstore: str | None = None
    #: further boto3 options (``aws_access_key_id``...), as sorted pairs so the dataclass hashes
    s3_extra: tuple[tuple[str, Any], ...] = field(default=(), repr=False)

    # -- S3 --------------------------------------------------------------------------------

    def s3_client_options(self) -> dict[str, Any]:
        """Options for :func:`lakewarden.s3client.s3_client` (unset ones left to the environment)."""
        options: dict[str, Any] = dict(self.s3_extra)
        if self.s3_endpoint:
            options["endpoint_url"] = self.s3_endpoint
        if self.s3_region:
            options["region_name"] = self.s3_region
        return options

    @classmethod
    def from_s3_options(cls, s3_options: Mapping[str, Any] | None, **others: Any) -> "StoreOptions":
        """Options from the older ``s3_options`` dict (``endpoint_url``/``region_name``/credentials)."""
        extra = {k: v for k, v in (s3_options or {}).items() if v is not None and k not in _S3_KEYS}
        return cls(
            s3_endpoint=(s3_options or {}).get("endpoint_url"),
            s3_region=(s3_options or {}).get("region_name"),
            s3_extra=tuple(sorted(extra.items())),
            **others,
        )

    # -- Azure -----------------------------------------------------------------------------

    def resolved_azure_connection_string(self) -> str | None:
        return self.azure_connection_string or os.environ.get("AZURE_STORAGE_CONNECTION_STRING") or None

    def resolved_azure_account_key(self) -> str | None:
        return self.azure_account_key or os.environ.get("AZURE_STORAGE_KEY") or None

    # -- GCS -------------------------------------------------------------------------------

    def resolved_gcs_endpoint(self) -> str | None:
        """The emulator/custom endpoint: the option, else ``STORAGE_EMULATOR_HOST`` (with a scheme)."""
        endpoint = self.gcs_endpoint or os.environ.get("STORAGE_EMULATOR_HOST") or None
        if endpoint and "://" not in endpoint:
            endpoint = "http://" + endpoint
        return endpoint.rstrip("/") if endpoint else None

    def resolved_gcs_project(self) -> str | None:
        return self.gcs_project or os.environ.get("GOOGLE_CLOUD_PROJECT") or None

    # -- travelling ------------------------------------------------------------------------

    def deleter_options(self) -> dict[str, Any]:
        """Keyword arguments for ``deleters.deleter_for(namespace, **options)``: set fields only.

        S3's keep the names the S3 deleter has always taken (``endpoint_url``, ``region_name``,
        credentials); the others keep their field names. Each deleter ignores the other stores'.
        """
        options = self.s3_client_options()
        for item in fields(self):
            if item.name in ("s3_endpoint", "s3_region", "s3_extra"):
                continue
            value = getattr(self, item.name)
            if value is not None:
                options[item.name] = value
        return options

    @classmethod
    def from_deleter_options(cls, options: Mapping[str, Any]) -> "StoreOptions":
        """The inverse of :meth:`deleter_options` (unknown keys are S3 client options)."""
        names = {item.name for item in fields(cls)} - {"s3_endpoint", "s3_region", "s3_extra"}
        mine = {k: v for k, v in options.items() if k in names and v is not None}
        s3 = {k: v for k, v in options.items() if k not in names and k not in _DELETER_TUNING}
        return cls.from_s3_options(s3, **mine)


#: Deleter keyword arguments that tune the deleter rather than reach the store.
_DELETER_TUNING = frozenset({"max_batch", "max_concurrency", "max_attempts", "base_delay", "max_delay", "sleep"})


def _add(parser: argparse.ArgumentParser, flag: str, **kwargs: Any) -> None:
    """Add ``flag`` unless the parser has it already (jobs add S3's and lakeFS's options too)."""
    if flag not in parser._option_string_actions:  # noqa: SLF001 - argparse has no public lookup
        parser.add_argument(flag, **kwargs)


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that reach every store: ``--s3-endpoint``/``--s3-region`` (as before),
    ``--azure-*``, ``--gcs-*`` and ``--local-blockstore``; each defaults to the SDK's variable."""
    _add(parser, "--s3-endpoint", metavar="URL", help="S3 endpoint URL (default: AWS_ENDPOINT_URL or AWS)")
    _add(parser, "--s3-region", metavar="REGION", help="S3 region (default: AWS_REGION or boto3's default)")
    _add(
        parser,
        "--azure-endpoint",
        metavar="URL",
        help="Azure Blob service URL, e.g. http://127.0.0.1:10000/devstoreaccount1 for Azurite "
        "(default: the connection string's, else https://ACCOUNT.blob.core.windows.net from the namespace)",
    )
    _add(
        parser,
        "--azure-connection-string",
        metavar="STRING",
        help="Azure Storage connection string (default: AZURE_STORAGE_CONNECTION_STRING; prefer the "
        "variable: a command line is visible to other users)",
    )
    _add(
        parser,
        "--azure-account-key",
        metavar="KEY",
        help="Azure storage account key (default: AZURE_STORAGE_KEY, else azure-identity's "
        "DefaultAzureCredential)",
    )
    _add(
        parser,
        "--gcs-endpoint",
        metavar="URL",
        help="Google Cloud Storage JSON API URL, e.g. an emulator's (default: STORAGE_EMULATOR_HOST, else Google)",
    )
    _add(parser, "--gcs-project", metavar="PROJECT", help="Google Cloud project (default: GOOGLE_CLOUD_PROJECT or google-auth's)")
    _add(
        parser,
        "--local-blockstore",
        metavar="DIR",
        help="the server's blockstore.local.path, for repositories on a local:// namespace",
    )


def _endpoint(value: str | None, flag: str, *, bare_host: bool = False) -> str | None:
    """``value`` when it is an ``http(s)://HOST[:PORT][/PATH]`` URL (``HOST:PORT`` alone too
    where the SDK's variable takes that form); else :class:`BadInput` naming ``flag``."""
    from urllib.parse import urlsplit

    from lakewarden.errors import BadInput

    if value is None:
        return None
    candidate = value if "://" in value or not bare_host else "http://" + value
    try:
        split = urlsplit(candidate)
        split.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        split = None
    if split is None or split.scheme.lower() not in ("http", "https") or not split.hostname:
        raise BadInput(f"{value!r} is not an http:// or https:// URL", field=flag)
    return value


def _text(value: str | None, flag: str) -> str | None:
    from lakewarden.errors import BadInput

    if value is not None and not value.strip():
        raise BadInput("is empty", field=flag)
    return value


def store_options_from_args(args: argparse.Namespace) -> StoreOptions:
    """:class:`StoreOptions` from parsed :func:`add_store_arguments` options (missing ones: ``None``).

    A malformed value is :class:`~lakewarden.errors.BadInput` naming its option (exit 2, one
    line): an endpoint that is not an ``http(s)://`` URL, an empty string."""
    return StoreOptions(
        s3_endpoint=_endpoint(getattr(args, "s3_endpoint", None), "--s3-endpoint"),
        s3_region=_text(getattr(args, "s3_region", None), "--s3-region"),
        azure_endpoint=_endpoint(getattr(args, "azure_endpoint", None), "--azure-endpoint"),
        azure_connection_string=_text(getattr(args, "azure_connection_string", None), "--azure-connection-string"),
        azure_account_key=_text(getattr(args, "azure_account_key", None), "--azure-account-key"),
        gcs_endpoint=_endpoint(getattr(args, "gcs_endpoint", None), "--gcs-endpoint", bare_host=True),
        gcs_project=_text(getattr(args, "gcs_project", None), "--gcs-project"),
        local_blockstore=_text(getattr(args, "local_blockstore", None), "--local-blockstore"),
    )
