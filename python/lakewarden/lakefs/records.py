"""Decode lakeFS records stored in SSTables into plain dicts.

Every lakeFS SSTable record value (graveler ``Value``) is two length-prefixed byte strings: a
zig-zag signed varint length + the *identity* (a content hash), then a zig-zag signed varint
length + the *data* (a protobuf message). The message type depends on the table:

* a **range** (``type`` property ``ranges``): key = object path, data = ``catalog.Entry``;
* a **metarange** (``type`` property ``metaranges``): key = the range's max key, identity = the
  range id (the 64-character hex name of the range file under ``<namespace>/_lakefs/``, stored as
  ASCII), data = ``committed.RangeData``;
* refs-dump tables (ranges of a commits/branches/tags metarange): key = commit/branch/tag id,
  data = ``graveler.CommitData`` / ``BranchData`` / ``TagData``.

Protobuf decoding uses the generated modules in :mod:`lakewarden.lakefs.proto` (the protobuf
runtime, never a hand-written decoder), so schema evolution follows protobuf's rules.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any, Final

from google.protobuf.message import DecodeError

from lakewarden.lakefs.proto import catalog_pb2, committed_pb2, graveler_pb2
from lakewarden.lakefs.sstable import SSTableError, SSTableReader
from lakewarden.lakefs.varint import read_svarint, write_svarint

__all__ = [
    "RecordError",
    "decode_value",
    "encode_value",
    "decode_range_record",
    "decode_metarange_record",
    "decode_commit_record",
    "decode_branch_record",
    "decode_tag_record",
    "decode_raw_record",
    "detect_record_type",
    "iter_decoded",
    "decode_range_columns",
    "RANGE_COLUMNS",
    "RECORD_TYPES",
    "TABLE_TYPE_RANGES",
    "TABLE_TYPE_METARANGES",
]

#: lakeFS's ``type`` user property of a range and of a metarange table.
TABLE_TYPE_RANGES: Final = "ranges"
TABLE_TYPE_METARANGES: Final = "metaranges"

_ADDRESS_TYPE_NAMES: Final = {
    value.number: value.name for value in catalog_pb2.Entry.AddressType.DESCRIPTOR.values
}
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)


class RecordError(SSTableError):
    """A record's value is not a valid lakeFS value of the expected type."""


# -- value framing -----------------------------------------------------------------------------


def decode_value(raw: bytes) -> tuple[bytes, bytes]:
    """Split a lakeFS value into ``(identity, data)``.

    The common case (both lengths < 64, i.e. one varint byte) is handled without calling the
    general varint decoder, because this runs once per record of every range.
    """
    try:
        b = raw[0]
        if b < 0x80:
            ilen, pos = (b >> 1) ^ -(b & 1), 1
        else:
            ilen, pos = read_svarint(raw, 0)
        if ilen < 0:
            raise ValueError("negative identity length")
        ident_start = pos
        ident_end = pos + ilen
        b = raw[ident_end]
        if b < 0x80:
            dlen, pos = (b >> 1) ^ -(b & 1), ident_end + 1
        else:
            dlen, pos = read_svarint(raw, ident_end)
        if dlen < 0:
            raise ValueError("negative data length")
        end = pos + dlen
        if end > len(raw) or ident_end > len(raw):
            raise ValueError("lengths run past the end of the value")
    except (IndexError, ValueError) as exc:
        raise RecordError(f"not a lakeFS value ({exc})") from None
    return raw[ident_start:ident_end], raw[pos:end]


def encode_value(identity: bytes, data: bytes) -> bytes:
    """Frame ``identity`` and ``data`` as a lakeFS value (inverse of :func:`decode_value`)."""
    return write_svarint(len(identity)) + identity + write_svarint(len(data)) + data


# -- record decoders ---------------------------------------------------------------------------


def _text(raw: bytes) -> str:
    """Keys and addresses are printed as UTF-8; invalid bytes become U+FFFD, never an error."""
    return raw.decode("utf-8", "replace")


