"""Storage inventories: S3 Inventory reports (CSV.gz, Parquet, ORC; local and s3://) and listings."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from lakewarden.errors import BadInput
from lakewarden.inventory import list_namespace, load_manifest, parse_file_schema, plan_listing, read_inventory, storage_inventory
from test_sweep_support import list_keys, moto_endpoint, new_bucket, put_keys, s3_client_for, s3_options

pytestmark = pytest.mark.spark

T0 = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
#: When the reports below were taken (creationTimestamp): after every object they list was written
CREATED = T0 + timedelta(hours=36)
BUCKET = "source-bucket"
NS = f"s3://{BUCKET}/repo/ns"

# (key, size, minutes after T0, is_latest, is_delete_marker)
OBJECTS: list[tuple[str, int, int, bool, bool]] = [
    ("repo/ns/data/a", 10, 0, True, False),
    ("repo/ns/data/with space", 11, 1, True, False),
    ("repo/ns/data/plus+sign", 12, 2, True, False),
    ("repo/ns/data/ünï", 13, 3, True, False),
    ("repo/ns/data/old-version", 14, 4, False, False),
    ("repo/ns/data/deleted", 0, 5, True, True),
    ("repo/ns/_lakefs/meta", 15, 6, True, False),
    ("repo/ns/%5Flakefs/sneaky", 16, 7, True, False),
    ("repo/ns/data/../_lakefs/x", 17, 8, True, False),
    ("repo/ns", 18, 9, True, False),
    ("repo/nsx/other", 19, 10, True, False),
    ("elsewhere/x", 20, 11, True, False),
]
EXPECTED = {
    (f"s3://{BUCKET}/repo/ns/data/a", 10, T0),
    (f"s3://{BUCKET}/repo/ns/data/with space", 11, T0 + timedelta(minutes=1)),
    (f"s3://{BUCKET}/repo/ns/data/plus+sign", 12, T0 + timedelta(minutes=2)),
    (f"s3://{BUCKET}/repo/ns/data/ünï", 13, T0 + timedelta(minutes=3)),
}
CSV_SCHEMA = "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ETag, StorageClass"


def _form_encode(key: str) -> str:
    from urllib.parse import quote_plus

    return quote_plus(key, safe="/")


def _arrow_table(rows: Sequence[tuple[str, int, int, bool, bool]], bucket: str = BUCKET) -> pa.Table:
    return pa.table(
        {
            "bucket": pa.array([bucket] * len(rows), pa.string()),
            "key": pa.array([r[0] for r in rows], pa.string()),
            "version_id": pa.array([f"v{i}" for i in range(len(rows))], pa.string()),
            "is_latest": pa.array([r[3] for r in rows], pa.bool_()),
            "is_delete_marker": pa.array([r[4] for r in rows], pa.bool_()),
            "size": pa.array([r[1] for r in rows], pa.int64()),
            "last_modified_date": pa.array([T0 + timedelta(minutes=r[2]) for r in rows], pa.timestamp("ms", tz="UTC")),
            "e_tag": pa.array(["etag"] * len(rows), pa.string()),
        }
    )


def write_inventory(root: Path, file_format: str, rows: Sequence[tuple[str, int, int, bool, bool]] = OBJECTS, *, parts: int = 2, bucket: str = BUCKET, file_schema: str | None = None, created: datetime = CREATED) -> Path:
    """An S3 Inventory report as AWS lays it out in the destination bucket, rooted at ``root``."""
    config = "inv-config"
    data_files = []
    chunks = [rows[i::parts] for i in range(parts)]
    for chunk in chunks:
        key = f"{bucket}/{config}/data/{uuid.uuid4()}.{ {'CSV': 'csv.gz', 'Parquet': 'parquet', 'ORC': 'orc'}[file_format] }"
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        if file_format == "CSV":
            buffer = io.StringIO()
            writer = csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n")
            for i, (k, size, minutes, latest, marker) in enumerate(chunk):
                modified = (T0 + timedelta(minutes=minutes)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
                writer.writerow([bucket, _form_encode(k), f"v{i}", str(latest).lower(), str(marker).lower(), size, modified, "etag", "STANDARD"])
            path.write_bytes(gzip.compress(buffer.getvalue().encode("utf-8")))
        elif file_format == "Parquet":
            pq.write_table(_arrow_table(chunk, bucket), path)
        else:
            orc.write_table(_arrow_table(chunk, bucket), path)
        data = path.read_bytes()
        data_files.append({"key": key, "size": len(data), "MD5checksum": hashlib.md5(data).hexdigest()})
    if file_schema is None:
        file_schema = {
            "CSV": CSV_SCHEMA,
            "Parquet": "message s3.inventory { required binary bucket (STRING); required binary key (STRING); optional binary version_id (STRING); optional boolean is_latest; optional boolean is_delete_marker; optional int64 size; optional int64 last_modified_date (TIMESTAMP(MILLIS,true)); optional binary e_tag (STRING);}",
            "ORC": "struct<bucket:string,key:string,version_id:string,is_latest:boolean,is_delete_marker:boolean,size:bigint,last_modified_date:timestamp,e_tag:string>",
        }[file_format]
    manifest = {
        "sourceBucket": bucket,
        "destinationBucket": "arn:aws:s3:::inventory-destination",
        "version": "2016-11-30",
        "creationTimestamp": str(int(created.timestamp() * 1000)),
        "fileFormat": file_format,
        "fileSchema": file_schema,
        "files": data_files,
    }
    manifest_dir = root / bucket / config / "2026-01-02T01-00Z"
    manifest_dir.mkdir(parents=True, exist_ok=True)
    body = json.dumps(manifest, indent=2).encode()
    (manifest_dir / "manifest.json").write_bytes(body)
    (manifest_dir / "manifest.checksum").write_text(hashlib.md5(body).hexdigest() + "\n")
    return manifest_dir / "manifest.json"


def _rows(df: Any) -> set[tuple[str, int, datetime]]:
    assert df.columns == ["physical_address", "size", "last_modified"]
    assert dict(df.dtypes) == {"physical_address": "string", "size": "bigint", "last_modified": "timestamp"}
    return {(r[0], r[1], r[2].replace(tzinfo=timezone.utc) if r[2] else None) for r in df.collect()}


@pytest.fixture(scope="module")
def utc_spark(spark: Any) -> Any:
    """Collected timestamps are naive local times; the session is UTC and so is the process here."""
    previous = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    import time

    time.tzset()
    yield spark
    if previous is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = previous
    time.tzset()


@pytest.mark.parametrize("file_format", ["CSV", "Parquet", "ORC"])
def test_inventory_round_trip(utc_spark: Any, tmp_path: Path, file_format: str) -> None:
    manifest = write_inventory(tmp_path / "inventory-destination", file_format)
    assert _rows(read_inventory(utc_spark, str(manifest), NS + "/")) == EXPECTED
    assert _rows(storage_inventory(utc_spark, "s3a://source-bucket/repo/ns", manifest.as_uri())) == EXPECTED


def test_file_schema_parsing() -> None:
    assert parse_file_schema("CSV", CSV_SCHEMA)[:3] == ("Bucket", "Key", "VersionId")
    assert parse_file_schema("Parquet", "message s3.inventory { required binary bucket (UTF8); optional int64 size;}") == ("bucket", "size")
    assert parse_file_schema("ORC", "struct<bucket:string,key:string,size:bigint>") == ("bucket", "key", "size")


def test_csv_columns_follow_the_manifest_order(utc_spark: Any, tmp_path: Path) -> None:
    """A CSV inventory whose fileSchema has only Bucket, Key, Size, LastModifiedDate (in that order)."""
    root = tmp_path / "dest"
    manifest = write_inventory(root, "CSV", OBJECTS[:2], parts=1)
    raw = json.loads(manifest.read_text())
    raw["fileSchema"] = "Bucket, Key, Size, LastModifiedDate"
    data = root / raw["files"][0]["key"]
    lines = [f'"{BUCKET}","{_form_encode(k)}","{size}","{(T0 + timedelta(minutes=m)).isoformat().replace("+00:00", "Z")}"' for k, size, m, _, _ in OBJECTS[:2]]
    data.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    raw["files"][0].update(size=data.stat().st_size, MD5checksum=hashlib.md5(data.read_bytes()).hexdigest())
    body = json.dumps(raw).encode()
    manifest.write_bytes(body)
    (manifest.parent / "manifest.checksum").write_text(hashlib.md5(body).hexdigest())
    rows = _rows(read_inventory(utc_spark, str(manifest), NS))
    assert rows == {e for e in EXPECTED if e[0].endswith(("/a", "with space"))}


def _rewrite_manifest(manifest: Path, **changes: Any) -> None:
    raw = json.loads(manifest.read_text())
    raw.update(changes)
    body = json.dumps(raw).encode()
    manifest.write_bytes(body)
    (manifest.parent / "manifest.checksum").write_text(hashlib.md5(body).hexdigest())


def test_s3_inventory_too_old_for_min_age(utc_spark: Any, tmp_path: Path) -> None:
    """The same check, wording and exit as Azure's and GCS's (inventories.common.check_age), naming
    the S3 manifest and its creationTimestamp; a report without one has an unknown age."""
    manifest = write_inventory(tmp_path / "a", "CSV")
    hours = timedelta(hours=1)
    assert _rows(read_inventory(utc_spark, str(manifest), NS, now=CREATED + hours, min_age=2 * hours)) == EXPECTED
    with pytest.raises(BadInput) as raised:
        read_inventory(utc_spark, str(manifest), NS, now=CREATED + 3 * hours, min_age=2 * hours)
    assert (raised.value.source, raised.value.field) == (str(manifest), "creationTimestamp")
    assert str(raised.value) == (
        f"{manifest}: creationTimestamp: inventory taken at {CREATED.isoformat()} "
        "is older than --min-age allows (2:00:00)"
    )
    with pytest.raises(BadInput, match="older than --min-age allows"):  # through the reader every job uses
        storage_inventory(utc_spark, NS, str(manifest), now=CREATED + 3 * hours, min_age=2 * hours)
    _rewrite_manifest(manifest, creationTimestamp=None)
    with pytest.raises(BadInput, match=r"manifest.json: creationTimestamp: missing \(the report's age is unknown\)"):
        read_inventory(utc_spark, str(manifest), NS, now=CREATED, min_age=2 * hours)
    assert _rows(read_inventory(utc_spark, str(manifest), NS)) == EXPECTED  # no age asked for: read as before


def test_bad_inventories(utc_spark: Any, tmp_path: Path) -> None:
    manifest = write_inventory(tmp_path / "a", "CSV")
    (manifest.parent / "manifest.checksum").write_text("0" * 32)
    with pytest.raises(BadInput, match="manifest.checksum: md5: checksum mismatch"):
        read_inventory(utc_spark, str(manifest), NS)
    (manifest.parent / "manifest.checksum").unlink()
    with pytest.raises(BadInput, match="manifest.checksum: cannot read the checksum"):
        load_manifest(str(manifest))

    manifest = write_inventory(tmp_path / "b", "Parquet")
    first = json.loads(manifest.read_text())["files"][0]["key"]
    (tmp_path / "b" / first).unlink()
    with pytest.raises(BadInput, match=r"manifest.json: files\[0\].key: missing data file"):
        read_inventory(utc_spark, str(manifest), NS)

    manifest = write_inventory(tmp_path / "c", "CSV")
    _rewrite_manifest(manifest, fileSchema="Bucket, VersionId, Size")
    with pytest.raises(BadInput, match="fileSchema: has no Key field"):
        read_inventory(utc_spark, str(manifest), NS)

    manifest = write_inventory(tmp_path / "d", "ORC")
    with pytest.raises(BadInput, match="sourceBucket: inventory of bucket 'source-bucket'"):
        read_inventory(utc_spark, str(manifest), "s3://another-bucket/repo/ns")
    with pytest.raises(BadInput, match="sourceBucket"):
        read_inventory(utc_spark, str(manifest), "file:///repo/ns")

    manifest = write_inventory(tmp_path / "e", "CSV")
    raw = json.loads(manifest.read_text())
    raw["files"][1]["MD5checksum"] = "f" * 32
    _rewrite_manifest(manifest, files=raw["files"])
    with pytest.raises(BadInput, match=r"files\[1\].MD5checksum"):
        read_inventory(utc_spark, str(manifest), NS)

    manifest = write_inventory(tmp_path / "f", "CSV")
    _rewrite_manifest(manifest, fileFormat="JSON")
    with pytest.raises(BadInput, match="fileFormat"):
        read_inventory(utc_spark, str(manifest), NS)


# -- s3:// inventories and S3 listing (moto server) -----------------------------------------------


@pytest.fixture(scope="session")
def s3_endpoint(request: pytest.FixtureRequest) -> str:
    return moto_endpoint(request)


def test_inventory_from_s3(utc_spark: Any, s3_endpoint: str, tmp_path: Path) -> None:
    destination = new_bucket(s3_endpoint)
    root = tmp_path / "staging"
    manifest = write_inventory(root, "Parquet", parts=3)
    client = s3_client_for(s3_endpoint)
    for path in root.rglob("*"):
        if path.is_file():
            client.put_object(Bucket=destination, Key=str(path.relative_to(root)), Body=path.read_bytes())
    raw = json.loads(manifest.read_text())
    _rewrite_manifest(manifest, destinationBucket=f"arn:aws:s3:::{destination}", files=raw["files"])
    for name in ("manifest.json", "manifest.checksum"):
        client.put_object(Bucket=destination, Key=str((manifest.parent / name).relative_to(root)), Body=(manifest.parent / name).read_bytes())
    location = f"s3://{destination}/{manifest.relative_to(root)}"
    df = read_inventory(utc_spark, location, NS, s3_options=s3_options(s3_endpoint), work_dir=tmp_path / "work")
    assert _rows(df) == EXPECTED
    assert len(list((tmp_path / "work").iterdir())) == 3

    client.delete_object(Bucket=destination, Key=raw["files"][2]["key"])
    with pytest.raises(BadInput, match=r"files\[2\].key: missing data file"):
        read_inventory(utc_spark, location, NS, s3_options=s3_options(s3_endpoint), work_dir=tmp_path / "work2")


@pytest.fixture(params=["driver", "tasks"])
def listed_by(request: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each listing test runs twice: a small namespace listed by the driver (the default for
    these few objects) and by Spark tasks (as a namespace above the driver's bound is)."""
    from lakewarden import inventory

    if request.param == "tasks":
        monkeypatch.setattr(inventory, "LIST_ON_DRIVER_UP_TO", 0)
    return str(request.param)


