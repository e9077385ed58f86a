"""What every object store offers lakewarden: read, list, delete in batches, say whether a
delete really frees the space.

Why one interface: extract (reading ``_lakefs/`` range and metarange files), the storage
inventory (listing), the sweep (deleting) and the report (versioning / soft delete) must treat
``s3://``, Azure, ``gs://``, ``local://`` and ``file://`` namespaces alike. Everything is
addressed by absolute URI, as lakeFS writes physical addresses, so no caller needs to know how a
store splits a URI into bucket/container and key.

Stores are cheap to build and create their SDK clients lazily, in the process that uses them:
a store (or its deleter) built in a Spark task never carries sockets across processes.
"""

from __future__ import annotations

import abc
import builtins
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Iterator, NamedTuple, Sequence

from lakewarden.safety import canonical_namespace, parse_uri
from lakewarden.stores.options import StoreOptions

if TYPE_CHECKING:  # pragma: no cover
    from lakewarden.deleters.base import DeleteOutcome, Deleter

__all__ = ["ListedObject", "ObjectMissing", "ObjectStore", "Recoverability", "StoreError"]


class ListedObject(NamedTuple):
    """One object a listing found: absolute URI (raw key), size in bytes, last modification (UTC)."""

    uri: str
    size: int
    last_modified: datetime


class ObjectMissing(LookupError):
    """The object is not in the store (callers decide whether that is bad input)."""


class StoreError(RuntimeError):
    """The store refused or failed a read/list; the message names the store's error code."""


@dataclass(frozen=True)
class Recoverability:
    """Whether a delete leaves a recoverable copy that still costs storage (lakeFS#6807).

    ``recoverable`` is ``True`` (versioning / soft delete on), ``False`` (a delete frees the
    space) or ``None`` (the store would not say, e.g. no permission to read the setting).
    ``message`` is one line for the report and the sweep's output: what is on, and what to
    configure to free the space.
    """

    recoverable: bool | None
    message: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"recoverable": self.recoverable, "message": self.message}


class ObjectStore(abc.ABC):
    """One storage namespace on one store."""

    #: the canonical scheme this store serves (``s3``, ``https``, ``gs``, ``file``, ``local``)
    scheme: str = ""

    def __init__(self, storage_namespace: str, options: StoreOptions | None = None) -> None:
        self.storage_namespace = storage_namespace
        self.namespace = canonical_namespace(storage_namespace)
        self.options = options or StoreOptions()
        self._deleter: "Deleter | None" = None

    # -- addressing ------------------------------------------------------------------------

    def uri(self, key: str) -> str:
        """The absolute URI of ``key`` (relative to the namespace, raw)."""
        return f"{self.namespace}/{key}"

    def _check_mine(self, uri: str) -> None:
        parsed, ns = parse_uri(uri), parse_uri(self.namespace)
        if (parsed.scheme, parsed.authority) != (ns.scheme, ns.authority):
            raise ValueError(f"{uri!r} is not in the store of {self.namespace!r}")

    def check_options(self) -> None:
        """Raise :class:`~lakewarden.errors.BadInput` naming the option when the options cannot
        address this namespace (an endpoint of another account...), without a request: a job
        and a sweep call it before any work. Nothing to check by default."""

    # -- reading ---------------------------------------------------------------------------

    @abc.abstractmethod
    def read(self, uri: str) -> bytes:
        """The object's bytes; :class:`ObjectMissing` if absent, :class:`StoreError` otherwise."""

    def read_key(self, key: str) -> bytes:
        return self.read(self.uri(key))

    def download(self, uri: str, path: str) -> None:
        """Copy the object to the local file ``path``, streaming (inventory data files can be
        gigabytes); same errors as :meth:`read`. Stores whose SDK streams override this."""
        data = self.read(uri)
        with open(path, "wb") as handle:
            handle.write(data)

    # -- writing (lakeFS-format GC marks under _lakefs/retention/gc/) ------------------------

    def write(self, uri: str, data: bytes) -> None:  # pragma: no cover - every store overrides
        """Create or replace the object ``uri`` with ``data``."""
        raise NotImplementedError(f"{type(self).__name__} cannot write")

    def upload(self, path: str, uri: str) -> None:
        """Create or replace ``uri`` from the local file ``path`` (stores whose SDK streams
        override this)."""
        with open(path, "rb") as handle:
            self.write(uri, handle.read())

    # -- listing ---------------------------------------------------------------------------

    @abc.abstractmethod
    def list(self, prefix_uri: str, *, deep: bool = True) -> Iterator[ListedObject]:
        """Objects whose URI starts with ``prefix_uri``, streamed (never all held).

        ``deep=False``: only those directly under it (no further ``/``); a listing that plans
        prefixes (:meth:`children`) lists each level shallowly and each leaf deeply.
        """

    @abc.abstractmethod
    def children(self, prefix_uri: str, *, max_entries: int = 5000) -> builtins.list[str] | None:
        """Sub-prefix URIs (ending in ``/``) directly under ``prefix_uri``, sorted; ``None`` when
        that level has more than ``max_entries`` entries (sub-prefixes and objects) to page
        through: the caller lists that prefix deeply instead."""

    # -- deleting --------------------------------------------------------------------------

    def deleter(self) -> "Deleter":
        """The sweep's backend for this namespace (the registered one for the scheme)."""
        if self._deleter is None:
            from lakewarden.deleters.base import deleter_for

            self._deleter = deleter_for(self.storage_namespace, **self.options.deleter_options())
        return self._deleter

    @property
    def max_batch(self) -> int:
        """The most URIs one :meth:`delete_batch` accepts (the store's batch API limit)."""
        return self.deleter().max_batch

    def delete_batch(self, uris: Sequence[str]) -> "builtins.list[DeleteOutcome]":
        """Delete at most :attr:`max_batch` URIs; one outcome per URI, every URI re-checked by
        :mod:`lakewarden.safety` (unsafe ones fail, never reach the store)."""
        return self.deleter().delete_batch(uris)

    # -- what a delete costs ---------------------------------------------------------------

    def recoverability(self) -> Recoverability:
        """Whether deletes here leave recoverable versions (default: plain storage, they do not)."""
        return Recoverability(False, "")

    def close(self) -> None:
        if self._deleter is not None:
            self._deleter.close()
            self._deleter = None

    def __enter__(self) -> "ObjectStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
