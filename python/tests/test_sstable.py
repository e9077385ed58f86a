"""The SSTable reader and lakeFS record decoding against real lakeFS and pebble tables."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from lakewarden.errors import BadInput
from lakewarden.lakefs.records import (
    RecordError,
    decode_value,
    detect_record_type,
    encode_value,
    iter_decoded,
)
from lakewarden.lakefs.sstable import (
    SSTableError,
    SSTableReader,
    decode_block,
    mask_crc,
    unmask_crc,
)

PEBBLE_TABLES = [
    "h.sst",
    "h.no-compression.sst",
    "h.no-compression.two_level_index.sst",
    "h.block-bloom.no-compression.sst",
    "h.table-bloom.sst",
    "h.table-bloom.no-compression.sst",
    "h.table-bloom.no-compression.prefix_extractor.no_whole_key_filter.sst",
]
LAKEFS_RANGES = ["range.sst", "ok1.sst", "56569996.sst"]
HEX32 = re.compile(r"[0-9a-f]{32}")
ETAG = re.compile(r"[0-9a-f]{32}(-[0-9]+)?")  # multipart uploads end in -PARTS


def expected_words(fixtures: Path) -> dict[bytes, bytes]:
    """h.txt: each line ``COUNT WORD``; the tables map WORD -> decimal COUNT."""
    expected: dict[bytes, bytes] = {}
    for line in (fixtures / "pebble" / "h.txt").read_text().splitlines():
        count, word = line.split()
        expected[word.encode()] = count.encode()
    return expected


def test_every_fixture_is_covered(sstable_fixtures: Path) -> None:
    on_disk = {p.name for p in sstable_fixtures.glob("*/*.sst")}
    assert on_disk == set(PEBBLE_TABLES) | set(LAKEFS_RANGES) | {"metarange.sst"}


@pytest.mark.parametrize("name", PEBBLE_TABLES)
def test_pebble_tables_equal_h_txt(sstable_fixtures: Path, name: str) -> None:
    reader = SSTableReader(sstable_fixtures / "pebble" / name)
    records = reader.records()
    expected = expected_words(sstable_fixtures)
    assert len(expected) == 1710
    assert dict(records) == expected
    keys = [k for k, _ in records]
    assert keys == sorted(expected), "records must come out in key order"


def test_pebble_variants_exercise_the_format(sstable_fixtures: Path) -> None:
    """The fixture set covers Snappy, no compression, filters and a two-level index."""
    props = {n: SSTableReader(sstable_fixtures / "pebble" / n).properties for n in PEBBLE_TABLES}
    assert props["h.sst"]["rocksdb.compression"] == "Snappy"
    assert props["h.no-compression.sst"]["rocksdb.compression"] == "NoCompression"
    assert props["h.no-compression.two_level_index.sst"]["rocksdb.block.based.table.index.type"] == 2
    assert props["h.no-compression.two_level_index.sst"]["rocksdb.index.partitions"] > 1
    assert props["h.sst"]["rocksdb.block.based.table.index.type"] == 0
    assert "fullfilter.rocksdb.BuiltinBloomFilter" in SSTableReader(
        sstable_fixtures / "pebble" / "h.table-bloom.sst"
    ).meta_blocks


@pytest.mark.parametrize("name", LAKEFS_RANGES)
def test_lakefs_ranges_decode_to_sensible_entries(sstable_fixtures: Path, name: str) -> None:
    reader = SSTableReader(sstable_fixtures / "lakefs" / name)
    assert reader.table_type == "ranges"
    assert detect_record_type(reader) == "range"
    entries = list(iter_decoded(reader))
    assert len(entries) == int(reader.properties["count"]) == reader.num_entries
    # ok1.sst (written by an old lakeFS) has a garbage min_key property that still sorts first.
    assert reader.raw_properties["min_key"] <= entries[0]["key"].encode()
    assert entries[-1]["key"] == reader.properties["max_key"]
    keys = [e["key"] for e in entries]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    for entry in entries:
        assert entry["size"] >= 0
        assert ETAG.fullmatch(entry["etag"]), entry
        assert re.fullmatch(r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00", entry["last_modified"])
        if entry["address_type"] == "FULL":
            assert entry["address"].startswith("s3://"), entry
        else:
            assert entry["address_type"] in ("RELATIVE", "BY_PREFIX_DEPRECATED")
            assert HEX32.fullmatch(entry["address"]), entry


def test_small_range_exact_contents(sstable_fixtures: Path) -> None:
    entries = list(iter_decoded(SSTableReader(sstable_fixtures / "lakefs" / "range.sst")))
    assert [(e["key"], e["size"], e["address_type"]) for e in entries] == [
        ("a/b/c/no", 11, "RELATIVE"),
        ("a/b/c/yes", 4, "RELATIVE"),
    ]
    assert entries[0]["address"] == "b0c968736d8f42a2b1c6284835f08226"
    assert entries[0]["etag"] == "664c688b4ea9c56730daacfc3d70aeed"
    assert entries[0]["last_modified"] == "2021-08-05T11:39:44.471124+00:00"
    assert entries[0]["metadata"] == {} and entries[0]["content_type"] == ""


def test_production_range(sstable_fixtures: Path) -> None:
    """56569996.sst: Snappy blocks behind a two-level index, mixed FULL/RELATIVE addresses."""
    reader = SSTableReader(sstable_fixtures / "lakefs" / "56569996.sst")
    assert reader.properties["rocksdb.block.based.table.index.type"] == 2
    assert reader.properties["rocksdb.num.data.blocks"] == len(reader.data_block_handles()) == 1306
    entries = list(iter_decoded(reader))
    assert len(entries) == 13868
    types = {e["address_type"] for e in entries}
    assert types == {"FULL", "RELATIVE"}
    assert sum(e["size"] for e in entries) > 10**9
    assert entries[-1] == {
        "key": "phishing-domains/domains.csv",
        "address": "7f1283fbf81f4e588586d6017370ac13",
        "address_type": "RELATIVE",
        "last_modified": "2022-06-30T17:22:11.455469+00:00",
        "size": 1518443,
        "etag": "d3097afadf595ca253573a63af86fcd0",
        "metadata": {},
        "content_type": "text/csv",
    }


def test_metarange_describes_the_range_fixture(sstable_fixtures: Path) -> None:
    """The metarange's key is the range's max key; its identity is the range id (hex text)."""
    reader = SSTableReader(sstable_fixtures / "lakefs" / "metarange.sst")
    assert reader.table_type == "metaranges"
    records = list(iter_decoded(reader))
    assert len(records) == int(reader.properties["count"]) == 1
    (record,) = records
    assert re.fullmatch(r"[0-9a-f]{64}", record["range_id"])
    assert record["key"] == record["max_key"] == "a/b/c/yes"
    assert record["min_key"] == "a/b/c/no"
    # It describes range.sst exactly (same bounds and count).
    described = SSTableReader(sstable_fixtures / "lakefs" / "range.sst")
    assert record["count"] == int(described.properties["count"]) == 2
    assert record["estimated_size"] > 0


def test_value_framing_round_trip() -> None:
    for identity, data in [(b"", b""), (b"x" * 32, b"y" * 200), (b"i" * 70, b"d" * 70000)]:
        assert decode_value(encode_value(identity, data)) == (identity, data)
    # One-byte zig-zag lengths: 32 -> 0x40 (as in every fixture value).
    assert encode_value(b"a" * 32, b"")[:1] == b"\x40"
    with pytest.raises(RecordError):
        decode_value(b"\x40abc")  # identity runs past the end
    with pytest.raises(RecordError):
        decode_value(b"\x01\x00")  # negative length


def test_crc_mask_round_trip() -> None:
    for crc in (0, 1, 0xDEADBEEF, 0xFFFFFFFF):
        assert unmask_crc(mask_crc(crc)) == crc
    assert mask_crc(0) == 0xA282EAD8


def test_decode_block_prefix_compression() -> None:
    # Two entries: "apple"->"1" (restart) then "apply"->"22" sharing 4 bytes.
    block = b"\x00\x05\x01apple1" + b"\x04\x01\x02y22" + struct.pack("<II", 0, 1)
    assert decode_block(block) == ([b"apple", b"apply"], [b"1", b"22"])
    with pytest.raises(ValueError):
        decode_block(b"\x00\x05\x09apple1" + struct.pack("<II", 0, 1))  # value overruns


# -- corrupt input --------------------------------------------------------------------------


def _bytes(sstable_fixtures: Path, name: str = "lakefs/range.sst") -> bytearray:
    return bytearray((sstable_fixtures / name).read_bytes())


def test_error_is_bad_input() -> None:
    assert issubclass(SSTableError, BadInput)


def test_truncated_file(sstable_fixtures: Path) -> None:
    with pytest.raises(SSTableError, match="truncated"):
        SSTableReader(bytes(_bytes(sstable_fixtures)[:20]))
    with pytest.raises(SSTableError, match="bad magic"):
        SSTableReader(bytes(_bytes(sstable_fixtures)[:-7]))
    # Footer intact but the blocks it points at are gone.
    data = _bytes(sstable_fixtures)
    with pytest.raises(SSTableError, match="truncated: metaindex block .* runs past end of file"):
        SSTableReader(bytes(data[-53:]))


def test_bad_magic(sstable_fixtures: Path, tmp_path: Path) -> None:
    data = _bytes(sstable_fixtures)
    data[-1] ^= 0xFF
    path = tmp_path / "bad.sst"
    path.write_bytes(bytes(data))
    with pytest.raises(SSTableError, match=r"bad magic .*not an SSTable") as info:
        SSTableReader(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_flipped_byte_in_data_block_fails_checksum(sstable_fixtures: Path) -> None:
    data = _bytes(sstable_fixtures)
    data[40] ^= 0x01  # inside the (uncompressed) data block at offset 0
    reader = SSTableReader(bytes(data))  # footer, metaindex and properties are still fine
    with pytest.raises(SSTableError, match=r"checksum mismatch in data block at offset 0"):
        reader.records()
    # Without verification the damage is visible as a different value, not an error.
    damaged = SSTableReader(bytes(data), verify_checksums=False).records()
    assert damaged != SSTableReader(bytes(_bytes(sstable_fixtures))).records()


def test_flipped_byte_in_snappy_block_fails_checksum(sstable_fixtures: Path) -> None:
    data = _bytes(sstable_fixtures, "lakefs/56569996.sst")
    data[1000] ^= 0x80
    with pytest.raises(SSTableError, match="checksum mismatch"):
        SSTableReader(bytes(data)).records()


def test_flipped_byte_in_properties_fails_at_open(sstable_fixtures: Path) -> None:
    reader = SSTableReader(bytes(_bytes(sstable_fixtures)))
    props = reader.meta_blocks["rocksdb.properties"]
    data = _bytes(sstable_fixtures)
    data[props.offset + 3] ^= 0x10
    with pytest.raises(SSTableError, match="checksum mismatch in properties block"):
        SSTableReader(bytes(data))


def test_unsupported_compression(sstable_fixtures: Path) -> None:
    data = _bytes(sstable_fixtures)
    handle = SSTableReader(bytes(data)).data_block_handles()[0]
    end = handle.offset + handle.size
    data[end] = 7  # zstd
    import google_crc32c

    crc = mask_crc(google_crc32c.value(bytes(data[handle.offset : end + 1])))
    data[end + 1 : end + 5] = struct.pack("<I", crc)
    with pytest.raises(SSTableError, match=r"unsupported compression type 7 \(zstd\)"):
        SSTableReader(bytes(data)).records()


def test_unsupported_format_version(sstable_fixtures: Path) -> None:
    data = _bytes(sstable_fixtures)
    data[-12:-8] = struct.pack("<I", 6)
    with pytest.raises(SSTableError, match="unsupported table format version 6"):
        SSTableReader(bytes(data))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SSTableError, match="no such file"):
        SSTableReader(tmp_path / "absent.sst")


def test_wrong_record_type_is_a_clear_error(sstable_fixtures: Path) -> None:
    reader = SSTableReader(sstable_fixtures / "pebble" / "h.sst")
    with pytest.raises(RecordError, match="not a lakeFS value|not a valid"):
        list(iter_decoded(reader, "range"))


@pytest.mark.parametrize("name", LAKEFS_RANGES)
def test_columnar_decoding_matches_record_decoding(sstable_fixtures: Path, name: str) -> None:
    from datetime import datetime, timezone

    from lakewarden.lakefs.records import RANGE_COLUMNS, decode_range_columns

    reader = SSTableReader(sstable_fixtures / "lakefs" / name)
    columns = decode_range_columns(reader)
    assert tuple(columns) == RANGE_COLUMNS
    rows = list(iter_decoded(reader))
    assert columns["key"] == [r["key"] for r in rows]
    assert columns["address"] == [r["address"] for r in rows]
    assert columns["address_type"] == [r["address_type"] for r in rows]
    assert columns["size"] == [r["size"] for r in rows]
    assert columns["etag"] == [r["etag"] for r in rows]
    as_text = [
        datetime.fromtimestamp(us // 1_000_000, tz=timezone.utc).replace(microsecond=us % 1_000_000).isoformat()
        for us in columns["last_modified_us"]
    ]
    assert as_text == [r["last_modified"] for r in rows]


def test_columnar_decoding_of_non_range_is_a_clear_error(sstable_fixtures: Path) -> None:
    from lakewarden.lakefs.records import decode_range_columns

    with pytest.raises(RecordError, match="h.sst"):
        decode_range_columns(SSTableReader(sstable_fixtures / "pebble" / "h.sst"))