def test_list_s3_namespace(utc_spark: Any, s3_endpoint: str, listed_by: str) -> None:
    bucket = new_bucket(s3_endpoint)
    inside = [f"repo/ns/data/g{g}/obj-{i}" for g in range(4) for i in range(5)] + ["repo/ns/top-level", "repo/ns/data/direct"]
    put_keys(s3_endpoint, bucket, inside + ["repo/ns/_lakefs/meta", "repo/ns/_lakefs/deep/x", "repo/nsx/other", "elsewhere"])
    namespace = f"s3://{bucket}/repo/ns"
    units = plan_listing(namespace, s3_options=s3_options(s3_endpoint))
    assert len(units) > 4 and not any("_lakefs" in u.prefix for u in units)
    rows = _rows(list_namespace(utc_spark, namespace, s3_options=s3_options(s3_endpoint), parallelism=3))
    assert {r[0] for r in rows} == {f"s3://{bucket}/{k}" for k in inside}
    assert all(r[1] == 1 and r[2] is not None for r in rows)
    assert list_keys(s3_endpoint, bucket, "repo/ns/_lakefs/")  # untouched, just not listed


def test_list_local_namespace(utc_spark: Any, tmp_path: Path, listed_by: str) -> None:
    ns = tmp_path / "ns"
    files = [ns / "data" / f"g{g}" / f"f{i}" for g in range(3) for i in range(3)] + [ns / "top", ns / "data" / "sp ace%20"]
    for i, path in enumerate(files):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * i)
        os.utime(path, (T0.timestamp(), T0.timestamp() + i))
    (ns / "_lakefs" / "sub").mkdir(parents=True)
    (ns / "_lakefs" / "sub" / "meta").write_bytes(b"m")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"s")
    (ns / "data" / "dir-link").symlink_to(outside, target_is_directory=True)
    (ns / "data" / "file-link").symlink_to(outside / "secret")

    rows = _rows(list_namespace(utc_spark, ns.as_uri(), parallelism=2))
    expected = {(f"file://{p}", i, datetime.fromtimestamp(T0.timestamp() + i, tz=timezone.utc)) for i, p in enumerate(files)}
    assert rows == expected


