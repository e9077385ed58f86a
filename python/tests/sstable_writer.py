"""Write SSTables in the format lakeFS (pebble, ``TableFormatRocksDBv2``) writes.

Tests need real ``_lakefs/`` range and metarange files, and the only
honest way to test the reader beyond the few fixtures is to round-trip through an independent
writer of the same format. The layout follows pebble's writer:

``data blocks | index (or index partitions + top-level index) | properties | metaindex | footer``

* entries are prefix-compressed against the previous key with a restart point every
  ``restart_interval`` entries (1 for index and meta blocks, like pebble);
* keys in data and index blocks are internal keys: user key + 8-byte trailer (seqnum 0, SET);
* each block is followed by its compression type byte and the masked CRC32C of block + type;
* a block is stored Snappy-compressed only if that saves at least 1/8 (pebble's rule);
* the properties block carries pebble's ``rocksdb.*`` properties plus the caller's user
  properties (lakeFS: ``type``, ``min_key``, ``max_key``, ``count``, ``estimated_size_bytes``);
* the footer is the 53-byte format-version-2 footer with checksum type CRC32C.

:func:`write_range` and :func:`write_metarange` produce lakeFS range/metarange files with the
same property names and value encoding as the real fixtures.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, Final, Union

import google_crc32c

from lakewarden.lakefs.proto import catalog_pb2, committed_pb2, graveler_pb2
from lakewarden.lakefs.records import (
    TABLE_TYPE_METARANGES,
    TABLE_TYPE_RANGES,
    encode_value,
)
from lakewarden.lakefs.sstable import (
    BLOCK_BASED_MAGIC,
    CHECKSUM_CRC32C,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    INDEX_TYPE_TWO_LEVEL,
    INTEGER_PROPERTIES,
    BlockHandle,
    mask_crc,
)
from lakewarden.lakefs.varint import write_uvarint

__all__ = [
    "SSTableWriter",
    "RangeInfo",
    "write_range",
    "write_metarange",
    "write_refs_table",
    "encode_entry",
    "encode_range_data",
]

_SET_TRAILER: Final = struct.pack("<Q", (0 << 8) | 1)  # seqnum 0, kind SET
_FORMAT_VERSION: Final = 2
_FIXED32: Final = frozenset({"rocksdb.block.based.table.index.type", "rocksdb.external_sst_file.version"})
_FIXED64: Final = frozenset({"rocksdb.external_sst_file.global_seqno"})

PropertyInput = Union[int, str, bytes]


def _encode_handle(handle: BlockHandle) -> bytes:
    return write_uvarint(handle.offset) + write_uvarint(handle.size)


class _BlockBuilder:
    """Accumulates prefix-compressed entries and the restart array of one block."""

    def __init__(self, restart_interval: int) -> None:
        self.restart_interval = restart_interval
        self.reset()

    def reset(self) -> None:
        self.buf = bytearray()
        self.restarts: list[int] = []
        self.count = 0
        self.last_key = b""

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self.count % self.restart_interval == 0:
            self.restarts.append(len(self.buf))
        else:
            limit = min(len(key), len(self.last_key))
            while shared < limit and key[shared] == self.last_key[shared]:
                shared += 1
        self.buf += write_uvarint(shared) + write_uvarint(len(key) - shared) + write_uvarint(len(value))
        self.buf += key[shared:]
        self.buf += value
        self.last_key = key
        self.count += 1

    def estimated_size(self) -> int:
        return len(self.buf) + 4 * len(self.restarts) + 4

    def finish(self) -> bytes:
        restarts = self.restarts or [0]
        return bytes(self.buf) + struct.pack(f"<{len(restarts)}I", *restarts) + struct.pack("<I", len(restarts))


class SSTableWriter:
    """Streams sorted records into a RocksDB-format SSTable.

    Keys must be added in strictly increasing byte order (the reader and lakeFS rely on it).
    ``index_block_size`` > 0 builds a two-level (partitioned) index whose partitions are cut at
    that size, as pebble does for large ranges.
    """

    def __init__(
        self,
        target: Union[str, os.PathLike, BinaryIO],
        *,
        compression: str = "snappy",
        block_size: int = 4096,
        restart_interval: int = 16,
        index_block_size: int = 0,
        user_properties: Mapping[str, PropertyInput] | None = None,
    ) -> None:
        if compression not in ("snappy", "none"):
            raise ValueError(f"compression must be 'snappy' or 'none', not {compression!r}")
        self._owns_file = not hasattr(target, "write")
        self._out: BinaryIO = open(target, "wb") if self._owns_file else target  # type: ignore[arg-type]
        self._compression = compression
        self._block_size = block_size
        self._index_block_size = index_block_size
        self._user_properties = dict(user_properties or {})
        self._data = _BlockBuilder(restart_interval)
        self._index_entries: list[tuple[bytes, BlockHandle]] = []
        self._offset = 0
        self._last_user_key: bytes | None = None
        self._num_entries = 0
        self._raw_key_size = 0
        self._raw_value_size = 0
        self._data_size = 0
        self._closed = False

    # -- records ------------------------------------------------------------------------

    def add(self, key: bytes, value: bytes) -> None:
        """Append one record; ``key`` must sort after the previous one."""
        if self._last_user_key is not None and key <= self._last_user_key:
            raise ValueError(f"keys must be strictly increasing: {key!r} after {self._last_user_key!r}")
        self._last_user_key = key
        ikey = key + _SET_TRAILER
        self._data.add(ikey, value)
        self._num_entries += 1
        self._raw_key_size += len(ikey)
        self._raw_value_size += len(value)
        if self._data.estimated_size() >= self._block_size:
            self._flush_data_block()

    def set_property(self, name: str, value: PropertyInput) -> None:
        """Add or replace a user property (lakeFS computes some only after the last record)."""
        self._user_properties[name] = value

    @property
    def num_entries(self) -> int:
        return self._num_entries

    @property
    def estimated_size(self) -> int:
        """Bytes of data blocks written so far plus the pending block."""
        return self._data_size + self._data.estimated_size()

    # -- blocks ---------------------------------------------------------------------------

    def _write_block(self, contents: bytes, compress: bool) -> BlockHandle:
        ctype = COMPRESSION_NONE
        if compress and self._compression == "snappy":
            import snappy

            compressed = snappy.compress(contents)
            if len(compressed) < len(contents) - len(contents) // 8:
                contents, ctype = compressed, COMPRESSION_SNAPPY
        type_byte = bytes([ctype])
        crc = mask_crc(google_crc32c.value(contents + type_byte))
        handle = BlockHandle(self._offset, len(contents))
        self._out.write(contents + type_byte + struct.pack("<I", crc))
        self._offset += len(contents) + 5
        return handle

    def _flush_data_block(self) -> None:
        if self._data.count == 0:
            return
        last_key = self._data.last_key
        handle = self._write_block(self._data.finish(), compress=True)
        self._data_size += handle.size + 5
        self._index_entries.append((last_key, handle))
        self._data.reset()

    def _write_index(self) -> tuple[BlockHandle, dict[str, PropertyInput]]:
        """Write the index; return its handle and the index-related properties."""
        if not self._index_block_size or not self._index_entries:
            block = _BlockBuilder(1)
            for key, handle in self._index_entries:
                block.add(key, _encode_handle(handle))
            contents = block.finish()
            handle = self._write_block(contents, compress=True)
            return handle, {"rocksdb.index.size": len(contents), "rocksdb.block.based.table.index.type": 0}
        partitions: list[tuple[bytes, BlockHandle]] = []
        block = _BlockBuilder(1)
        total = 0
        for position, (key, handle) in enumerate(self._index_entries):
            block.add(key, _encode_handle(handle))
            last = position == len(self._index_entries) - 1
            if block.estimated_size() >= self._index_block_size or last:
                contents = block.finish()
                total += len(contents)
                partitions.append((key, self._write_block(contents, compress=True)))
                block = _BlockBuilder(1)
        top = _BlockBuilder(1)
        for key, handle in partitions:
            top.add(key, _encode_handle(handle))
        contents = top.finish()
        handle = self._write_block(contents, compress=True)
        return handle, {
            "rocksdb.index.size": total + len(contents),
            "rocksdb.top-level.index.size": len(contents),
            "rocksdb.index.partitions": len(partitions),
            "rocksdb.block.based.table.index.type": INDEX_TYPE_TWO_LEVEL,
        }

    def _properties(self, index_props: Mapping[str, PropertyInput]) -> dict[str, PropertyInput]:
        props: dict[str, PropertyInput] = {
            "rocksdb.block.based.table.prefix.filtering": "0",
            "rocksdb.block.based.table.whole.key.filtering": "0",
            "rocksdb.column.family.id": 0x7FFFFFFF,
            "rocksdb.comparator": "leveldb.BytewiseComparator",
            "rocksdb.compression": "Snappy" if self._compression == "snappy" else "NoCompression",
            "rocksdb.compression_options": (
                "window_bits=-14; level=32767; strategy=0; max_dict_bytes=0; "
                "zstd_max_train_bytes=0; enabled=0; "
            ),
            "rocksdb.creation.time": 0,
            "rocksdb.data.size": self._data_size,
            "rocksdb.deleted.keys": 0,
            "rocksdb.external_sst_file.global_seqno": 0,
            "rocksdb.external_sst_file.version": 2,
            "rocksdb.filter.size": 0,
            "rocksdb.fixed.key.length": 0,
            "rocksdb.format.version": 0,
            "rocksdb.index.key.is.user.key": 0,
            "rocksdb.index.value.is.delta.encoded": 0,
            "rocksdb.merge.operands": 0,
            "rocksdb.merge.operator": "pebble.concatenate",
            "rocksdb.num.data.blocks": len(self._index_entries),
            "rocksdb.num.entries": self._num_entries,
            "rocksdb.num.range-deletions": 0,
            "rocksdb.oldest.key.time": 0,
            "rocksdb.prefix.extractor.name": "nullptr",
            "rocksdb.raw.key.size": self._raw_key_size,
            "rocksdb.raw.value.size": self._raw_value_size,
        }
        props.update(index_props)
        if self._user_properties:
            props["rocksdb.property.collectors"] = "[static]"
            props.update(self._user_properties)
        return props

    @staticmethod
    def _encode_property(name: str, value: PropertyInput) -> bytes:
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode("utf-8")
        if name in _FIXED32:
            return struct.pack("<I", value)
        if name in _FIXED64:
            return struct.pack("<Q", value)
        if name in INTEGER_PROPERTIES:
            return write_uvarint(value)
        # A user property given as an int: lakeFS writes numbers as decimal text.
        return str(value).encode("ascii")

    def close(self) -> int:
        """Write index, properties, metaindex and footer; return the file size."""
        if self._closed:
            return self._offset
        self._flush_data_block()
        index_handle, index_props = self._write_index()
        props_block = _BlockBuilder(1)
        for name, value in sorted(self._properties(index_props).items()):
            props_block.add(name.encode("utf-8"), self._encode_property(name, value))
        props_handle = self._write_block(props_block.finish(), compress=False)
        meta = _BlockBuilder(1)
        meta.add(b"rocksdb.properties", _encode_handle(props_handle))
        meta_handle = self._write_block(meta.finish(), compress=False)
        handles = _encode_handle(meta_handle) + _encode_handle(index_handle)
        footer = (
            bytes([CHECKSUM_CRC32C])
            + handles.ljust(40, b"\0")
            + struct.pack("<I", _FORMAT_VERSION)
            + BLOCK_BASED_MAGIC
        )
        self._out.write(footer)
        self._offset += len(footer)
        if self._owns_file:
            self._out.close()
        else:
            self._out.flush()
        self._closed = True
        return self._offset

    def __enter__(self) -> "SSTableWriter":
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:
            self.close()
        elif self._owns_file:
            self._out.close()


# -- lakeFS tables --------------------------------------------------------------------------


@dataclass(frozen=True)
class RangeInfo:
    """What a metarange records about one range file."""

    range_id: str
    min_key: bytes
    max_key: bytes
    count: int
    estimated_size: int


def _timestamp(value: Any, message: Any) -> None:
    """Set a protobuf Timestamp from a datetime, RFC 3339 string or epoch seconds."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        message.FromDatetime(value.astimezone(timezone.utc))
    else:
        message.seconds = int(value)


