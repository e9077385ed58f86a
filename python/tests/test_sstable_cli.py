"""``lakewarden sstable cat`` (docs/contract.md §5) through the real CLI entry point."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from lakewarden.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict], str]:
    code = main(["sstable", "cat", *argv])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_cat_range_auto(sstable_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, rows, err = run(capsys, str(sstable_fixtures / "lakefs" / "range.sst"))
    assert code == 0 and err == ""
    assert [r["key"] for r in rows] == ["a/b/c/no", "a/b/c/yes"]
    assert rows[1] == {
        "key": "a/b/c/yes",
        "address": "fdf87fcf9ec849f98514ddb7e041ad56",
        "address_type": "RELATIVE",
        "last_modified": "2021-08-05T11:39:33.589644+00:00",
        "size": 4,
        "etag": "eb4585ad9fe0426781ed7c49252f8225",
        "metadata": {},
        "content_type": "",
    }


def test_cat_metarange_auto(sstable_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, rows, _ = run(capsys, str(sstable_fixtures / "lakefs" / "metarange.sst"))
    assert code == 0
    assert rows == [
        {
            "key": "a/b/c/yes",
            "range_id": "a83af763ba098c15369d9d6d723731eb9ce18b8dfac4f88c6f1287e772393d0e",
            "min_key": "a/b/c/no",
            "max_key": "a/b/c/yes",
            "count": 2,
            "estimated_size": 1190,
        }
    ]


def test_cat_pebble_table_is_raw_text(sstable_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, rows, _ = run(capsys, str(sstable_fixtures / "pebble" / "h.table-bloom.sst"))
    assert code == 0
    expected = [line.split() for line in (sstable_fixtures / "pebble" / "h.txt").read_text().splitlines()]
    assert rows == [{"key": word, "value": count} for count, word in expected]


def test_cat_raw_binary_values_are_base64(sstable_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = sstable_fixtures / "lakefs" / "range.sst"
    code, rows, _ = run(capsys, "--type", "raw", str(path))
    assert code == 0
    assert [set(r) for r in rows] == [{"key", "value_b64"}] * 2
    value = base64.b64decode(rows[0]["value_b64"])
    assert value[:1] == b"\x40" and b"b0c968736d8f42a2b1c6284835f08226" in value


def test_cat_forced_type_on_wrong_table_exits_2(sstable_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, rows, err = run(capsys, "--type", "metarange", str(sstable_fixtures / "pebble" / "h.sst"))
    assert code == 2 and rows == []
    assert err.count("\n") == 1 and "h.sst" in err


def test_cat_properties(sstable_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, rows, _ = run(capsys, "--properties", str(sstable_fixtures / "lakefs" / "56569996.sst"))
    assert code == 0 and len(rows) == 1
    props = rows[0]
    assert props["type"] == "ranges"
    assert props["count"] == "13868"
    assert props["rocksdb.num.entries"] == 13868
    assert props["rocksdb.compression"] == "Snappy"
    assert props["max_key"] == "phishing-domains/domains.csv"


def test_cat_properties_binary_value_is_base64(sstable_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, rows, _ = run(capsys, "--properties", str(sstable_fixtures / "lakefs" / "ok1.sst"))
    assert code == 0
    assert base64.b64decode(rows[0]["min_key"]["base64"]) == b"+@\xb3l\xa8"


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda b: b[:30], "truncated"),
        (lambda b: b[:-1] + b"\x00", "bad magic"),
        (lambda b: b[:40] + bytes([b[40] ^ 1]) + b[41:], "checksum mismatch"),
    ],
    ids=["truncated", "bad-magic", "flipped-byte"],
)
def test_cat_corrupt_file_exits_2(
    sstable_fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage, reason: str
) -> None:
    path = tmp_path / "corrupt.sst"
    path.write_bytes(damage((sstable_fixtures / "lakefs" / "range.sst").read_bytes()))
    code, rows, err = run(capsys, str(path))
    assert code == 2
    assert rows == []
    assert err.startswith("lakewarden: ") and err.count("\n") == 1
    assert reason in err and str(path) in err


def test_cat_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(tmp_path / "nope.sst"))
    assert code == 2 and "no such file" in err