def test_listing_above_the_driver_bound_is_listed_by_tasks(utc_spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One object more than the driver's bound: the driver gives up, Spark tasks list them all."""
    from lakewarden import inventory

    ns = tmp_path / "ns"
    for i in range(5):
        (ns / f"d{i % 2}").mkdir(parents=True, exist_ok=True)
        (ns / f"d{i % 2}" / f"f{i}").write_bytes(b"x")
    monkeypatch.setattr(inventory, "LIST_ON_DRIVER_UP_TO", 4)
    parallelized: list[int] = []
    real = utc_spark.sparkContext.parallelize
    monkeypatch.setattr(utc_spark.sparkContext, "parallelize", lambda data, *a: parallelized.append(len(data)) or real(data, *a))
    rows = _rows(list_namespace(utc_spark, ns.as_uri(), parallelism=2))
    assert len(rows) == 5 and parallelized
    monkeypatch.setattr(inventory, "LIST_ON_DRIVER_UP_TO", 5)
    parallelized.clear()
    assert _rows(list_namespace(utc_spark, ns.as_uri(), parallelism=2)) == rows and not parallelized


def test_planning_bounds_driver_listing(tmp_path: Path) -> None:
    ns = tmp_path / "flat"
    for i in range(1100):
        (ns / "data" / f"d{i:04d}").mkdir(parents=True)
    units = plan_listing(ns.as_uri(), max_pages=1)
    assert [(u.prefix.removeprefix(str(ns)), u.deep) for u in units] == [("/", False), ("/data/", True)]


# -- the metadata filter's fast path ---------------------------------------------------------------

_KEY_PARTS = ["a", "B", "é", "_lakefs", "_LakeFS", "dummy", "Dummy", ".", "..", "", "%5F", "%5f", "%255F", "%2e", "%2E%2e",
              "%zz", "%", "+", "\\", "x y", "lakefs", "_lakefsx", "dummyx", "%2F", "%5C"]


def test_metadata_filter_fast_path_agrees_with_every_reading(spark: Any) -> None:
    """A key without ``%``, ``+`` or a backslash takes the raw reading's checks only
    (inventory._hidden); every key of the grid and of random joins of its parts is judged the
    same as by the check of every reading (raw, URL-decoded once and twice, backslashes as '/')."""
    import itertools
    import random

    from pyspark.sql import functions as F

    from lakewarden.inventory import _hidden, _hidden_in_any_reading

    rng = random.Random(18)
    keys = {"/".join(parts) for size in (1, 2) for parts in itertools.product(_KEY_PARTS, repeat=size)}
    keys |= {"/".join(rng.choice(_KEY_PARTS) for _ in range(rng.randint(1, 5))) for _ in range(3000)}
    keys |= {"".join(rng.choice(_KEY_PARTS) for _ in range(rng.randint(1, 4))) for _ in range(3000)}
    must_hide = {"_lakefs", "_LakeFS/a", "dummy", "..", "", "%zz", "a/..", "%5Flakefs/x", "%255Flakefs/x", "_lakefs\\x",
                 "data\\..\\_lakefs", "a+%", "./_lakefs/x"}
    must_keep = {"a/B", "lakefs/_lakefsx", "x y/dummyx", "a/dummy", "data/a+b", "data/%41", "é/x"}
    keys |= must_hide | must_keep
    frame = spark.createDataFrame([(key,) for key in sorted(keys)], "relative string")
    judged = frame.select(
        "relative", _hidden(F.col("relative")).alias("fast"), _hidden_in_any_reading(F.col("relative")).alias("every_reading")
    )
    disagreements = judged.where(~F.col("fast").eqNullSafe(F.col("every_reading"))).collect()
    assert not disagreements, disagreements[:10]
    hidden = {row["relative"] for row in judged.where("fast").collect()}
    # keys of every kind are among them: metadata, ambiguous and plain, on both paths
    assert must_hide <= hidden and not must_keep & hidden


def test_restriction_in_two_reads_keeps_the_rows_of_one(spark: Any) -> None:
    """restrict_to_namespace's form for rereadable files (two filtered reads, plain keys and the
    rest) keeps exactly the rows of its one-read form, on the grid's keys under a namespace, keys
    outside it and a null key, each once."""
    import itertools

    from lakewarden.inventory import _namespace, restrict_to_namespace

    ns = _namespace("s3://bucket/repo")
    relative = {"/".join(parts) for size in (1, 2) for parts in itertools.product(_KEY_PARTS, repeat=size)}
    keys = [f"repo/{key}" for key in sorted(relative)] + ["other/a", "repox/a", "repo", None]
    frame = spark.createDataFrame([(key, i) for i, key in enumerate(keys)], "key string, n int")
    one = sorted(tuple(row) for row in restrict_to_namespace(frame, "key", ns).collect())
    two = sorted(tuple(row) for row in restrict_to_namespace(frame, "key", ns, rereadable=True).collect())
    assert two == one
    assert len({n for _, n in two}) == len(two)  # no row kept twice
    kept = {key for key, _ in one}
    assert "repo/a/B" in kept and not {"repo/_lakefs", "repo/a/..", "other/a", "repox/a"} & kept
    assert any("%" in key or "+" in key for key in kept)  # the second read keeps rows too


def test_each_reading_check_agrees_with_its_regular_expressions_as_first_written(spark: Any) -> None:
    """inventory._hidden_as_read runs each regular expression only on the keys holding what it
    needs to match; over the grid of keys (and their URL-decoded readings' shapes) it judges
    every key as the four expressions alone do."""
    import itertools
    import random

    from pyspark.sql import functions as F

    from lakewarden.inventory import _hidden_as_read

    def as_first_written(key: Any) -> Any:
        return (
            F.lower(key).rlike(r"^[/]*(\./+)*_lakefs(/|$)")
            | F.lower(key).rlike(r"^[/]*(\./+)*dummy/*$")
            | key.rlike(r"(^|/)\.\.?(/|$)")
            | (F.regexp_replace(key, "/", "") == "")
        )

    rng = random.Random(21)
    parts = [*_KEY_PARTS, "/", "//", "./", "_lakefs/", "DUMMY/", "x.", ".x"]
    keys = {"/".join(p) for size in (1, 2, 3) for p in itertools.product(["", ".", "..", "_lakefs", "dummy", "a", "/"], repeat=size)}
    keys |= {"".join(rng.choice(parts) for _ in range(rng.randint(1, 5))) for _ in range(5000)}
    keys |= {None}
    frame = spark.createDataFrame([(key,) for key in sorted(keys, key=str)], "key string")
    judged = frame.select("key", _hidden_as_read(F.col("key")).alias("guarded"), as_first_written(F.col("key")).alias("first"))
    disagreements = judged.where(~F.col("guarded").eqNullSafe(F.col("first"))).collect()
    assert not disagreements, disagreements[:10]
    assert judged.where("guarded").count() > 100 and judged.where("not guarded").count() > 100


def test_the_cut_keeps_objects_written_after_the_cutoff_or_listed_before_each_once(spark: Any) -> None:
    """keep_considered (an optimized uncommitted run's cut of a report) keeps exactly the rows
    written after the cutoff or whose address the previous uncommitted inventory lists, each
    row once: with the previous keys repeated, a NULL among them, addresses outside the root,
    rows without a time (kept only when listed) and a NULL key (never listed)."""
    from lakewarden.inventory import Considered, keep_considered

    root = "s3://bucket/"
    cutoff = T0 + timedelta(days=1)
    before, after = cutoff - timedelta(seconds=1), cutoff + timedelta(microseconds=1)
    rows = [  # (key, last_modified, n): n tells repeated keys apart
        ("repo/old-listed", before, 1), ("repo/old-listed", before, 2), ("repo/old-unlisted", before, 3),
        ("repo/new", after, 4), ("repo/new-listed", after, 5), ("repo/at-cutoff", cutoff, 6),
        ("repo/untimed-listed", None, 7), ("repo/untimed", None, 8), (None, before, 9), (None, after, 10),
    ]
    frame = spark.createDataFrame(rows, "key string, last_modified timestamp, n int")
    previous = spark.createDataFrame(
        [(f"{root}{key}",) for key in ("repo/old-listed", "repo/old-listed", "repo/new-listed", "repo/untimed-listed")]
        + [("s3://other/repo/old-unlisted",), ("repo/old-unlisted",), (None,)],
        "physical_address string",
    )
    kept = keep_considered(frame, "key", root, Considered(cutoff=cutoff, previous=previous)).collect()
    assert sorted(row["n"] for row in kept) == [1, 2, 4, 5, 7, 10]
    assert set(kept[0].asDict()) == {"key", "last_modified", "n"}