def encode_entry(entry: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """A range record from a dict shaped like :func:`~lakewarden.lakefs.records.decode_range_record`.

    Returns ``(key, value)``; the identity is the SHA-256 of the encoded entry, which is what
    makes lakeFS ranges content-addressed.
    """
    message = catalog_pb2.Entry(
        address=entry["address"],
        size=int(entry.get("size", 0)),
        e_tag=entry.get("etag", ""),
        metadata=dict(entry.get("metadata") or {}),
        address_type=catalog_pb2.Entry.AddressType.Value(entry.get("address_type", "RELATIVE")),
        content_type=entry.get("content_type", ""),
    )
    _timestamp(entry.get("last_modified", 0), message.last_modified)
    data = message.SerializeToString(deterministic=True)
    key = entry["key"].encode("utf-8") if isinstance(entry["key"], str) else entry["key"]
    return key, encode_value(hashlib.sha256(data).digest(), data)


def encode_range_data(info: RangeInfo) -> tuple[bytes, bytes]:
    """A metarange record: key = the range's max key, identity = the range id (ASCII)."""
    data = committed_pb2.RangeData(
        min_key=info.min_key, max_key=info.max_key, estimated_size=info.estimated_size, count=info.count
    ).SerializeToString(deterministic=True)
    return info.max_key, encode_value(info.range_id.encode("ascii"), data)


def _lakefs_table(
    directory: Path | None,
    path: Path | None,
    records: Iterable[tuple[bytes, bytes]],
    table_type: str,
    **writer_options: Any,
) -> tuple[Path, RangeInfo]:
    """Write lakeFS records; the file is named by its content hash when ``directory`` is given."""
    records = sorted(records)
    digest = hashlib.sha256()
    for key, value in records:
        digest.update(struct.pack("<Q", len(key)) + key + struct.pack("<Q", len(value)) + value)
    table_id = digest.hexdigest()
    target = path if path is not None else Path(directory or ".") / table_id
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with SSTableWriter(tmp, **writer_options) as writer:
        for key, value in records:
            writer.add(key, value)
        writer.set_property("type", table_type)
        if records:
            writer.set_property("min_key", records[0][0])
            writer.set_property("max_key", records[-1][0])
        writer.set_property("count", str(len(records)))
        writer.set_property("estimated_size_bytes", str(writer.estimated_size))
    os.replace(tmp, target)
    info = RangeInfo(
        range_id=table_id,
        min_key=records[0][0] if records else b"",
        max_key=records[-1][0] if records else b"",
        count=len(records),
        estimated_size=target.stat().st_size,
    )
    return target, info


def write_range(
    entries: Iterable[Mapping[str, Any]],
    *,
    directory: str | os.PathLike | None = None,
    path: str | os.PathLike | None = None,
    **writer_options: Any,
) -> RangeInfo:
    """Write a lakeFS range (path -> ``catalog.Entry``) and return its metarange record info.

    With ``directory`` (e.g. ``<ns>/_lakefs``) the file is named by its range id, as lakeFS does.
    """
    _, info = _lakefs_table(
        Path(directory) if directory else None,
        Path(path) if path else None,
        (encode_entry(e) for e in entries),
        TABLE_TYPE_RANGES,
        **writer_options,
    )
    return info


def write_metarange(
    ranges: Iterable[RangeInfo],
    *,
    directory: str | os.PathLike | None = None,
    path: str | os.PathLike | None = None,
    **writer_options: Any,
) -> str:
    """Write a lakeFS metarange listing ``ranges``; return its id (the file name in ``directory``)."""
    _, info = _lakefs_table(
        Path(directory) if directory else None,
        Path(path) if path else None,
        (encode_range_data(r) for r in ranges),
        TABLE_TYPE_METARANGES,
        **writer_options,
    )
    return info.range_id


def write_refs_table(
    kind: str,
    records: Iterable[Mapping[str, Any]],
    *,
    directory: str | os.PathLike | None = None,
    path: str | os.PathLike | None = None,
    **writer_options: Any,
) -> RangeInfo:
    """Write a refs-dump range of ``commit``/``branch``/``tag`` records (snapshot-shaped dicts)."""

    def encode(record: Mapping[str, Any]) -> tuple[bytes, bytes]:
        if kind == "commit":
            message: Any = graveler_pb2.CommitData(
                id=record["commit_id"],
                committer=record.get("committer", ""),
                message=record.get("message", ""),
                meta_range_id=record.get("meta_range_id", ""),
                metadata=dict(record.get("metadata") or {}),
                parents=list(record.get("parents") or []),
                version=int(record.get("version", 1)),
                generation=int(record.get("generation", 0)),
            )
            _timestamp(record.get("creation_date", 0), message.creation_date)
            key = record["commit_id"]
        elif kind == "branch":
            message = graveler_pb2.BranchData(
                id=record["branch_id"], commit_id=record["commit_id"], hidden=bool(record.get("hidden"))
            )
            key = record["branch_id"]
        elif kind == "tag":
            message = graveler_pb2.TagData(id=record["tag_id"], commit_id=record["commit_id"])
            key = record["tag_id"]
        else:
            raise ValueError(f"unknown refs table kind {kind!r}")
        data = message.SerializeToString(deterministic=True)
        return key.encode("utf-8"), encode_value(hashlib.sha256(data).digest(), data)

    _, info = _lakefs_table(
        Path(directory) if directory else None,
        Path(path) if path else None,
        (encode(r) for r in records),
        TABLE_TYPE_RANGES,
        **writer_options,
    )
    return info
