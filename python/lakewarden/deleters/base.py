"""The storage-backend interface the sweep deletes through.

A backend is anything with ``delete_batch`` and ``max_batch``: the sweep hands it at most
``max_batch`` absolute URIs and gets one :class:`DeleteOutcome` per URI back, never an exception
for a per-object problem. That contract is what lets the sweep record every address's fate and
lets a re-run finish a killed sweep. Backends are chosen by the namespace's URI scheme through a
registry: ``s3``, ``https`` (Azure Blob Storage, as lakeFS names Azure namespaces), ``gs``,
``local`` and ``file``; another store slots in with one :func:`register_backend` call and no
change to the sweep.

Backends are built *inside* Spark tasks from ``(storage_namespace, options)``: options must be
plain picklable values; clients and connections are created lazily in the task's process.
"""

from __future__ import annotations

import abc
import functools
from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping, Sequence

from lakewarden.errors import BadInput
from lakewarden.safety import parse_uri, unsafe_reason

#: :func:`lakewarden.safety.unsafe_reason` memoised: it is a pure function of two strings, and
#: the sweep asks it twice per address (its own row check, then the deleter's): the second time
#: is a lookup. Bounded, so memory stays flat however many addresses pass.
cached_unsafe_reason = functools.lru_cache(maxsize=16_384)(unsafe_reason)

Status = Literal["deleted", "failed"]
DELETED: Status = "deleted"
FAILED: Status = "failed"


@dataclass(frozen=True)
class DeleteOutcome:
    """What happened to one URI: ``deleted`` (including "was already gone") or ``failed`` + why."""

    uri: str
    status: Status
    reason: str = ""

    @classmethod
    def deleted(cls, uri: str, reason: str = "") -> "DeleteOutcome":
        return cls(uri, DELETED, reason)

    @classmethod
    def failed(cls, uri: str, reason: str) -> "DeleteOutcome":
        return cls(uri, FAILED, reason)


class Deleter(abc.ABC):
    """Deletes objects of one storage namespace.

    ``max_batch`` is the most URIs one ``delete_batch`` call accepts; ``max_concurrency`` is how
    many batches a caller may usefully run at once from threads (``delete_batch`` must be
    thread-safe). Implementations re-check every URI with :mod:`lakewarden.safety` and report
    unsafe ones as failed: the sweep checks too, but a deleter never trusts its caller.
    """

    max_batch: int = 1000
    max_concurrency: int = 1

    def __init__(self, storage_namespace: str):
        self.storage_namespace = storage_namespace

    @abc.abstractmethod
    def delete_batch(self, uris: Sequence[str]) -> list[DeleteOutcome]:
        """Delete ``uris`` (at most ``max_batch``); one outcome per URI, in input order."""

    def close(self) -> None:
        """Release connections; the deleter must not be used afterwards."""

    def split_unsafe(self, uris: Sequence[str]) -> tuple[list[str], dict[str, DeleteOutcome]]:
        """Partition ``uris`` into the safe ones and failed outcomes for the unsafe ones."""
        if len(uris) > self.max_batch:
            raise ValueError(f"batch of {len(uris)} exceeds max_batch={self.max_batch}")
        safe: list[str] = []
        unsafe: dict[str, DeleteOutcome] = {}
        for uri in uris:
            reason = cached_unsafe_reason(uri, self.storage_namespace)
            if reason is None:
                safe.append(uri)
            else:
                unsafe[uri] = DeleteOutcome.failed(uri, f"unsafe: {reason}")
        return safe, unsafe

    def __enter__(self) -> "Deleter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


DeleterFactory = Callable[..., Deleter]

_BACKENDS: dict[str, DeleterFactory] = {}


def register_backend(scheme: str, factory: DeleterFactory) -> None:
    """Make ``deleter_for`` build ``factory(storage_namespace, **options)`` for ``scheme`` URIs."""
    _BACKENDS[scheme.lower()] = factory


def _load_builtin_backends() -> None:
    if "file" not in _BACKENDS:
        from lakewarden.deleters.local import LocalDeleter

        register_backend("file", LocalDeleter)
    if "s3" not in _BACKENDS:
        from lakewarden.deleters.s3 import S3Deleter

        register_backend("s3", S3Deleter)
    if "local" not in _BACKENDS:
        from lakewarden.deleters.local_blockstore import LocalBlockstoreDeleter

        register_backend("local", LocalBlockstoreDeleter)
    if "https" not in _BACKENDS:
        from lakewarden.deleters.azure import AzureDeleter

        register_backend("https", AzureDeleter)  # Azure Blob Storage (http:// is an alias)
    if "gs" not in _BACKENDS:
        from lakewarden.deleters.gcs import GcsDeleter

        register_backend("gs", GcsDeleter)


def deleter_for(storage_namespace: str, **options: Any) -> Deleter:
    """The backend for ``storage_namespace``'s scheme (``s3a``/``s3n`` are ``s3``; paths are ``file``).

    Unknown schemes are bad input (the namespace comes from the report or repository).
    """
    _load_builtin_backends()
    try:
        scheme = parse_uri(storage_namespace).scheme
    except ValueError as exc:
        raise BadInput(str(exc), field="storage_namespace") from exc
    factory = _BACKENDS.get(scheme)
    if factory is None:
        known = ", ".join(sorted(_BACKENDS))
        raise BadInput(f"no deleter for scheme {scheme!r} (supported: {known})", field="storage_namespace")
    return factory(storage_namespace, **options)


def clean_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Drop ``None`` values so defaults (and environment variables) apply."""
    return {key: value for key, value in (options or {}).items() if value is not None}
