"""lakeFS's local blockstore: where a ``local://`` storage namespace lives on disk.

A lakeFS server configured with ``blockstore.type: local`` (what a quickstart creates) keeps a
repository's objects under ``blockstore.local.path``: the namespace ``local://NAME/PATH`` is the
directory ``<blockstore.local.path>/NAME/PATH``. The jobs keep comparing addresses as lakeFS
writes them (``local://...``, RELATIVE or FULL), and translate to a filesystem path only where
they touch storage: listing the namespace and deleting. This module is that one translation.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from lakewarden.errors import BadInput

SCHEME = "local"
OPTION = "--local-blockstore"


def is_local(uri: str) -> bool:
    """True for a ``local://`` URI (lakeFS's local blockstore)."""
    return urlparse(uri).scheme.lower() == SCHEME


def blockstore_root(storage_namespace: str, local_blockstore: str | None) -> Path | None:
    """The blockstore directory for a ``local://`` namespace (None for other namespaces).

    Raises :class:`BadInput` naming ``--local-blockstore`` when it is missing or not a directory:
    without it the job can neither list nor delete, and guessing would touch the wrong files.
    """
    if not is_local(storage_namespace):
        return None
    if not local_blockstore:
        raise BadInput(
            f"namespace {storage_namespace} is on lakeFS's local blockstore: pass {OPTION} DIR "
            "(the server's blockstore.local.path)",
            field=OPTION,
        )
    root = Path(local_blockstore).expanduser().resolve()
    if not root.is_dir():
        raise BadInput(f"{local_blockstore} is not a directory", field=OPTION)
    return root


def local_path(uri: str, root: Path) -> Path:
    """``local://NAME/PATH`` -> ``<root>/NAME/PATH`` (raw: no normalisation; the caller has
    checked the URI with lakewarden.safety first)."""
    parsed = urlparse(uri)
    if parsed.scheme.lower() != SCHEME:
        raise ValueError(f"not a local:// URI: {uri!r}")
    return root / (parsed.netloc + parsed.path).lstrip("/")


def to_file_uri(uri: str, root: Path) -> str:
    """The ``file://`` URI of a ``local://`` one under ``root`` (listing and deleting)."""
    rest = uri.split("://", 1)[1]
    return f"file://{root.as_posix().rstrip('/')}/{rest}"


def file_uri_prefix(root: Path) -> str:
    """What :func:`to_file_uri` puts before the ``local://`` URI's rest."""
    return f"file://{root.as_posix().rstrip('/')}/"
