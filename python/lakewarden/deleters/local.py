"""Local-filesystem backend (``file://`` namespaces; the demo and tests).

The namespace string check (:mod:`lakewarden.safety`) cannot see symlinks: ``<ns>/data`` may be
a link to ``/etc``. So each delete opens the *parent directory*, asks the kernel where that
directory really is (``/proc/self/fd``), and unlinks the name relative to that open directory:
no path is re-resolved between the check and the unlink. A symlink as the final component is
removed itself (``unlink`` never follows it). Directories are never removed.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, Sequence

from lakewarden.deleters.base import DeleteOutcome, Deleter
from lakewarden.safety import LAKEFS_DIR, parse_uri

_PROC_FD = sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd")


class LocalDeleter(Deleter):
    """Unlinks files under a ``file://`` namespace; a missing file counts as deleted."""

    max_batch = 1000
    max_concurrency = 1

    def __init__(self, storage_namespace: str, *, max_batch: int = 1000, **_ignored: Any):
        super().__init__(storage_namespace)
        parsed = parse_uri(storage_namespace)
        if parsed.scheme != "file":
            raise ValueError(f"LocalDeleter needs a file:// namespace, got {storage_namespace!r}")
        self.max_batch = max_batch
        self._root = parsed.path.rstrip("/") or "/"

    def delete_batch(self, uris: Sequence[str]) -> list[DeleteOutcome]:
        safe, unsafe = self.split_unsafe(uris)
        done = {uri: self._delete_one(uri) for uri in safe}
        return [unsafe.get(uri) or done[uri] for uri in uris]

    def _real_root(self) -> str:
        return os.path.realpath(self._root)

    def _delete_one(self, uri: str) -> DeleteOutcome:
        path = parse_uri(uri).path
        parent, name = os.path.split(path.rstrip("/"))
        if not name or name in (".", ".."):
            return DeleteOutcome.failed(uri, "not a file name")
        try:
            dir_fd = os.open(parent or "/", os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            return DeleteOutcome.deleted(uri, "already absent")
        except NotADirectoryError:
            return DeleteOutcome.deleted(uri, "already absent (parent is not a directory)")
        except OSError as exc:
            return DeleteOutcome.failed(uri, f"cannot open parent directory: {exc.strerror or exc}")
        try:
            real_parent = os.readlink(f"/proc/self/fd/{dir_fd}") if _PROC_FD else os.path.realpath(parent)
            real_root = self._real_root()
            relative = os.path.relpath(os.path.join(real_parent, name), real_root)
            first = relative.split(os.sep, 1)[0]
            if relative == "." or first == os.pardir or os.path.isabs(relative):
                return DeleteOutcome.failed(uri, f"resolves outside the storage namespace via a symlink ({real_parent})")
            if first.casefold() == LAKEFS_DIR:
                return DeleteOutcome.failed(uri, f"resolves under {LAKEFS_DIR}/ via a symlink ({real_parent})")
            try:
                os.unlink(name, dir_fd=dir_fd)
            except FileNotFoundError:
                return DeleteOutcome.deleted(uri, "already absent")
            except IsADirectoryError:
                return DeleteOutcome.failed(uri, "is a directory")
            except OSError as exc:
                if exc.errno in (errno.EISDIR, errno.EPERM) and os.path.isdir(os.path.join(real_parent, name)):
                    return DeleteOutcome.failed(uri, "is a directory")
                return DeleteOutcome.failed(uri, exc.strerror or str(exc))
            return DeleteOutcome.deleted(uri)
        finally:
            os.close(dir_fd)
