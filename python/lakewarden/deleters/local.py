"""Local-filesystem backend (``file://`` namespaces; the demo and tests).

The namespace string check (:mod:`lakewarden.safety`) cannot see symlinks: ``<ns>/data`` may be
a link to ``/etc``. So each batch opens every *parent directory* once, asks the kernel where that
directory really is (``/proc/self/fd``), and unlinks the names relative to that open directory:
no path is re-resolved between the check and the unlink (and a batch of files sharing a
directory costs one open and one check, not one per file). A symlink as the final component is
removed itself (``unlink`` never follows it). Directories are never removed.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, Callable, Sequence

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
        real_root = os.path.realpath(self._root)  # once per batch, not per file
        by_parent: dict[str, list[tuple[str, str]]] = {}
        done: dict[str, DeleteOutcome] = {}
        for uri in safe:
            parent, name = os.path.split(parse_uri(uri).path.rstrip("/"))
            if not name or name in (".", ".."):
                done[uri] = DeleteOutcome.failed(uri, "not a file name")
            else:
                by_parent.setdefault(parent or "/", []).append((uri, name))
        for parent, names in by_parent.items():
            done.update(self._delete_in(parent, names, real_root))
        return [unsafe.get(uri) or done[uri] for uri in uris]

    def _delete_in(self, parent: str, names: list[tuple[str, str]], real_root: str) -> dict[str, DeleteOutcome]:
        """Unlink ``names`` relative to one open ``parent``, whose real location is checked once."""
        def every(outcome: Callable[[str], DeleteOutcome]) -> dict[str, DeleteOutcome]:
            return {uri: outcome(uri) for uri, _ in names}

        try:
            dir_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            return every(lambda uri: DeleteOutcome.deleted(uri, "already absent"))
        except NotADirectoryError:
            return every(lambda uri: DeleteOutcome.deleted(uri, "already absent (parent is not a directory)"))
        except OSError as exc:
            reason = f"cannot open parent directory: {exc.strerror or exc}"
            return every(lambda uri: DeleteOutcome.failed(uri, reason))
        try:
            real_parent = os.readlink(f"/proc/self/fd/{dir_fd}") if _PROC_FD else os.path.realpath(parent)
            relative_dir = os.path.relpath(real_parent, real_root)
            if relative_dir.split(os.sep, 1)[0] == os.pardir or os.path.isabs(relative_dir):
                return every(lambda uri: DeleteOutcome.failed(uri, f"resolves outside the storage namespace via a symlink ({real_parent})"))
            top_dir = None if relative_dir == os.curdir else relative_dir.split(os.sep, 1)[0]
            results: dict[str, DeleteOutcome] = {}
            for uri, name in names:
                first = top_dir if top_dir is not None else name
                if first.casefold() == LAKEFS_DIR:
                    results[uri] = DeleteOutcome.failed(uri, f"resolves under {LAKEFS_DIR}/ via a symlink ({real_parent})")
                    continue
                results[uri] = self._unlink(uri, name, dir_fd, real_parent)
            return results
        finally:
            os.close(dir_fd)

    @staticmethod
    def _unlink(uri: str, name: str, dir_fd: int, real_parent: str) -> DeleteOutcome:
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
