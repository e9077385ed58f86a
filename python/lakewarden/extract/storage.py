"""Read what lakeFS writes into a repository's storage namespace.

lakeFS writes every metarange and range as an object named by its id under ``_lakefs/`` in the
storage namespace, and its GC preparations (the commits CSV, the uncommitted Parquet files)
under ``_lakefs/retention/gc/``. Extract reads both through a :class:`MetadataStore`.

Supported namespaces: ``file:///abs/path``; lakeFS's ``local://path`` (relative to the
server's ``blockstore.local.path``, which must be given with ``--local-blockstore`` since a
client cannot know it); and every object store of :mod:`lakewarden.stores`: ``s3://bucket/prefix``,
``https://ACCOUNT.blob.core.windows.net/CONTAINER/prefix`` (Azure) and ``gs://bucket/prefix``,
read through the store's one client definition (options, else the SDK's environment).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from lakewarden.errors import BadInput

if TYPE_CHECKING:  # pragma: no cover
    from lakewarden.stores import ObjectStore, StoreOptions

__all__ = ["MetadataStore", "ObjectStoreMetadata", "open_store", "METADATA_DIR"]

METADATA_DIR = "_lakefs"
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "http": "https"}
#: schemes whose host is case-insensitive (Azure's account host)
_HOST_SCHEMES = {"https"}


def _normalized(uri: str) -> str:
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return uri.rstrip("/")
    scheme = _SCHEME_ALIASES.get(scheme.lower(), scheme.lower())
    if scheme in _HOST_SCHEMES:
        host, slash, path = rest.partition("/")
        rest = host.lower() + slash + path
    return (scheme + sep + rest).rstrip("/")


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


class ObjectStoreMetadata(MetadataStore):
    """lakeFS's metadata read through a :class:`lakewarden.stores.ObjectStore` (S3, Azure, GCS):
    the one place each store's client, endpoint and credentials are defined."""

    def __init__(self, namespace: str, store: "ObjectStore") -> None:
        self.namespace = namespace
        self.store = store

    def uri(self, key: str) -> str:
        return self.store.uri(key)

    def read_key(self, key: str, what: str) -> bytes:
        from lakewarden.stores import ObjectMissing, StoreError

        try:
            return self.store.read_key(key)
        except ObjectMissing:
            raise self._missing(key, what) from None
        except StoreError as exc:
            raise BadInput(f"cannot read {what} {key.rsplit('/', 1)[-1]} ({exc})", source=self.uri(key)) from None

    def list_keys(self, prefix: str) -> list[str]:
        from lakewarden.stores import StoreError

        strip = len(self.store.namespace) + 1
        try:
            return sorted(listed.uri[strip:] for listed in self.store.list(self.store.uri(prefix)))
        except StoreError as exc:
            raise BadInput(f"cannot list {prefix} ({exc})", source=self.uri(prefix)) from None


def open_store(
    namespace: str,
    *,
    local_blockstore: str | None = None,
    s3_options: Mapping[str, Any] | None = None,
    store_options: "StoreOptions | None" = None,
) -> MetadataStore:
    """The store for a repository's storage namespace URI.

    ``store_options`` (:class:`lakewarden.stores.StoreOptions`) reaches every store; without it
    the older ``s3_options`` / ``local_blockstore`` arguments are used, and Azure and GCS take
    their settings from their SDKs' environment variables.
    """
    from dataclasses import replace

    from lakewarden.stores import StoreOptions, store_for

    parsed = urlparse(namespace)
    scheme = _SCHEME_ALIASES.get(parsed.scheme.lower(), parsed.scheme.lower())
    if scheme == "file":
        return LocalStore(namespace, Path(unquote(parsed.path)))
    options = store_options or StoreOptions.from_s3_options(s3_options)
    if local_blockstore and not options.local_blockstore:
        options = replace(options, local_blockstore=local_blockstore)
    if scheme == "local":
        from lakewarden.blockstore import blockstore_root, local_path

        root = blockstore_root(namespace, options.local_blockstore)
        assert root is not None
        return LocalStore(namespace, local_path(namespace, root))
    return ObjectStoreMetadata(namespace, store_for(namespace, options))
