"""An optimized uncommitted run's cut of a Parquet inventory report, made in the driver with
Arrow (lakewarden.inventories.cut), keeps exactly the rows Spark's cut keeps
(lakewarden.inventory.keep_considered): random S3, Azure and GCS Parquet reports, every time
type the cut reads (milliseconds, microseconds, with and without a zone, epoch milliseconds),
unknown times, keys Spark compares byte for byte, previous keys under other roots and
repeated, cutoffs on and between milliseconds. Where it cannot read a report as Spark does
(nanoseconds, times as text, files of different schemas, too many previous keys, CSV) it
declines and Spark cuts: the same rows again."""

from __future__ import annotations

import json
import logging
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakewarden.inventories import cut as cut_module
from lakewarden.inventories.common import read_cloud_inventory
from lakewarden.inventory import Considered, read_inventory
from test_inventory import write_inventory

# on the session of scripts/test.sh's second pytest process (conftest.py): with the benchmark
# smoke test's two JVMs gone from it, that process was the shorter of the two
pytestmark = [pytest.mark.spark, pytest.mark.second_process]

BUCKET = "source-bucket"
NS = f"s3://{BUCKET}/repo/ns"
T0 = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
CREATED = T0 + timedelta(days=3)
#: the cut's log. Its records are read with getMessage(): a record's ``message`` exists only once
#: a formatter set it, and in one order of the suite (another test first in the same process)
#: pytest's capture handler carried pyspark's JSON formatter, which sets none: ten of these
#: tests failed on ``record.message`` while the log said what they looked for
CUT_LOG = "lakewarden.inventories.cut"


def _previous(spark: Any, directory: Path, addresses: list[str | None]) -> Considered:
    """The previous run's uncommitted inventory (physical_address, size, last_modified) as the
    run writes it, and the Considered over it (without its location: the cut Spark makes)."""
    directory.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            "physical_address": pa.array(addresses, pa.string()),
            "size": pa.array([1] * len(addresses), pa.int64()),
            "last_modified": pa.array([T0] * len(addresses), pa.timestamp("us", tz="UTC")),
        }
    )
    pq.write_table(table, directory / "part-00000.parquet")
    (directory / "_SUCCESS").write_text("")
    previous = spark.read.parquet(str(directory)).select("physical_address")
    return Considered(cutoff=T0, previous=previous)


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((r.physical_address, r.size, r.last_modified) for r in df.collect())


def _both(read: Any, considered: Considered, location: Path, cutoff: datetime) -> tuple[list[Any], list[Any]]:
    """The rows with the cut in the driver, and with the cut in Spark."""
    from dataclasses import replace

    spark_cut = replace(considered, cutoff=cutoff)
    driver_cut = replace(spark_cut, previous_location=location)
    return _rows(read(driver_cut)), _rows(read(spark_cut))


def _random_keys(rng: random.Random, n: int) -> list[str]:
    alphabet = ["a", "b", "/", "ü", " ", "+", "%2F", "_", ".", "x9", "日"]
    return [f"repo/ns/data/{''.join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))}-{i}" for i in range(n)]


TIME_TYPES = {
    "ms-utc": pa.timestamp("ms", tz="UTC"),
    "us-utc": pa.timestamp("us", tz="UTC"),
    "ms-naive": pa.timestamp("ms"),
    "us-offset": pa.timestamp("us", tz="+02:00"),
    "epoch-ms": pa.int64(),
}


def _times(kind: pa.DataType, moments: list[datetime | None]) -> pa.Array:
    if pa.types.is_integer(kind):
        return pa.array([None if m is None else (m - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1) for m in moments], kind)
    if kind.tz is None:
        return pa.array([None if m is None else m.replace(tzinfo=None) for m in moments], kind)
    return pa.array(moments, kind)


