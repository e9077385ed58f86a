"""The SSTable writer round-trips through the reader and writes what lakeFS writes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from lakewarden.lakefs.proto import catalog_pb2
from lakewarden.lakefs.records import decode_value, iter_decoded
from lakewarden.lakefs.sstable import SSTableReader
from sstable_writer import (
    RangeInfo,
    SSTableWriter,
    encode_entry,
    write_metarange,
    write_range,
    write_refs_table,
)


def _entries(n: int, prefix: str = "data/") -> list[dict]:
    return [
        {
            "key": f"{prefix}part-{i:06d}.parquet",
            "address": f"{i:032x}" if i % 3 else f"s3://bucket/imported/{i}",
            "address_type": "RELATIVE" if i % 3 else "FULL",
            "last_modified": f"2024-03-{1 + i % 28:02d}T10:20:30.{1 + i % 999999:06d}+00:00",
            "size": i * 7,
            "etag": f"{i:032x}",
            "metadata": {"user": "x"} if i % 5 == 0 else {},
            "content_type": "application/octet-stream",
        }
        for i in range(n)
    ]


@pytest.mark.parametrize(
    "options",
    [
        {"compression": "snappy"},
        {"compression": "none"},
        {"compression": "snappy", "block_size": 512, "index_block_size": 128},
        {"compression": "none", "block_size": 256, "restart_interval": 1},
    ],
    ids=["snappy", "none", "two-level", "restart-1"],
)
def test_round_trip_raw_records(tmp_path: Path, options: dict) -> None:
    records = [(f"key/{i:05d}".encode() + bytes([i % 256]), bytes(range(i % 50)) * 3) for i in range(2500)]
    path = tmp_path / "t.sst"
    with SSTableWriter(path, **options, user_properties={"note": "hello"}) as writer:
        for key, value in records:
            writer.add(key, value)
    reader = SSTableReader(path)
    assert reader.records() == records
    assert reader.num_entries == 2500
    assert reader.properties["note"] == "hello"
    assert reader.properties["rocksdb.num.data.blocks"] == len(reader.data_block_handles())
    if "index_block_size" in options:
        assert reader.properties["rocksdb.block.based.table.index.type"] == 2
        assert reader.properties["rocksdb.index.partitions"] > 1
    expected_compression = "Snappy" if options["compression"] == "snappy" else "NoCompression"
    assert reader.properties["rocksdb.compression"] == expected_compression


def test_empty_table_round_trips() -> None:
    buf = io.BytesIO()
    SSTableWriter(buf).close()
    reader = SSTableReader(buf.getvalue())
    assert reader.records() == [] and reader.num_entries == 0


def test_keys_must_increase(tmp_path: Path) -> None:
    writer = SSTableWriter(tmp_path / "t.sst")
    writer.add(b"b", b"1")
    with pytest.raises(ValueError, match="strictly increasing"):
        writer.add(b"a", b"2")
    with pytest.raises(ValueError):
        writer.add(b"b", b"3")


def test_range_and_metarange_round_trip(tmp_path: Path) -> None:
    lakefs_dir = tmp_path / "_lakefs"
    first = write_range(_entries(3000), directory=lakefs_dir, block_size=1024, index_block_size=256)
    second = write_range(_entries(10, prefix="zz/"), directory=lakefs_dir)
    metarange_id = write_metarange([first, second], directory=lakefs_dir)

    reader = SSTableReader(lakefs_dir / first.range_id)
    decoded = list(iter_decoded(reader))
    assert decoded == _entries(3000)
    assert first.count == 3000 and first.min_key == b"data/part-000000.parquet"

    ranges = list(iter_decoded(SSTableReader(lakefs_dir / metarange_id)))
    assert [r["range_id"] for r in ranges] == [first.range_id, second.range_id]
    assert ranges[0]["count"] == 3000 and ranges[1]["count"] == 10
    assert ranges[0]["key"] == ranges[0]["max_key"] == "data/part-002999.parquet"
    assert ranges[1]["min_key"] == "zz/part-000000.parquet"
    assert ranges[0]["estimated_size"] == (lakefs_dir / first.range_id).stat().st_size


def test_range_ids_are_content_addressed(tmp_path: Path) -> None:
    a = write_range(_entries(5), directory=tmp_path / "a")
    b = write_range(_entries(5), directory=tmp_path / "b")
    c = write_range(_entries(6), directory=tmp_path / "c")
    assert a.range_id == b.range_id != c.range_id
    assert (tmp_path / "a" / a.range_id).read_bytes() == (tmp_path / "b" / b.range_id).read_bytes()


def test_written_tables_look_like_lakefs_ones(sstable_fixtures: Path, tmp_path: Path) -> None:
    """Same property names and value encodings as the real lakeFS fixtures."""
    real_range = SSTableReader(sstable_fixtures / "lakefs" / "range.sst")
    real_meta = SSTableReader(sstable_fixtures / "lakefs" / "metarange.sst")
    info = write_range(list(iter_decoded(real_range)), directory=tmp_path)
    ours = SSTableReader(tmp_path / info.range_id)
    assert set(ours.properties) == set(real_range.properties)
    for name in ("type", "count", "min_key", "max_key", "rocksdb.comparator", "rocksdb.compression",
                 "rocksdb.num.entries", "rocksdb.merge.operator", "rocksdb.property.collectors",
                 "rocksdb.block.based.table.index.type", "rocksdb.column.family.id"):
        assert ours.raw_properties[name] == real_range.raw_properties[name], name
    assert ours.footer == type(ours.footer)(2, 1, ours.footer.metaindex, ours.footer.index)
    assert real_range.footer.format_version == 2 and real_range.footer.checksum_type == 1

    # Same protobuf bytes for the same entry: re-encoding a real record gives the real data
    # (up to the timestamp, which decoding keeps to microseconds like Python's datetime).
    for (key, value), entry in zip(real_range.records(), iter_decoded(real_range)):
        new_key, new_value = encode_entry(entry)
        assert new_key == key
        real_entry = catalog_pb2.Entry.FromString(decode_value(value)[1])
        real_entry.last_modified.nanos -= real_entry.last_modified.nanos % 1000
        assert decode_value(new_value)[1] == real_entry.SerializeToString(deterministic=True)

    meta_id = write_metarange([info], directory=tmp_path)
    ours_meta = SSTableReader(tmp_path / meta_id)
    assert set(ours_meta.properties) == set(real_meta.properties)
    assert ours_meta.properties["type"] == real_meta.properties["type"] == "metaranges"
    (real_record,) = iter_decoded(real_meta)
    (our_record,) = iter_decoded(ours_meta)
    assert {k: v for k, v in our_record.items() if k not in ("range_id", "estimated_size")} == {
        k: v for k, v in real_record.items() if k not in ("range_id", "estimated_size")
    }


def test_uncompressed_data_block_is_byte_identical_to_pebble(sstable_fixtures: Path) -> None:
    """range.sst's data block is stored uncompressed; our writer lays it out identically."""
    real = SSTableReader(sstable_fixtures / "lakefs" / "range.sst")
    (handle,) = real.data_block_handles()
    buf = io.BytesIO()
    with SSTableWriter(buf, compression="snappy") as writer:
        for key, value in real.records():
            writer.add(key, value)
    ours = SSTableReader(buf.getvalue())
    (our_handle,) = ours.data_block_handles()
    assert ours.read_block(our_handle) == real.read_block(handle)
    raw = (sstable_fixtures / "lakefs" / "range.sst").read_bytes()
    assert buf.getvalue()[: handle.size + 5] == raw[: handle.size + 5]  # incl. type + CRC


