"""Local namespaces: ``file://`` paths (the demo, tests) and lakeFS's ``local://`` blockstore.

A ``local://NAME/PATH`` namespace is the directory ``<blockstore.local.path>/NAME/PATH``
(:mod:`lakewarden.blockstore`, ``--local-blockstore``); this store reads and lists it on disk
and names objects ``local://...`` again, as lakeFS does. Listing never follows symlinks and only
reports regular files: a link to ``/etc`` inside the namespace is not an object of it.
"""

from __future__ import annotations

import builtins
import os
import stat
from datetime import datetime, timezone
from typing import Iterator

from lakewarden.blockstore import blockstore_root, to_file_uri
from lakewarden.safety import parse_uri
from lakewarden.stores.base import ListedObject, ObjectMissing, ObjectStore, StoreError
from lakewarden.stores.options import StoreOptions

__all__ = ["FileStore", "LocalBlockstoreStore", "list_directory"]


def _entry(path: str, uri_prefix: str) -> ListedObject | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):  # symlinks and specials are not objects
        return None
    return ListedObject(uri_prefix + path, info.st_size, datetime.fromtimestamp(info.st_mtime, tz=timezone.utc))


def list_directory(base: str, *, deep: bool, uri_prefix: str = "file://") -> Iterator[ListedObject]:
    """Regular files under the directory ``base`` (``deep``) or directly in it, sorted by name."""
    base = base.rstrip("/") or "/"
    if not deep:
        try:
            names = sorted(os.listdir(base))
        except OSError:
            return
        for name in names:
            row = _entry(os.path.join(base, name), uri_prefix)
            if row is not None:
                yield row
        return
    for root, dirs, files in os.walk(base, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            row = _entry(os.path.join(root, name), uri_prefix)
            if row is not None:
                yield row


class FileStore(ObjectStore):
    """A ``file://`` namespace: a directory."""

    scheme = "file"

    def _path(self, uri: str) -> str:
        self._check_mine(uri)
        return parse_uri(uri).path

    def read(self, uri: str) -> bytes:
        path = self._path(uri)
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            raise ObjectMissing(uri) from None
        except OSError as exc:
            raise StoreError(exc.strerror or str(exc)) from None

    def write(self, uri: str, data: bytes) -> None:
        path = self._path(uri)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)

    def list(self, prefix_uri: str, *, deep: bool = True) -> Iterator[ListedObject]:
        """Files under the directory ``prefix_uri`` names (a directory prefix, as plans give)."""
        return list_directory(self._path(prefix_uri), deep=deep)

    def children(self, prefix_uri: str, *, max_entries: int = 5000) -> builtins.list[str] | None:
        base = self._path(prefix_uri).rstrip("/") or "/"
        found = []
        try:
            with os.scandir(base) as entries:
                for count, item in enumerate(entries, 1):
                    if count > max_entries:
                        return None
                    if item.is_dir(follow_symlinks=False):
                        found.append("file://" + os.path.join(base, item.name) + "/")
        except OSError:
            return []
        return sorted(found)


class LocalBlockstoreStore(ObjectStore):
    """A ``local://`` namespace under the server's ``blockstore.local.path``."""

    scheme = "local"

    def __init__(self, storage_namespace: str, options: StoreOptions | None = None) -> None:
        super().__init__(storage_namespace, options)
        root = blockstore_root(self.namespace, self.options.local_blockstore)
        assert root is not None  # a local:// namespace by construction of the registry
        self.root = root
        self._files = FileStore(to_file_uri(self.namespace, root), self.options)
        self._file_prefix = f"file://{root.as_posix().rstrip('/')}/"

    def _to_file(self, uri: str) -> str:
        self._check_mine(uri)
        return to_file_uri(uri, self.root)

    def _to_local(self, listed: ListedObject) -> ListedObject:
        return listed._replace(uri="local://" + listed.uri[len(self._file_prefix):])

    def read(self, uri: str) -> bytes:
        try:
            return self._files.read(self._to_file(uri))
        except ObjectMissing:
            raise ObjectMissing(uri) from None

    def write(self, uri: str, data: bytes) -> None:
        self._files.write(self._to_file(uri), data)

    def list(self, prefix_uri: str, *, deep: bool = True) -> Iterator[ListedObject]:
        for listed in self._files.list(self._to_file(prefix_uri), deep=deep):
            yield self._to_local(listed)

    def children(self, prefix_uri: str, *, max_entries: int = 5000) -> builtins.list[str] | None:
        found = self._files.children(self._to_file(prefix_uri), max_entries=max_entries)
        return None if found is None else ["local://" + uri[len(self._file_prefix):] for uri in found]