def _s3_parquet(root: Path, keys: list[str | None], moments: list[datetime | None], kind: pa.DataType, parts: int) -> Path:
    """An S3 Parquet report whose last_modified_date column has Arrow type ``kind``; some rows
    not the latest version or a delete marker, and columns the reader never reads (the cut
    leaves those out)."""
    manifest = write_inventory(root, "Parquet", [("repo/ns/placeholder", 1, 0, True, False)], parts=1, created=CREATED)
    data = json.loads(manifest.read_text())
    data_dir = root / BUCKET / "inv-config" / "data"
    for old in data_dir.iterdir():
        old.unlink()
    files = []
    for part in range(parts):
        chunk = list(range(part, len(keys), parts))
        table = pa.table(
            {
                "bucket": pa.array([BUCKET] * len(chunk), pa.string()),
                "key": pa.array([keys[i] for i in chunk], pa.string()),
                "version_id": pa.array([f"v{i}" for i in chunk], pa.string()),
                "is_latest": pa.array([i % 7 != 3 for i in chunk]),
                "is_delete_marker": pa.array([i % 11 == 5 for i in chunk]),
                "size": pa.array([i for i in chunk], pa.int64()),
                "last_modified_date": _times(kind, [moments[i] for i in chunk]),
                "e_tag": pa.array([f"etag-{i}" for i in chunk], pa.string()),
                "storage_class": pa.array(["STANDARD"] * len(chunk), pa.string()),
            }
        )
        path = data_dir / f"part-{part}.parquet"
        pq.write_table(table, path)
        import hashlib

        body = path.read_bytes()
        files.append({"key": str(path.relative_to(root)), "size": len(body), "MD5checksum": hashlib.md5(body).hexdigest()})
    data["files"] = files
    body = json.dumps(data).encode()
    manifest.write_bytes(body)
    import hashlib

    (manifest.parent / "manifest.checksum").write_text(hashlib.md5(body).hexdigest() + "\n")
    return manifest


