"""Decode metaranges and ranges, caching decoded ranges as Parquet keyed by range id.

A range id is the hash of the range's contents, so a decoded range never goes stale: the cache
entry ``<cache>/ranges/<range_id>.parquet`` is written once (to a temporary name, then renamed,
so a crash never leaves a half-written entry that looks valid) and reused by every later extract
of any repository. The cached file already has the snapshot ``ranges`` columns, so the snapshot
can link to it instead of copying rows.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Final

import pyarrow as pa
import pyarrow.parquet as pq

from lakewarden.lakefs.records import decode_metarange_record, decode_range_columns
from lakewarden.snapshot import arrow_schemas
from lakewarden.lakefs.sstable import SSTableReader

__all__ = ["RANGES_SCHEMA", "RangeCache", "read_metarange", "decode_range_table", "normalize_address_type"]

RANGES_SCHEMA: Final = arrow_schemas()["ranges"]


def normalize_address_type(address_type: str, address: str) -> str:
    """The snapshot has only RELATIVE and FULL; resolve lakeFS's deprecated by-prefix type.

    lakeFS resolves ``BY_PREFIX_DEPRECATED`` by the address itself: one with a URI scheme is a
    full address, anything else is relative to the namespace.
    """
    if address_type == "BY_PREFIX_DEPRECATED":
        return "FULL" if "://" in address else "RELATIVE"
    return address_type


def read_metarange(data: bytes, name: str) -> list[str]:
    """Range ids listed by a metarange, in key order."""
    reader = SSTableReader(data, name=name)
    return [decode_metarange_record(k, v)["range_id"] for k, v in reader.iter_records()]


def decode_range_table(range_id: str, data: bytes, name: str) -> pa.Table:
    """A range file as a table with the snapshot ``ranges`` columns."""
    reader = SSTableReader(data, name=name)
    columns = decode_range_columns(reader)
    types = columns["address_type"]
    if "BY_PREFIX_DEPRECATED" in types:
        types = [normalize_address_type(t, a) for t, a in zip(types, columns["address"])]
    n = len(columns["key"])
    return pa.table(
        [
            pa.array([range_id] * n, pa.string()),
            pa.array(columns["key"], pa.string()),
            pa.array(columns["address"], pa.string()),
            pa.array(types, pa.string()),
            pa.array(columns["last_modified_us"], pa.timestamp("us", tz="UTC")),
            pa.array(columns["size"], pa.int64()),
            pa.array(columns["etag"], pa.string()),
        ],
        schema=RANGES_SCHEMA,
    )


class RangeCache:
    """Decoded ranges on disk, one Parquet file per range id."""

    def __init__(self, root: Path) -> None:
        self.root = root / "ranges"
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, range_id: str) -> Path:
        if not range_id or "/" in range_id or range_id.startswith("."):
            raise ValueError(f"not a range id: {range_id!r}")
        return self.root / f"{range_id}.parquet"

    def __contains__(self, range_id: str) -> bool:
        return self.path(range_id).is_file()

    def put(self, range_id: str, table: pa.Table) -> Path:
        target = self.path(range_id)
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        try:
            pq.write_table(table, tmp, compression="zstd")
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        return target