def rfc3339(seconds: int, nanos: int) -> str:
    """Format a protobuf Timestamp as RFC 3339 in UTC (microsecond precision, like Python)."""
    try:
        moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        raise RecordError(f"timestamp out of range ({seconds}s)") from None
    if nanos:
        moment = moment.replace(microsecond=nanos // 1000)
    return moment.isoformat()


def _parse(message_type: Any, data: bytes, key: bytes) -> Any:
    try:
        return message_type.FromString(data)
    except DecodeError:
        name = message_type.DESCRIPTOR.full_name
        raise RecordError(f"record {_text(key)!r}: value is not a valid {name}") from None


def decode_range_record(key: bytes, value: bytes) -> dict[str, Any]:
    """A range record (path -> ``catalog.Entry``) as a dict, per docs/contract.md §5."""
    _, data = decode_value(value)
    entry = _parse(catalog_pb2.Entry, data, key)
    ts = entry.last_modified
    return {
        "key": _text(key),
        "address": entry.address,
        "address_type": _ADDRESS_TYPE_NAMES.get(entry.address_type, str(entry.address_type)),
        "last_modified": rfc3339(ts.seconds, ts.nanos),
        "size": entry.size,
        "etag": entry.e_tag,
        "metadata": dict(entry.metadata) if entry.metadata else {},
        "content_type": entry.content_type,
    }


def decode_metarange_record(key: bytes, value: bytes) -> dict[str, Any]:
    """A metarange record (range max key -> range id + ``committed.RangeData``) as a dict."""
    identity, data = decode_value(value)
    info = _parse(committed_pb2.RangeData, data, key)
    return {
        "key": _text(key),
        "range_id": _text(identity),
        "min_key": _text(info.min_key),
        "max_key": _text(info.max_key),
        "count": info.count,
        "estimated_size": info.estimated_size,
    }


def decode_commit_record(key: bytes, value: bytes) -> dict[str, Any]:
    """A refs-dump commit record (commit id -> ``graveler.CommitData``), snapshot-shaped."""
    _, data = decode_value(value)
    commit = _parse(graveler_pb2.CommitData, data, key)
    ts = commit.creation_date
    return {
        "commit_id": commit.id or _text(key),
        "parents": list(commit.parents),
        "creation_date": rfc3339(ts.seconds, ts.nanos),
        "meta_range_id": commit.meta_range_id,
        "committer": commit.committer,
        "message": commit.message,
        "version": commit.version,
        "generation": commit.generation,
        "metadata": dict(commit.metadata),
    }


def decode_branch_record(key: bytes, value: bytes) -> dict[str, Any]:
    """A refs-dump branch record (branch id -> ``graveler.BranchData``), snapshot-shaped."""
    _, data = decode_value(value)
    branch = _parse(graveler_pb2.BranchData, data, key)
    return {"branch_id": branch.id or _text(key), "commit_id": branch.commit_id, "hidden": branch.hidden}


def decode_tag_record(key: bytes, value: bytes) -> dict[str, Any]:
    """A refs-dump tag record (tag id -> ``graveler.TagData``), snapshot-shaped."""
    _, data = decode_value(value)
    tag = _parse(graveler_pb2.TagData, data, key)
    return {"tag_id": tag.id or _text(key), "commit_id": tag.commit_id}


def decode_raw_record(key: bytes, value: bytes) -> dict[str, Any]:
    """Any record: key as text, value as UTF-8 if valid else base64 under ``value_b64``."""
    try:
        return {"key": _text(key), "value": value.decode("utf-8")}
    except UnicodeDecodeError:
        return {"key": _text(key), "value_b64": base64.b64encode(value).decode("ascii")}


RecordDecoder = Callable[[bytes, bytes], dict[str, Any]]

#: ``--type`` name -> decoder.
RECORD_TYPES: Final[dict[str, RecordDecoder]] = {
    "range": decode_range_record,
    "metarange": decode_metarange_record,
    "commit": decode_commit_record,
    "branch": decode_branch_record,
    "tag": decode_tag_record,
    "raw": decode_raw_record,
}


def detect_record_type(reader: SSTableReader) -> str:
    """``range`` / ``metarange`` from lakeFS's ``type`` property, else ``raw``."""
    return {TABLE_TYPE_RANGES: "range", TABLE_TYPE_METARANGES: "metarange"}.get(
        reader.table_type or "", "raw"
    )


#: Columns of :func:`decode_range_columns`, in snapshot ``ranges`` order (minus ``range_id``).
RANGE_COLUMNS: Final = ("key", "address", "address_type", "last_modified_us", "size", "etag")


def decode_range_columns(reader: SSTableReader) -> dict[str, list[Any]]:
    """Decode a whole range into column lists: the bulk path used by extract and Spark tasks.

    Builds no per-record dicts and formats no timestamps (``last_modified_us`` is microseconds
    since the epoch, UTC), which makes it several times faster than :func:`iter_decoded`.
    ``address_type`` is the enum name, as in :func:`decode_range_record`.
    """
    keys: list[str] = []
    addresses: list[str] = []
    types: list[str] = []
    modified: list[int] = []
    sizes: list[int] = []
    etags: list[str] = []
    parse = catalog_pb2.Entry.FromString
    type_names = _ADDRESS_TYPE_NAMES
    try:
        for block_keys, block_values in reader.iter_blocks():
            for key, value in zip(block_keys, block_values):
                entry = parse(decode_value(value)[1])
                ts = entry.last_modified
                keys.append(key.decode("utf-8", "replace"))
                addresses.append(entry.address)
                types.append(type_names.get(entry.address_type) or str(entry.address_type))
                modified.append(ts.seconds * 1_000_000 + ts.nanos // 1000)
                sizes.append(entry.size)
                etags.append(entry.e_tag)
    except DecodeError:
        raise RecordError(
            f"record after {keys[-1] if keys else 'start'!r}: value is not a valid catalog.Entry",
            source=reader.name,
        ) from None
    except RecordError as exc:
        raise RecordError(str(exc), source=reader.name) from None
    return {
        "key": keys,
        "address": addresses,
        "address_type": types,
        "last_modified_us": modified,
        "size": sizes,
        "etag": etags,
    }


def iter_decoded(reader: SSTableReader, record_type: str = "auto") -> Iterator[dict[str, Any]]:
    """Decode every record of ``reader`` as ``record_type`` (``auto`` detects it), in key order.

    Errors carry the file name so a CLI user sees which table was bad.
    """
    if record_type == "auto":
        record_type = detect_record_type(reader)
    try:
        decoder = RECORD_TYPES[record_type]
    except KeyError:
        raise SSTableError(f"unknown record type {record_type!r}", source=reader.name) from None
    for key, value in reader.iter_records():
        try:
            yield decoder(key, value)
        except RecordError as exc:
            raise RecordError(str(exc), source=reader.name) from None