def test_refs_tables_round_trip(tmp_path: Path) -> None:
    commits = [
        {"commit_id": "c2", "parents": ["c1"], "creation_date": "2024-01-02T00:00:00+00:00",
         "meta_range_id": "m2", "committer": "ann", "message": "second", "version": 1,
         "generation": 2, "metadata": {"k": "v"}},
        {"commit_id": "c1", "parents": [], "creation_date": "2024-01-01T00:00:00+00:00",
         "meta_range_id": "m1", "committer": "bob", "message": "first", "version": 1,
         "generation": 1, "metadata": {}},
    ]
    info = write_refs_table("commit", commits, directory=tmp_path)
    decoded = list(iter_decoded(SSTableReader(tmp_path / info.range_id), "commit"))
    assert decoded == sorted(commits, key=lambda c: c["commit_id"])
    branches = write_refs_table("branch", [{"branch_id": "main", "commit_id": "c2"}], directory=tmp_path)
    assert list(iter_decoded(SSTableReader(tmp_path / branches.range_id), "branch")) == [
        {"branch_id": "main", "commit_id": "c2", "hidden": False}
    ]
    tags = write_refs_table("tag", [{"tag_id": "v1", "commit_id": "c1"}], directory=tmp_path)
    assert list(iter_decoded(SSTableReader(tmp_path / tags.range_id), "tag")) == [
        {"tag_id": "v1", "commit_id": "c1"}
    ]
    assert isinstance(info, RangeInfo) and info.count == 2