@pytest.mark.parametrize("kind_name", sorted(TIME_TYPES))
def test_random_s3_parquet_reports_cut_in_the_driver_keep_what_spark_keeps(spark: Any, tmp_path: Path, kind_name: str, caplog: Any) -> None:
    rng = random.Random(kind_name)
    kind = TIME_TYPES[kind_name]
    for example in range(2):
        root = tmp_path / f"r{example}"
        keys: list[str | None] = list(_random_keys(rng, rng.randint(20, 60)))
        keys += [None] if example % 2 else []
        moments: list[datetime | None] = [
            None if rng.random() < 0.1 else T0 + timedelta(milliseconds=rng.randint(-5, 5) + rng.choice([0, 0, 60_000])) for _ in keys
        ]
        # the previous inventory: some of the report's objects, some gone, some under other roots
        listed = [k for k in keys if k is not None]
        previous: list[str | None] = [f"s3://{BUCKET}/{k}" for k in rng.sample(listed, k=len(listed) // 3)]
        previous += [f"s3://{BUCKET}/repo/ns/data/gone-{i}" for i in range(3)]
        previous += [f"s3://other-bucket/{listed[0]}", f"s3a://{BUCKET}/{listed[-1]}", None]
        previous += previous[:2]  # a repeated address keeps no row twice
        considered = _previous(spark, tmp_path / f"prev{example}", previous)
        manifest = _s3_parquet(root, keys, moments, kind, parts=rng.randint(1, 3))
        # cutoffs on a row's millisecond, a microsecond past it, and between rows
        cutoffs = (T0, T0 + timedelta(microseconds=1)) if example == 0 else (T0 + timedelta(microseconds=999), T0 - timedelta(milliseconds=3))
        for cutoff in cutoffs:
            with caplog.at_level(logging.INFO, logger=CUT_LOG):
                caplog.clear()
                in_driver, in_spark = _both(
                    lambda c, m=manifest: read_inventory(spark, str(m), NS, considered=c), considered, tmp_path / f"prev{example}", cutoff
                )
            assert any("cut in the driver" in record.getMessage() for record in caplog.records), caplog.text
            assert in_driver == in_spark and in_spark, (kind_name, example, cutoff)


def test_azure_and_gcs_parquet_reports_cut_in_the_driver_keep_what_spark_keeps(spark: Any, tmp_path: Path, caplog: Any) -> None:
    from test_inventories import _azure, _gcs

    rng = random.Random(7)
    names = _random_keys(rng, 40)
    moments = [T0 + timedelta(milliseconds=rng.randint(-3, 3)) for _ in names]

    azure_rows = [
        {"Name": f"container/{name}", "Content-Length": 5, "Last-Modified": moment, "Deleted": "false", "Snapshot": "", "IsCurrentVersion": "true"}
        for name, moment in zip(names, moments)
    ]
    azure_dir = tmp_path / "azure"
    azure_dir.mkdir()
    azure = _azure(azure_dir, "parquet", azure_rows)
    azure_root = "https://acct.blob.core.windows.net/"
    gcs_rows = [{"project": "p", "bucket": "bucket", "name": name, "size": 5, "updated": moment} for name, moment in zip(names, moments)]
    gcs_dir = tmp_path / "gcs"
    gcs_dir.mkdir()
    gcs = _gcs(gcs_dir, "parquet", gcs_rows)
    for label, manifest, namespace, root in (
        ("azure", azure, "https://acct.blob.core.windows.net/container/repo/ns", f"{azure_root}container/"),
        ("gcs", gcs, "gs://bucket/repo/ns", "gs://bucket/"),
    ):
        previous = [f"{root}{name}" for name in rng.sample(names, 12)]
        location = tmp_path / f"prev-{label}"
        considered = _previous(spark, location, previous)
        for cutoff in (T0, T0 + timedelta(microseconds=500)):
            with caplog.at_level(logging.INFO, logger=CUT_LOG):
                caplog.clear()
                in_driver, in_spark = _both(
                    lambda c, m=manifest, ns=namespace: read_cloud_inventory(spark, str(m), ns, considered=c), considered, location, cutoff
                )
            assert any("cut in the driver" in record.getMessage() for record in caplog.records), (label, caplog.text)
            assert in_driver == in_spark and in_spark, (label, cutoff)


@pytest.mark.parametrize("case", ["nanoseconds", "time-as-text", "different-schemas", "too-many-previous-keys"])
def test_a_report_the_driver_cannot_read_as_spark_does_is_cut_in_spark(spark: Any, tmp_path: Path, case: str, caplog: Any, monkeypatch: Any) -> None:
    rng = random.Random(case)
    keys: list[str | None] = list(_random_keys(rng, 30))
    moments: list[datetime | None] = [T0 + timedelta(milliseconds=rng.randint(-3, 3)) for _ in keys]
    kind: pa.DataType = pa.timestamp("ms", tz="UTC")
    if case == "nanoseconds":
        kind = pa.timestamp("ns", tz="UTC")
    manifest = _s3_parquet(tmp_path / "report", keys, moments, kind, parts=2)
    data_dir = tmp_path / "report" / BUCKET / "inv-config" / "data"
    if case in ("time-as-text", "different-schemas"):
        # rewrite one data file (and the manifest's size and MD5 of it) with another schema
        import hashlib

        first = sorted(data_dir.iterdir())[0]
        table = pq.read_table(first)
        column = pa.array([None if m is None else m.isoformat() for m in table.column("last_modified_date").to_pylist()], pa.string())
        if case == "different-schemas":
            column = table.column("last_modified_date").cast(pa.timestamp("us", tz="UTC"))
        pq.write_table(table.set_column(table.schema.get_field_index("last_modified_date"), "last_modified_date", column), first)
        if case == "time-as-text":
            second = sorted(data_dir.iterdir())[1]
            table = pq.read_table(second)
            column = pa.array([None if m is None else m.isoformat() for m in table.column("last_modified_date").to_pylist()], pa.string())
            pq.write_table(table.set_column(table.schema.get_field_index("last_modified_date"), "last_modified_date", column), second)
        data = json.loads(manifest.read_text())
        for entry in data["files"]:
            body = (tmp_path / "report" / entry["key"]).read_bytes()
            entry["size"], entry["MD5checksum"] = len(body), hashlib.md5(body).hexdigest()
        body = json.dumps(data).encode()
        manifest.write_bytes(body)
        (manifest.parent / "manifest.checksum").write_text(hashlib.md5(body).hexdigest() + "\n")
    if case == "too-many-previous-keys":
        monkeypatch.setattr(cut_module, "CUT_IN_DRIVER_UP_TO", 3)
    previous = [f"s3://{BUCKET}/{k}" for k in keys[:10]]
    considered = _previous(spark, tmp_path / "prev", previous)
    with caplog.at_level(logging.INFO, logger=CUT_LOG):
        try:
            in_driver, in_spark = _both(lambda c: read_inventory(spark, str(manifest), NS, considered=c), considered, tmp_path / "prev", T0)
        except Exception as exc:  # noqa: BLE001 - a report this Spark cannot read (nanoseconds): refused before any cut
            assert case == "nanoseconds", exc
            with pytest.raises(type(exc)):
                read_inventory(spark, str(manifest), NS, considered=considered)
            assert not any("cut in the driver" in record.getMessage() for record in caplog.records)
            return
    assert any("cut in Spark" in record.getMessage() for record in caplog.records), caplog.text
    assert not any("cut in the driver" in record.getMessage() for record in caplog.records)
    assert in_driver == in_spark and in_spark


def test_the_cut_keeps_only_the_columns_the_reader_reads(tmp_path: Path) -> None:
    """An S3 report's cut holds the columns inventory_rows reads (bucket, key, version flags,
    size, time: in the report's order), not those it never reads (version id, ETag, storage
    class), so the driver does not decode them; an Azure or GCS report's cut keeps every column
    (their row filters look at the columns a file has)."""
    from lakewarden.inventory import locate_inventory

    keys: list[str | None] = [f"repo/ns/data/k{i}" for i in range(12)]
    manifest = _s3_parquet(tmp_path / "report", keys, [T0 + timedelta(seconds=i - 6) for i in range(12)], pa.timestamp("ms", tz="UTC"), parts=2)
    previous_dir = tmp_path / "prev"
    previous_dir.mkdir()
    pq.write_table(pa.table({"physical_address": [f"s3://{BUCKET}/repo/ns/data/k1"]}), previous_dir / "part-00000.parquet")
    report = locate_inventory(str(manifest), NS)
    cut = cut_module.cut_parquet_report(
        report.paths, columns=report.columns, uri_root=report.uri_root, previous_location=previous_dir, cutoff=T0, work_dir=tmp_path / "cut"
    )
    assert cut is not None
    table = pq.read_table(list(cut.paths))
    assert table.column_names == ["bucket", "key", "is_latest", "is_delete_marker", "size", "last_modified_date"]
    assert sorted(table.column("key").to_pylist()) == sorted(["repo/ns/data/k1", *(f"repo/ns/data/k{i}" for i in range(7, 12))])
    everything = cut_module.ReportColumns(key=report.columns.key, modified=report.columns.modified)
    cut = cut_module.cut_parquet_report(
        report.paths, columns=everything, uri_root=report.uri_root, previous_location=previous_dir, cutoff=T0, work_dir=tmp_path / "all"
    )
    assert cut is not None
    assert pq.read_schema(cut.paths[0]).names == pq.read_schema(report.paths[0]).names


def test_a_csv_report_is_cut_in_spark(spark: Any, tmp_path: Path) -> None:
    """CSV keys are form-encoded and times are text, which only Spark's parsing reads as the
    reader does: no cut in the driver is tried (the same rows as without a location)."""
    manifest = write_inventory(tmp_path / "report", "CSV", created=CREATED)
    considered = _previous(spark, tmp_path / "prev", [f"s3://{BUCKET}/repo/ns/data/a", f"s3://{BUCKET}/repo/ns/data/with space"])
    in_driver, in_spark = _both(lambda c: read_inventory(spark, str(manifest), NS, considered=c), considered, tmp_path / "prev", T0)
    assert in_driver == in_spark
    assert {row[0] for row in in_spark} >= {f"s3://{BUCKET}/repo/ns/data/a", f"s3://{BUCKET}/repo/ns/data/with space"}


def test_the_cut_is_made_when_the_rows_are_asked_for(spark: Any, tmp_path: Path, caplog: Any) -> None:
    """prepare_storage_inventory validates the report now and cuts it only when its rows are
    asked for (an optimized run asks in the thread that writes its storage table)."""
    from lakewarden.inventory import prepare_storage_inventory

    keys: list[str | None] = [f"repo/ns/data/k{i}" for i in range(10)]
    manifest = _s3_parquet(tmp_path / "report", keys, [T0] * 10, pa.timestamp("ms", tz="UTC"), parts=1)
    from dataclasses import replace

    considered = replace(_previous(spark, tmp_path / "prev", [f"s3://{BUCKET}/repo/ns/data/k2"]), previous_location=tmp_path / "prev")
    with caplog.at_level(logging.INFO, logger=CUT_LOG):
        rows = prepare_storage_inventory(spark, NS, str(manifest), considered=considered)
        assert not any(CUT_LOG == record.name for record in caplog.records)
        assert [row[0] for row in _rows(rows())] == [f"s3://{BUCKET}/repo/ns/data/k2"]
    assert any("cut in the driver" in record.getMessage() for record in caplog.records)
