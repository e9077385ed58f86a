"""Read what lakeFS writes into a repository's storage namespace.

lakeFS writes every metarange and range as an object named by its id under ``_lakefs/`` in the
storage namespace, and its GC preparations (the commits CSV, the uncommitted Parquet files)
under ``_lakefs/retention/gc/``. Extract reads both through a :class:`MetadataStore`.

Supported namespaces: ``file:///abs/path``; ``s3://bucket/prefix`` (the client of
:mod:`lakewarden.s3client`: ``--s3-endpoint``/``--s3-region``, else the environment); and
lakeFS's ``local://path`` (relative to the server's ``blockstore.local.path``, which must be
given with ``--local-blockstore`` since a client cannot know it).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lakewarden.errors import BadInput

__all__ = ["MetadataStore", "open_store", "METADATA_DIR"]

METADATA_DIR = "_lakefs"
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}


def _normalized(uri: str) -> str:
    scheme, sep, rest = uri.partition("://")
    return (_SCHEME_ALIASES.get(scheme.lower(), scheme.lower()) + sep + rest).rstrip("/") if sep else uri.rstrip("/")


class MetadataStore:
    """Reads objects of one storage namespace by key (relative to the namespace)."""

    namespace: str

    # -- by key ------------------------------------------------------------------------------

    def uri(self, key: str) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def read_key(self, key: str, what: str) -> bytes:  # pragma: no cover - interface
        raise NotImplementedError

    def list_keys(self, prefix: str) -> list[str]:  # pragma: no cover - interface
        """Keys (relative to the namespace) of every object under ``prefix``, sorted."""
        raise NotImplementedError

    def relative_key(self, location: str) -> str | None:
        """``location`` (a URI lakeFS returned) as a key inside this namespace, else None."""
        root = _normalized(self.namespace) + "/"
        candidate = _normalized(location) + ("/" if location.endswith("/") else "")
        return candidate[len(root):] if candidate.startswith(root) else None

    # -- lakeFS metadata (_lakefs/<id>) ------------------------------------------------------

    def location(self, object_id: str) -> str:
        return self.uri(f"{METADATA_DIR}/{object_id}")

    def read(self, object_id: str, what: str) -> bytes:
        return self.read_key(f"{METADATA_DIR}/{object_id}", what)

    def _missing(self, key: str, what: str) -> BadInput:
        name = key.rsplit("/", 1)[-1]
        return BadInput(f"{what} {name} is missing from storage", source=self.uri(key))


class LocalStore(MetadataStore):
    def __init__(self, namespace: str, root: Path) -> None:
        self.namespace = namespace
        self.root = root

    def uri(self, key: str) -> str:
        return str(self.root / key)

    def read_key(self, key: str, what: str) -> bytes:
        path = self.root / key
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise self._missing(key, what) from None
        except OSError as exc:
            raise BadInput(f"cannot read {what} {key.rsplit('/', 1)[-1]}: {exc.strerror}", source=str(path)) from None

    def list_keys(self, prefix: str) -> list[str]:
        base = self.root / prefix
        if not base.is_dir():
            return []
        return sorted(str(p.relative_to(self.root)) for p in base.rglob("*") if p.is_file())


class S3Store(MetadataStore):
    def __init__(self, namespace: str, bucket: str, prefix: str, options: Mapping[str, Any] | None = None) -> None:
        from lakewarden.s3client import s3_client

        self.namespace = namespace
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.options = dict(options or {})
        self._client: Any = s3_client(self.options)

    def _key(self, key: str) -> str:
        return "/".join(p for p in (self.prefix, key) if p)

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{self._key(key)}"

    def _error(self, exc: BaseException, what: str, key: str) -> BadInput:
        from botocore.exceptions import ClientError

        if isinstance(exc, ClientError):
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "404", "NotFound"):
                return self._missing(key, what)
            reason = code or "error"
        else:
            reason = type(exc).__name__
        return BadInput(f"cannot read {what} {key.rsplit('/', 1)[-1]} from S3 ({reason})", source=self.uri(key))

    def read_key(self, key: str, what: str) -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return self._client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"].read()
        except (ClientError, BotoCoreError) as exc:
            raise self._error(exc, what, key) from None

    def list_keys(self, prefix: str) -> list[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        full = self._key(prefix)
        strip = len(self.prefix) + 1 if self.prefix else 0
        keys: list[str] = []
        try:
            for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=full):
                keys.extend(obj["Key"][strip:] for obj in page.get("Contents", []))
        except (ClientError, BotoCoreError) as exc:
            raise self._error(exc, "listing of", prefix) from None
        return sorted(keys)


def open_store(
    namespace: str, *, local_blockstore: str | None = None, s3_options: Mapping[str, Any] | None = None
) -> MetadataStore:
    """The store for a repository's storage namespace URI."""
    parsed = urlparse(namespace)
    scheme = _SCHEME_ALIASES.get(parsed.scheme.lower(), parsed.scheme.lower())
    if scheme == "file":
        return LocalStore(namespace, Path(unquote(parsed.path)))
    if scheme == "s3":
        return S3Store(namespace, parsed.netloc, parsed.path, s3_options)
    if scheme == "local":
        from lakewarden.blockstore import blockstore_root, local_path

        root = blockstore_root(namespace, local_blockstore)
        assert root is not None
        return LocalStore(namespace, local_path(namespace, root))
    raise BadInput(
        f"unsupported storage namespace {namespace!r} (supported: file://, s3://, local://)",
        field="storage_namespace",
    )
