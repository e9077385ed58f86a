"""lakeFS's local blockstore backend (``local://`` namespaces, what a lakeFS quickstart creates).

lakeFS keeps ``local://NAME/PATH`` under its ``blockstore.local.path``. This backend checks every
``local://`` URI against the ``local://`` namespace (the same safety rule as everywhere), then
hands the translated ``file://`` URIs to :class:`~lakewarden.deleters.local.LocalDeleter`, which
re-checks them against the translated namespace and unlinks without following symlinks.
Outcomes name the ``local://`` URIs, as the report does.
"""

from __future__ import annotations

from typing import Any, Sequence

from lakewarden.blockstore import blockstore_root, to_file_uri
from lakewarden.deleters.base import DeleteOutcome, Deleter
from lakewarden.deleters.local import LocalDeleter


class LocalBlockstoreDeleter(Deleter):
    """Unlinks objects of a ``local://`` namespace under the server's blockstore directory."""

    max_concurrency = 1

    def __init__(self, storage_namespace: str, *, local_blockstore: str | None = None, max_batch: int = 1000, **_ignored: Any):
        super().__init__(storage_namespace)
        root = blockstore_root(storage_namespace, local_blockstore)
        assert root is not None  # a local:// namespace by construction of the registry
        self._root = root
        self.max_batch = max_batch
        self._files = LocalDeleter(to_file_uri(storage_namespace, root), max_batch=max_batch)

    def delete_batch(self, uris: Sequence[str]) -> list[DeleteOutcome]:
        safe, unsafe = self.split_unsafe(uris)
        translated = {to_file_uri(uri, self._root): uri for uri in safe}
        done = {
            translated[outcome.uri]: DeleteOutcome(translated[outcome.uri], outcome.status, outcome.reason)
            for outcome in self._files.delete_batch(list(translated))
        }
        return [unsafe.get(uri) or done[uri] for uri in uris]

    def close(self) -> None:
        self._files.close()
