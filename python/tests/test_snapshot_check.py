"""The snapshot check without Spark: every bad input is one BadInput naming file and field, in
JSON Lines and Parquet alike; JSONL times are read as Spark's ``to_timestamp`` read them; a
snapshot that passed is remembered by fingerprint; Parquet is read in bounded batches, by
statistics where they decide."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakewarden.snapshot import check as snapshot_check
from lakewarden.errors import BadInput
from lakewarden.snapshot import arrow_schemas
from lakewarden.snapshot.check import check_snapshot
from lakewarden.spark_timestamps import spark_timestamp, spark_timestamps

M1, M_EMPTY = "m1", "m-empty"


def _entry(range_id: str, key: str, address: str, address_type: str, modified: str | None, **more: Any) -> dict[str, Any]:
    return {"range_id": range_id, "key": key, "address": address, "address_type": address_type, "last_modified": modified, **more}


def snapshot_rows() -> dict[str, list[dict[str, Any]]]:
    """A small valid history: a root, a commit with two ranges, an empty-tree commit."""
    return {
        "commits": [
            {"commit_id": "c0", "parents": [], "creation_date": "2026-01-01T00:00:00Z", "meta_range_id": "", "version": 1},
            {"commit_id": "c1", "parents": ["c0"], "creation_date": "2026-01-01T10:00:00+02:00", "meta_range_id": M1},
            {"commit_id": "c2", "parents": ["c1"], "creation_date": "2026-01-01T09:30:00.5Z", "meta_range_id": M_EMPTY},
        ],
        "branches": [{"branch_id": "main", "commit_id": "c2"}, {"branch_id": "dev", "commit_id": "c1"}],
        "tags": [{"tag_id": "v1", "commit_id": "c1"}],
        "metaranges": [
            {"meta_range_id": M1, "range_id": "r1"},
            {"meta_range_id": M1, "range_id": "r2"},
            {"meta_range_id": M_EMPTY, "range_id": None},
        ],
        "ranges": [
            _entry("r1", "a", "data/a", "RELATIVE", "2026-01-01T00:00:00Z", size=1),
            _entry("r1", "b", "s3://x/b", "full", "2026-01-01T00:00:00Z", size=2),
            _entry("r2", "c", "data/c", "RELATIVE", None, size=3),
        ],
        "staged": [{"branch_id": "dev", "key": "d", "address": "data/d", "address_type": "RELATIVE"}],
    }


def _as_parquet_value(column: str, value: Any) -> Any:
    if column in ("creation_date", "last_modified") and isinstance(value, str):
        return datetime.fromtimestamp(spark_timestamp(value) / 1e6, timezone.utc)
    return value


def write_snapshot(directory: Path, fmt: str, tables: dict[str, list[dict[str, Any]]] | None = None) -> Path:
    """A snapshot directory in ``fmt`` (jsonl or parquet), its files made old enough to remember."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "repository.json").write_text(
        json.dumps({"repository_id": "repo", "storage_namespace": "s3://bucket/repo", "default_branch": "main"})
    )
    for name, rows in (tables or snapshot_rows()).items():
        if fmt == "jsonl":
            (directory / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
        else:
            schema = arrow_schemas()[name]
            converted = [{c: _as_parquet_value(c, row.get(c)) for c in schema.names} for row in rows]
            pq.write_table(pa.Table.from_pylist(converted, schema=schema), directory / f"{name}.parquet")
    return age(directory)


def age(directory: Path, seconds: float = 3600) -> Path:
    """Set every file's modification time in the past (a memo is never written for fresh files)."""
    past = time.time() - seconds
    for path in directory.rglob("*"):
        os.utime(path, (past, past))
    return directory


@pytest.fixture(params=["jsonl", "parquet"])
def fmt(request: pytest.FixtureRequest) -> str:
    return request.param


def test_valid_snapshot_counts_columns_and_newest_commit(tmp_path: Path, fmt: str) -> None:
    checked = check_snapshot(write_snapshot(tmp_path / "s", fmt), cache_dir=tmp_path / "cache")
    assert checked.row_counts == {"commits": 3, "branches": 2, "tags": 1, "metaranges": 3, "ranges": 3, "staged": 1}
    assert checked.repository.repository_id == "repo"
    assert checked.newest_commit_epoch == datetime(2026, 1, 1, 9, 30, 0, 500000, tzinfo=timezone.utc).timestamp()
    assert checked.tables["ranges"].columns == tuple(arrow_schemas()["ranges"].names)
    expected_branch_columns = ("branch_id", "commit_id", "hidden")
    assert checked.tables["branches"].columns == expected_branch_columns
    for table in checked.tables.values():
        assert table.data.exists()
        assert (table.data == table.source.resolve()) == (fmt == "parquet")


def test_hidden_is_optional_in_parquet(tmp_path: Path) -> None:
    snapshot = write_snapshot(tmp_path / "s", "parquet")
    pq.write_table(pq.read_table(snapshot / "branches.parquet").drop_columns(["hidden"]), snapshot / "branches.parquet")
    checked = check_snapshot(snapshot, cache_dir=tmp_path / "cache")
    assert checked.tables["branches"].columns == ("branch_id", "commit_id")


def test_jsonl_times_are_read_as_spark_read_them(tmp_path: Path) -> None:
    checked = check_snapshot(write_snapshot(tmp_path / "s", "jsonl"), cache_dir=tmp_path / "cache")
    commits = pq.read_table(checked.tables["commits"].data)
    assert commits.schema.field("creation_date").type == pa.timestamp("us", tz="UTC")
    assert commits.column("creation_date").to_pylist() == [
        datetime(2026, 1, 1, 0, 0, tzinfo=timezone.utc),
        datetime(2026, 1, 1, 8, 0, tzinfo=timezone.utc),  # +02:00 honoured
        datetime(2026, 1, 1, 9, 30, 0, 500000, tzinfo=timezone.utc),
    ]
    assert pq.read_table(checked.tables["ranges"].data).column("last_modified").null_count == 1


# Microseconds Spark 4.3's to_timestamp gave for these texts (session time zone UTC, ANSI off).
SPARK_TO_TIMESTAMP = {
    "2026-01-01T10:00:00+02:00": 1767254400000000,
    "2026-01-01T10:00:00Z": 1767261600000000,
    "2026-01-01T10:00:00z": None,
    "2026-01-01T10:00:00.123456789-05:30": 1767281400123456,
    "2026-01-01T10:00:00.1234567Z": 1767261600123456,
    "2026-01-01 10:00:00": 1767261600000000,
    "2026-01-01": 1767225600000000,
    "2026-01": 1767225600000000,
    "2026-01-01T10:00": 1767261600000000,
    "2026-01-01T10:00Z": None,
    "2026-01-01T10:00:00+0200": 1767254400000000,
    "2026-01-01T10:00:00+2": 1767254400000000,
    "2026-01-01T10:00:00 +02:00": 1767254400000000,
    "2026-01-01T10:00:00UTC+01:00": 1767258000000000,
    "2026-01-01T10:00:00GMT-3": 1767272400000000,
    "2026-01-01T10:00:00 Europe/Paris": 1767258000000000,
    "2026-01-01T10:00:00+02:00:30": 1767254370000000,
    "2026-01-01T10:00:00EST": 1767279600000000,
    " 2026-01-01T10:00:00Z ": 1767261600000000,
    "2026-1-2T3:4:5Z": 1767323045000000,
    "2026-02-30T10:00:00Z": None,
    "2026-01-01T24:00:00Z": None,
    "2026-01-01T10:00:00+18:00": 1767196800000000,
    "2026-01-01T10:00:00+19:00": None,
    "1900-01-01T00:00:00+01:00": -2208992400000000,
    "2026-01-01T10:00:00,5Z": None,
    "not a time": None,
    "": None,
}


@pytest.mark.parametrize("text", SPARK_TO_TIMESTAMP)
def test_timestamps_match_spark_to_timestamp(text: str) -> None:
    expected = SPARK_TO_TIMESTAMP[text]
    assert spark_timestamp(text) == expected
    assert spark_timestamps(pa.array([text, "2026-01-01T00:00:00Z"])).cast(pa.int64())[0].as_py() == expected


@pytest.mark.parametrize(
    "texts",
    [
        ["2026-01-01T10:00:00+02:00", None, "2026-01-01T10:00:00.5Z"],  # vectorised, with offsets
        ["2026-01-01 10:00:00", None, "2026-01-01T10:00:00.5"],  # vectorised, none: UTC
        ["2026-01-01T10:00:00+02:00", "2026-02-30T00:00:00Z", "2026-01-01 10:00:00"],  # value by value
    ],
)
def test_batches_agree_with_the_value_by_value_reading(texts: list[str | None]) -> None:
    expected = [spark_timestamp(text) for text in texts]
    assert spark_timestamps(pa.array(texts, pa.string())).cast(pa.int64()).to_pylist() == expected


# -- bad input ---------------------------------------------------------------------------------

Rows = dict[str, list[dict[str, Any]]]


def _edit(name: str, change: Callable[[list[dict[str, Any]]], None]) -> Callable[[Rows], None]:
    def apply(tables: Rows) -> None:
        change(tables[name])

    return apply


BAD_ROWS = [
    ("duplicate-commit", _edit("commits", lambda rows: rows.append(dict(rows[0]))), "commits", "duplicate commit 'c0'"),
    ("missing-parent", _edit("commits", lambda rows: rows[1].update(parents=["feedface"])), "commits", "parent 'feedface'"),
    (
        "branch-missing-commit",
        _edit("branches", lambda rows: rows[0].update(commit_id="gone")),
        "branches",
        "'main' points to commit 'gone', which is not in the snapshot",
    ),
    (
        "tag-missing-commit",
        _edit("tags", lambda rows: rows[0].update(commit_id="gone")),
        "tags",
        "'v1' points to commit 'gone'",
    ),
    ("duplicate-branch", _edit("branches", lambda rows: rows.append(dict(rows[0]))), "branches", "duplicate branch 'main'"),
    (
        "missing-metarange",
        _edit("metaranges", lambda rows: rows.pop()),
        "commits",
        f"commit 'c2' has metarange '{M_EMPTY}', which is not in the snapshot (metaranges)",
    ),
    (
        "missing-range",
        _edit("ranges", lambda rows: rows.pop()),
        "metaranges",
        "metarange 'm1' lists range 'r2', which has no entries in the snapshot (ranges)",
    ),
    (
        "bad-address-type",
        _edit("ranges", lambda rows: rows[2].update(address_type="relativ")),
        "ranges",
        "address_type: 'relativ' is not one of RELATIVE, FULL, BY_PREFIX_DEPRECATED",
    ),
    (
        "staged-bad-address-type",
        _edit("staged", lambda rows: rows[0].update(address_type="SOMEWHERE")),
        "staged",
        "'SOMEWHERE' is not one of RELATIVE, FULL, BY_PREFIX_DEPRECATED",
    ),
    ("null-address", _edit("ranges", lambda rows: rows[1].update(address=None)), "ranges", "address: a row has no address"),
    (
        "null-commit-time",
        _edit("commits", lambda rows: rows[1].update(creation_date=None)),
        "commits",
        "a row has no creation_date",
    ),
    (
        "null-before-address-type",
        _edit("ranges", lambda rows: rows[2].update(address_type="nope", key=None)),
        "ranges",
        "a row has no key",
    ),
]


@pytest.mark.parametrize(("damage", "source", "message"), [case[1:] for case in BAD_ROWS], ids=[case[0] for case in BAD_ROWS])
def test_bad_rows_are_one_bad_input_naming_the_file(tmp_path: Path, fmt: str, damage, source: str, message: str) -> None:
    tables = snapshot_rows()
    damage(tables)
    snapshot = write_snapshot(tmp_path / "s", fmt, tables)
    with pytest.raises(BadInput) as caught:
        check_snapshot(snapshot, cache_dir=tmp_path / "cache")
    text = str(caught.value)
    assert text.startswith(str(snapshot / f"{source}.{fmt}")) and message in text, text
    assert "\n" not in text
    assert not list(tmp_path.glob("cache/validated-*.json")), "a bad snapshot is never remembered"


def test_unparseable_jsonl_time_is_a_missing_time(tmp_path: Path) -> None:
    tables = snapshot_rows()
    tables["commits"][2]["creation_date"] = "yesterday"
    snapshot = write_snapshot(tmp_path / "s", "jsonl", tables)
    with pytest.raises(BadInput, match=r"commits.jsonl: creation_date: a row has no creation_date \(or it is not parseable\)"):
        check_snapshot(snapshot, cache_dir=tmp_path / "cache")


def test_parquet_time_stored_as_text_is_read_as_spark_casts_it(tmp_path: Path) -> None:
    snapshot = write_snapshot(tmp_path / "s", "parquet")
    commits = pq.read_table(snapshot / "commits.parquet")
    index = commits.schema.get_field_index("creation_date")
    texts = pa.array(["2026-01-01T00:00:00Z", "2026-01-01T10:00:00+02:00", "not a time"])
    pq.write_table(commits.set_column(index, "creation_date", texts), snapshot / "commits.parquet")
    with pytest.raises(BadInput, match="a row has no creation_date"):
        check_snapshot(snapshot, cache_dir=None)


def test_missing_table_repository_and_columns(tmp_path: Path) -> None:
    snapshot = write_snapshot(tmp_path / "s", "parquet")
    (snapshot / "staged.parquet").unlink()
    with pytest.raises(BadInput, match="missing table 'staged'"):
        check_snapshot(snapshot, cache_dir=None)
    snapshot = write_snapshot(tmp_path / "t", "parquet")
    (snapshot / "repository.json").write_text("{}")
    with pytest.raises(BadInput, match="repository.json: repository_id"):
        check_snapshot(snapshot, cache_dir=None)
    snapshot = write_snapshot(tmp_path / "u", "parquet")
    pq.write_table(pq.read_table(snapshot / "ranges.parquet").drop_columns(["address", "key"]), snapshot / "ranges.parquet")
    with pytest.raises(BadInput, match=r"ranges.parquet: missing column\(s\) key, address"):
        check_snapshot(snapshot, cache_dir=None)


def test_empty_staged_is_fine_but_an_empty_ranges_table_misses_the_listed_ranges(tmp_path: Path, fmt: str) -> None:
    tables = snapshot_rows()
    tables["staged"] = []
    assert check_snapshot(write_snapshot(tmp_path / "s", fmt, tables), cache_dir=tmp_path / "cache").row_counts["staged"] == 0
    tables["ranges"] = []
    with pytest.raises(BadInput, match="which has no entries in the snapshot"):
        check_snapshot(write_snapshot(tmp_path / "t", fmt, tables), cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("text", ["{not json\n", '{"commit_id": 5}\n', "[1, 2]\n"])
def test_malformed_jsonl_names_the_file_and_leaves_no_conversion(tmp_path: Path, text: str) -> None:
    snapshot = write_snapshot(tmp_path / "s", "jsonl")
    (snapshot / "commits.jsonl").write_text(text)
    with pytest.raises(BadInput, match=r"commits.jsonl: malformed \("):
        check_snapshot(snapshot, cache_dir=tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("commits-*")), "no half conversion may stay"
    assert not list((tmp_path / "cache").glob(".commits-*"))


def test_unreadable_parquet(tmp_path: Path) -> None:
    snapshot = write_snapshot(tmp_path / "s", "parquet")
    (snapshot / "tags.parquet").write_bytes(b"not parquet")
    with pytest.raises(BadInput, match="tags.parquet: unreadable"):
        check_snapshot(snapshot, cache_dir=None)


def test_jsonl_needs_a_cache_dir(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cache directory"):
        check_snapshot(write_snapshot(tmp_path / "s", "jsonl"), cache_dir=None)


# -- the conversion cache and the memo -------------------------------------------------------------


def test_conversion_replaces_an_interrupted_one_and_is_reused(tmp_path: Path) -> None:
    snapshot = write_snapshot(tmp_path / "s", "jsonl")
    cache = tmp_path / "cache"
    first = check_snapshot(snapshot, cache_dir=cache).tables["ranges"].data
    (first / "_SUCCESS").unlink()  # as an older lakewarden killed mid-write would leave it
    (first / "part-00000.parquet").write_bytes(b"half")
    again = check_snapshot(snapshot, cache_dir=cache, revalidate=True).tables["ranges"].data
    assert again == first and (again / "_SUCCESS").exists()
    assert pq.read_table(again).num_rows == 3
    stamp = (again / "part-00000.parquet").stat().st_mtime_ns
    check_snapshot(snapshot, cache_dir=cache, revalidate=True)
    assert (again / "part-00000.parquet").stat().st_mtime_ns == stamp, "a finished conversion is not redone"


def _forbid_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("scanned a snapshot that was validated before")

    monkeypatch.setattr(snapshot_check, "scan_snapshot", fail)


def test_memo_skips_the_scan_until_a_file_changes(tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(snapshot_check.REVALIDATE_ENV, raising=False)
    snapshot = write_snapshot(tmp_path / "s", fmt)
    cache = tmp_path / "cache"
    first = check_snapshot(snapshot, cache_dir=cache)
    assert not first.from_memo and len(list(cache.glob("validated-*.json"))) == 1
    with monkeypatch.context() as patched:
        _forbid_scan(patched)
        remembered = check_snapshot(snapshot, cache_dir=cache)
    assert remembered.from_memo
    assert (remembered.row_counts, remembered.newest_commit_epoch, remembered.tables) == (
        first.row_counts,
        first.newest_commit_epoch,
        first.tables,
    )
    past = time.time() - 100
    os.utime(snapshot / f"ranges.{fmt}", (past, past))  # touched: same bytes, but it must be checked again
    with monkeypatch.context() as patched:
        _forbid_scan(patched)
        with pytest.raises(AssertionError, match="scanned"):
            check_snapshot(snapshot, cache_dir=cache)


def test_memo_is_ignored_when_asked_and_not_written_for_fresh_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = write_snapshot(tmp_path / "s", "parquet")
    cache = tmp_path / "cache"
    check_snapshot(snapshot, cache_dir=cache)
    monkeypatch.setenv(snapshot_check.REVALIDATE_ENV, "1")
    assert not check_snapshot(snapshot, cache_dir=cache).from_memo
    monkeypatch.delenv(snapshot_check.REVALIDATE_ENV)
    assert check_snapshot(snapshot, cache_dir=cache).from_memo

    fresh = tmp_path / "fresh"
    write_snapshot(fresh, "parquet")
    os.utime(fresh / "tags.parquet")  # just written: it may still be being written
    assert not check_snapshot(fresh, cache_dir=cache).from_memo
    assert not check_snapshot(fresh, cache_dir=cache).from_memo


def test_memo_of_a_removed_conversion_is_not_trusted(tmp_path: Path) -> None:
    import shutil

    snapshot = write_snapshot(tmp_path / "s", "jsonl")
    cache = tmp_path / "cache"
    shutil.rmtree(check_snapshot(snapshot, cache_dir=cache).tables["staged"].data)
    checked = check_snapshot(snapshot, cache_dir=cache)
    assert not checked.from_memo and checked.tables["staged"].data.exists()


# -- bounded reading -----------------------------------------------------------------------------


def _ranges_in_row_groups(path: Path, ranges: int, rows_per_range: int) -> None:
    """One row group per range, as lakeFS ranges (and extract) are written."""
    schema = arrow_schemas()["ranges"]
    with pq.ParquetWriter(path, schema) as writer:
        for number in range(ranges):
            rows = [
                {"range_id": f"r{number}", "key": f"k{number}-{i}", "address": f"data/{number}-{i}", "address_type": "RELATIVE"}
                for i in range(rows_per_range)
            ]
            writer.write_table(pa.Table.from_pylist(rows, schema=schema))


def test_many_row_groups_read_by_statistics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tables = snapshot_rows()
    tables["metaranges"] = [{"meta_range_id": M1, "range_id": f"r{n}"} for n in range(5)] + [
        {"meta_range_id": M_EMPTY, "range_id": None}
    ]
    snapshot = write_snapshot(tmp_path / "s", "parquet", tables)
    _ranges_in_row_groups(snapshot / "ranges.parquet", ranges=5, rows_per_range=1000)
    age(snapshot)
    assert pq.ParquetFile(snapshot / "ranges.parquet").metadata.num_row_groups == 5
    read_columns: list[tuple[str, ...]] = []
    original = pq.ParquetFile.iter_batches

    def spy(self: pq.ParquetFile, *args: Any, **kwargs: Any):
        if self.metadata.num_rows == 5000:  # the ranges table
            read_columns.append(tuple(kwargs.get("columns") or ()))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    monkeypatch.setattr(snapshot_check, "BATCH_ROWS", 700)
    checked = check_snapshot(snapshot, cache_dir=None)
    assert checked.row_counts["ranges"] == 5000
    assert read_columns == [], "statistics prove one range id and one address type per row group, and no nulls"

    tables["metaranges"].append({"meta_range_id": M1, "range_id": "r9"})
    snapshot = write_snapshot(tmp_path / "t", "parquet", tables)
    _ranges_in_row_groups(snapshot / "ranges.parquet", ranges=5, rows_per_range=1000)
    with pytest.raises(BadInput, match="lists range 'r9', which has no entries"):
        check_snapshot(snapshot, cache_dir=None)


def test_a_null_deep_in_a_multi_row_group_file_is_found_and_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tables = snapshot_rows()
    tables["metaranges"] = [{"meta_range_id": M1, "range_id": "r0"}, {"meta_range_id": M_EMPTY, "range_id": None}]
    snapshot = write_snapshot(tmp_path / "s", "parquet", tables)
    schema = arrow_schemas()["ranges"]
    rows = [{"range_id": "r0", "key": f"k{i}", "address": f"data/{i}", "address_type": "FULL"} for i in range(3000)]
    rows[2345]["address"] = None
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), snapshot / "ranges.parquet", row_group_size=1000)
    monkeypatch.setattr(snapshot_check, "BATCH_ROWS", 256)
    with pytest.raises(BadInput, match=r"ranges.parquet: address: a row has no address .*'key': 'k2345'"):
        check_snapshot(snapshot, cache_dir=None)


def test_a_folder_of_parquet_files_is_one_table(tmp_path: Path) -> None:
    snapshot = write_snapshot(tmp_path / "s", "parquet")
    table = pq.read_table(snapshot / "ranges.parquet")
    (snapshot / "ranges.parquet").unlink()
    folder = snapshot / "ranges.parquet"
    folder.mkdir()
    pq.write_table(table.slice(0, 2), folder / "part-0.parquet")
    pq.write_table(table.slice(2), folder / "part-1.parquet")
    (folder / "_SUCCESS").touch()
    checked = check_snapshot(snapshot, cache_dir=None)
    assert checked.row_counts["ranges"] == 3 and checked.tables["ranges"].data == folder.resolve()


def test_jsonl_is_converted_in_row_groups_as_a_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tables = snapshot_rows()
    tables["metaranges"] = [{"meta_range_id": M1, "range_id": "r0"}, {"meta_range_id": M_EMPTY, "range_id": None}]
    tables["ranges"] = [_entry("r0", f"k{i}", f"data/{i}", "RELATIVE", "2026-01-01T10:00:00+02:00") for i in range(5000)]
    snapshot = write_snapshot(tmp_path / "s", "jsonl", tables)
    monkeypatch.setattr(snapshot_check, "JSON_BLOCK_BYTES", 64 * 1024)
    monkeypatch.setattr(snapshot_check, "ROW_GROUP_ROWS", 1000)
    checked = check_snapshot(snapshot, cache_dir=tmp_path / "cache")
    converted = pq.ParquetFile(next(checked.tables["ranges"].data.glob("*.parquet")))
    assert converted.metadata.num_rows == 5000 and converted.metadata.num_row_groups >= 4
    assert set(converted.read(columns=["last_modified"]).column(0).to_pylist()) == {datetime(2026, 1, 1, 8, tzinfo=timezone.utc)}


def test_abandoned_temporary_conversions_are_removed(tmp_path: Path) -> None:
    snapshot = write_snapshot(tmp_path / "s", "jsonl")
    cache = tmp_path / "cache"
    converted = check_snapshot(snapshot, cache_dir=cache).tables["tags"].data
    killed, running = cache / f".{converted.name}.killed", cache / f".{converted.name}.running"
    for leftover in (killed, running):
        leftover.mkdir()
        (leftover / "part-00000.parquet").write_bytes(b"half")
    past = time.time() - snapshot_check.ABANDONED_SECONDS - 60
    os.utime(killed, (past, past))
    import shutil

    shutil.rmtree(converted)
    check_snapshot(snapshot, cache_dir=cache)
    assert not killed.exists() and running.exists(), "only a day-old temporary conversion is someone's abandoned one"


def test_a_same_size_rewrite_with_the_old_mtime_is_checked_again(tmp_path: Path) -> None:
    """rsync -t, cp -p: content changed, size and modification time kept; the change time moved."""
    snapshot = write_snapshot(tmp_path / "s", "jsonl")
    cache = tmp_path / "cache"
    check_snapshot(snapshot, cache_dir=cache)
    commits = snapshot / "commits.jsonl"
    before = commits.stat()
    text = commits.read_text()
    time.sleep(0.05)  # past the file system clock's tick (the residual risk the docs name)
    commits.write_text(text.replace('"parents": ["c0"]', '"parents": ["cX"]'))
    os.utime(commits, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert commits.stat().st_size == before.st_size and commits.stat().st_mtime_ns == before.st_mtime_ns
    with pytest.raises(BadInput, match="parent 'cX'"):
        check_snapshot(snapshot, cache_dir=cache)


def test_without_statistics_every_column_is_read(tmp_path: Path) -> None:
    tables = snapshot_rows()
    tables["ranges"][0]["address"] = None
    snapshot = write_snapshot(tmp_path / "s", "parquet", tables)
    schema = arrow_schemas()["ranges"]
    converted = [{c: _as_parquet_value(c, row.get(c)) for c in schema.names} for row in tables["ranges"]]
    pq.write_table(pa.Table.from_pylist(converted, schema=schema), snapshot / "ranges.parquet", write_statistics=False)
    assert pq.ParquetFile(snapshot / "ranges.parquet").metadata.row_group(0).column(2).statistics is None
    with pytest.raises(BadInput, match="a row has no address"):
        check_snapshot(snapshot, cache_dir=None)
