"""Every object store lakeFS keeps repositories on, behind one interface (:class:`ObjectStore`).

The seam: ``store_for(namespace_uri, options)`` picks the store by the namespace's scheme:
``s3://`` (S3 and compatibles), ``https://ACCOUNT.blob.core.windows.net/CONTAINER/PATH``
(Azure Blob Storage; ``http://`` too), ``gs://BUCKET/PATH`` (Google Cloud Storage),
``local://`` (lakeFS's local blockstore, with ``StoreOptions.local_blockstore``) and ``file://``.
:func:`add_store_arguments` / :func:`store_options_from_args` turn the command line (and the
SDKs' environment variables) into :class:`StoreOptions`.
"""

from __future__ import annotations

from typing import Callable

from lakewarden.errors import BadInput
from lakewarden.safety import parse_uri
from lakewarden.stores.base import ListedObject, ObjectMissing, ObjectStore, Recoverability, StoreError
from lakewarden.stores.options import StoreOptions, add_store_arguments, store_options_from_args

__all__ = [
    "ListedObject",
    "ObjectMissing",
    "ObjectStore",
    "Recoverability",
    "StoreError",
    "StoreOptions",
    "add_store_arguments",
    "check_store_options",
    "register_store",
    "store_for",
    "store_options_from_args",
    "SCHEMES",
]

StoreFactory = Callable[[str, StoreOptions], ObjectStore]
_STORES: dict[str, StoreFactory] = {}
#: the schemes with a built-in store (canonical spellings; see lakewarden.safety for aliases)
SCHEMES = ("s3", "https", "gs", "local", "file")


def register_store(scheme: str, factory: StoreFactory) -> None:
    """Make :func:`store_for` build ``factory(namespace, options)`` for ``scheme`` namespaces."""
    _STORES[scheme.lower()] = factory


def _builtin(scheme: str) -> StoreFactory | None:
    # imported on demand: each SDK costs start-up time, and a job touches one store
    if scheme == "s3":
        from lakewarden.stores.s3 import S3Store

        return S3Store
    if scheme == "https":
        from lakewarden.stores.azure import AzureStore

        return AzureStore
    if scheme == "gs":
        from lakewarden.stores.gcs import GcsStore

        return GcsStore
    if scheme == "file":
        from lakewarden.stores.local import FileStore

        return FileStore
    if scheme == "local":
        from lakewarden.stores.local import LocalBlockstoreStore

        return LocalBlockstoreStore
    return None


def store_for(namespace_uri: str, options: StoreOptions | None = None) -> ObjectStore:
    """The store of ``namespace_uri``; :class:`BadInput` (field ``storage_namespace``) for a
    scheme no store serves or a namespace its store cannot address."""
    try:
        scheme = parse_uri(namespace_uri).scheme
    except ValueError as exc:
        raise BadInput(str(exc), field="storage_namespace") from exc
    factory = _STORES.get(scheme) or _builtin(scheme)
    if factory is None:
        known = ", ".join(f"{name}://" for name in SCHEMES)
        raise BadInput(f"unsupported storage namespace {namespace_uri!r} (supported: {known})", field="storage_namespace")
    return factory(namespace_uri, options or StoreOptions())


def check_store_options(namespace_uri: str, options: StoreOptions | None = None) -> ObjectStore:
    """The store of ``namespace_uri`` after checking, without a request, that ``options`` can
    address it (:meth:`ObjectStore.check_options`): bad input names the option (exit 2, one
    line) before a job or a sweep starts work."""
    store = store_for(namespace_uri, options)
    store.check_options()
    return store
