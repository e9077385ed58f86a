"""Which physical addresses a job may delete, decided the same way everywhere.

Every deletion path (the sweep, each deleter, the jobs) asks :func:`check_deletable` before
touching an object. The rule (docs/contract.md §2): only objects strictly *inside* the storage
namespace, never the namespace itself, never anything under ``<ns>/_lakefs/``, never lakeFS's
``<ns>/dummy``.

Why so much normalisation: an address can reach storage through several tools, and they do not
agree on what a URI means. S3 treats ``a//b``, ``a/../b`` and ``a%2Fb`` as literal keys; Hadoop's
``s3a`` and the local filesystem collapse slashes and resolve dot segments; some clients
percent-decode (Iceberg's orphan-file clean-up lost data exactly this way). So a URI is judged
under *every* plausible interpretation - raw, dot/slash-normalised, percent-decoded (repeatedly),
backslashes as separators - and is deletable only if it is safe under all of them. A false
"unsafe" costs an object that stays; a false "safe" costs data.

Physical URIs are raw, like lakeFS's: never percent-encoded. ``resolve_physical`` joins a
RELATIVE address to the namespace verbatim, and deleters delete the raw key/path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from lakewarden.errors import UnsafeDeletion

#: Scheme aliases: every spelling that names the same object store. Azure Blob Storage
#: namespaces are ``https://ACCOUNT.blob.core.windows.net/CONTAINER/PATH`` as lakeFS writes them;
#: lakeFS accepts ``http://`` for the same account too, so both are one store here.
SCHEME_ALIASES: dict[str, str] = {
    "s3a": "s3",
    "s3n": "s3",
    "s3": "s3",
    "file": "file",
    "gs": "gs",
    "http": "https",
    "https": "https",
}
#: Schemes whose authority is a DNS host name, compared case-insensitively (RFC 3986 3.2.2):
#: ``ACCOUNT.Blob.Core.Windows.Net`` is the same account as ``account.blob.core.windows.net``.
#: Buckets (``s3``, ``gs``) stay exact: a different spelling is refused, never guessed equal.
HOST_SCHEMES = frozenset({"https"})
#: Schemes whose first path segment is part of the store's address (Azure's container), so a
#: namespace without one would span every container of the account.
CONTAINER_SCHEMES = frozenset({"https"})
#: Azure's container naming rule (3-63 characters, lower-case letters, digits, single hyphens).
_CONTAINER_NAME = re.compile(r"[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}")

#: The metadata directory of a lakeFS namespace; nothing below it is ever deleted.
LAKEFS_DIR = "_lakefs"
#: The object lakeFS writes at the namespace root when it creates a repository (to check that
#: it may write there); lakeFS's own GC never deletes it, and neither does any job here.
LAKEFS_DUMMY = "dummy"

_MAX_DECODE_ROUNDS = 4


@dataclass(frozen=True)
class ParsedURI:
    """A URI split without interpretation: canonical scheme, authority (bucket), raw path.

    ``path`` always starts with ``/`` (or is empty) and keeps the characters exactly as given:
    ``?`` and ``#`` are part of an S3 key, not a query or fragment.
    """

    scheme: str
    authority: str
    path: str

    def uri(self) -> str:
        return f"{self.scheme}://{self.authority}{self.path}"


def parse_uri(uri: str) -> ParsedURI:
    """Split ``uri``; aliases (``s3a``, ``s3n``) become ``s3``, ``http`` becomes ``https`` (Azure),
    ``file:`` forms become ``file://``, and a host-name authority (Azure's) is lower-cased.

    Accepted file forms: ``file:///abs``, ``file:/abs``, ``file://localhost/abs`` and a bare
    absolute path ``/abs``. Raises :class:`ValueError` for anything else that is not a URI.
    """
    if not isinstance(uri, str) or not uri:
        raise ValueError(f"not a URI: {uri!r}")
    if uri.startswith("/"):
        return ParsedURI("file", "", _file_path(uri, uri))
    scheme, sep, rest = uri.partition(":")
    if not sep or not scheme or not (scheme[0].isalpha() and all(c.isalnum() or c in "+-." for c in scheme)):
        raise ValueError(f"not an absolute URI: {uri!r}")
    scheme = scheme.lower()
    scheme = SCHEME_ALIASES.get(scheme, scheme)
    if scheme == "file":
        if rest.startswith("//"):
            authority, slash, path = rest[2:].partition("/")
            if authority.lower() not in ("", "localhost"):
                raise ValueError(f"file URI with a remote host: {uri!r}")
            return ParsedURI("file", "", _file_path("/" + path if slash else "", uri))
        return ParsedURI("file", "", _file_path(rest, uri))
    if not rest.startswith("//"):
        raise ValueError(f"URI without an authority: {uri!r}")
    authority, slash, path = rest[2:].partition("/")
    if not authority:
        raise ValueError(f"URI without a bucket/container: {uri!r}")
    if scheme in HOST_SCHEMES:
        authority = authority.lower()
    return ParsedURI(scheme, authority, "/" + path if slash else "")


def container_problem(ns: ParsedURI) -> str | None:
    """Why ``ns`` (a parsed namespace) lacks a valid Azure container; ``None`` when it has one.

    An Azure namespace's path starts with its container. Without a valid one, "inside the
    namespace" would mean "in any container of the account", so such a namespace is refused.
    """
    if ns.scheme not in CONTAINER_SCHEMES:
        return None
    container = ns.path[1:].split("/", 1)[0] if ns.path.startswith("/") else ""
    if not container:
        return "an Azure storage namespace needs a container (https://ACCOUNT.blob.core.windows.net/CONTAINER/...)"
    if not _CONTAINER_NAME.fullmatch(container):
        return f"{container!r} is not an Azure container name"
    return None


def _file_path(path: str, uri: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"file URI with a relative path: {uri!r}")
    return path


def canonical_uri(uri: str) -> str:
    """The URI with its scheme canonical (``s3a://`` -> ``s3://``, ``file:/x`` -> ``file:///x``).

    The path is left alone: in S3, ``a//b`` and ``a/b`` are different objects.
    """
    return parse_uri(uri).uri()


def canonical_namespace(storage_namespace: str) -> str:
    """The namespace URI canonical and without trailing slashes (``s3a://b/p//`` -> ``s3://b/p``)."""
    parsed = parse_uri(storage_namespace)
    return f"{parsed.scheme}://{parsed.authority}{parsed.path.rstrip('/')}"


def resolve_physical(address: str, address_type: str, storage_namespace: str) -> str:
    """The absolute URI an entry's address points at.

    RELATIVE addresses are joined to the namespace verbatim (no encoding, no normalisation), FULL
    addresses only get their scheme canonicalised. The result is *not* checked: call
    :func:`check_deletable` before deleting it.
    """
    kind = (address_type or "").upper()
    if kind == "RELATIVE":
        return f"{canonical_namespace(storage_namespace)}/{address}"
    if kind == "FULL":
        return canonical_uri(address)
    raise ValueError(f"unknown address_type {address_type!r} for address {address!r}")


def normalize_path(path: str) -> str | None:
    """Collapse duplicate slashes, resolve ``.``/``..``, drop trailing slashes.

    Returns ``None`` when ``..`` climbs above the root: such a path is an escape attempt, not
    something to clamp.
    """
    parts: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(segment)
    return "/" + "/".join(parts)


def _interpretations(path: str) -> list[str | None]:
    """Every reading of ``path`` some tool might act on (see the module docstring)."""
    readings: list[str] = [path]
    current = path
    for _ in range(_MAX_DECODE_ROUNDS):
        decoded = unquote(current, errors="surrogateescape")
        if decoded == current:
            break
        readings.append(decoded)
        current = decoded
    readings += [reading.replace("\\", "/") for reading in readings if "\\" in reading]
    out: list[str | None] = []
    for reading in readings:
        out.append(normalize_path(reading))
    return out


def _relative_unsafe(path: str, ns_path: str) -> str | None:
    """Why ``path`` (raw, one interpretation) is not deletable under ``ns_path``; ``None`` if it is."""
    root = ns_path.rstrip("/")
    if path.rstrip("/") == root:
        return "is the storage namespace root"
    prefix = root + "/"
    if not path.startswith(prefix):
        return "outside the storage namespace"
    relative = path[len(prefix):]
    segments = [segment for segment in relative.split("/") if segment]
    if not segments:
        return "is the storage namespace root"
    if segments[0].casefold() == LAKEFS_DIR:
        return f"under {LAKEFS_DIR}/"
    if len(segments) == 1 and segments[0].casefold() == LAKEFS_DUMMY:
        return f"is lakeFS's {LAKEFS_DUMMY!r} object at the namespace root"
    return None


def unsafe_reason(uri: str, storage_namespace: str) -> str | None:
    """Why ``uri`` must not be deleted from ``storage_namespace``; ``None`` when it may be.

    The namespace itself is normalised once (slashes, dot segments); the URI is judged under
    every interpretation from :func:`_interpretations` and also as raw text.
    """
    try:
        ns = parse_uri(storage_namespace)
    except ValueError as exc:
        return f"bad storage namespace: {exc}"
    try:
        target = parse_uri(uri)
    except ValueError as exc:
        return f"bad physical address: {exc}"
    if target.scheme != ns.scheme:
        return f"scheme {target.scheme!r} is not the storage namespace's {ns.scheme!r}"
    if target.authority != ns.authority:
        return f"bucket {target.authority!r} is not the storage namespace's {ns.authority!r}"
    problem = container_problem(ns)
    if problem is not None:
        return f"bad storage namespace: {problem}"
    ns_path = normalize_path(ns.path)
    if ns_path is None:
        return "bad storage namespace: '..' above the root"
    if "\x00" in target.path:
        return "NUL byte in physical address"
    if target.scheme != "file":
        # Object stores delete the raw key: it must be inside the namespace as written, too.
        # (A filesystem has no raw reading: the kernel always collapses slashes and dots.)
        raw_reason = _relative_unsafe(target.path, ns.path.rstrip("/") or ns_path)
        if raw_reason is not None:
            return raw_reason
    for reading in _interpretations(target.path):
        if reading is None:
            return "'..' climbs above the root"
        reason = _relative_unsafe(reading, ns_path)
        if reason is not None:
            return f"{reason} once normalised ({reading!r})"
    return None


def is_deletable(uri: str, storage_namespace: str) -> bool:
    """``True`` when :func:`check_deletable` would pass."""
    return unsafe_reason(uri, storage_namespace) is None


def check_deletable(uri: str, storage_namespace: str) -> None:
    """Raise :class:`~lakewarden.errors.UnsafeDeletion` unless ``uri`` may be deleted.

    Deletable means strictly inside ``storage_namespace`` and not under ``<ns>/_lakefs/``,
    under every interpretation of the URI (scheme aliases, ``file:`` forms, duplicate and
    trailing slashes, dot segments, percent-encoding, backslashes).
    """
    reason = unsafe_reason(uri, storage_namespace)
    if reason is not None:
        raise UnsafeDeletion(f"refusing to delete {uri!r}: {reason} (storage namespace {storage_namespace!r})")
