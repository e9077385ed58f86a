"""Azure Blob Inventory and GCS Storage Insights inventory reports (CSV and Parquet, with their
manifests) read into the storage inventory: only live objects strictly inside the namespace,
never ``_lakefs/`` (an inventory lists lakeFS's metadata too), and a report that does not cover
the namespace, is too old or is malformed is bad input naming the file and field."""

from __future__ import annotations

import csv
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakewarden.errors import BadInput
from lakewarden.inventories import read_cloud_inventory

pytestmark = pytest.mark.spark

AZ_NS = "https://acct.blob.core.windows.net/container/repo/ns"
GS_NS = "gs://bucket/repo/ns"
WHEN = "2026-01-02T03:04:05Z"


def _azure(tmp_path: Path, file_format: str, rows: list[dict[str, Any]], **overrides: Any) -> Path:
    fields = ["Name", "Content-Length", "Last-Modified", "Deleted", "Snapshot", "IsCurrentVersion"]
    name = f"Rule_1.{file_format}"
    if file_format == "csv":
        with open(tmp_path / name, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
    else:
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / name)
    manifest = {
        "destinationContainer": "inventory",
        "endpoint": "https://acct.blob.core.windows.net",
        "files": [{"blob": f"2026/01/02/03-04-05/Rule_1/{name}", "size": 1}],
        "inventoryCompletionTime": WHEN,
        "inventoryStartTime": WHEN,
        "ruleDefinition": {
            "filters": {"blobTypes": ["blockBlob"], "prefixMatch": ["container/repo"]},
            "format": file_format,
            "objectType": "blob",
            "schedule": "daily",
            "schemaFields": fields,
        },
        "ruleName": "Rule_1",
        "status": "Succeeded",
        "version": "1.0",
        **overrides,
    }
    path = tmp_path / "Rule_1-manifest.json"
    path.write_text(json.dumps(manifest))
    return path


def _azure_rows() -> list[dict[str, Any]]:
    def row(name: str, **extra: Any) -> dict[str, Any]:
        return {"Name": name, "Content-Length": "5", "Last-Modified": "2026-01-01T00:00:00Z", "Deleted": "false", "Snapshot": "", "IsCurrentVersion": "true", **extra}

    return [
        row("container/repo/ns/data/a"),
        row("container/repo/ns/data/b c"),
        row("container/repo/ns/_lakefs/range"),
        row("container/repo/ns/dummy"),
        row("container/repo/ns/data/%2e%2e/%2e%2e/x"),
        row("container/repo/nsx/outside"),
        row("other/repo/ns/data/a"),
        row("container/repo/ns/data/deleted", Deleted="true"),
        row("container/repo/ns/data/snap", Snapshot="2026-01-01T00:00:00.0000000Z"),
        row("container/repo/ns/data/old-version", IsCurrentVersion="false"),
    ]


def _gcs(tmp_path: Path, file_format: str, rows: list[dict[str, Any]], **overrides: Any) -> Path:
    fields = ["project", "bucket", "name", "size", "updated"]
    shard = f"cfg_2026-01-02T03:04:05_0.{file_format}"
    if file_format == "csv":
        with open(tmp_path / shard, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
    else:
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / shard)
    options = {"csv_options": {"record_separator": "\n", "delimiter": ",", "header_required": True}} if file_format == "csv" else {"parquet_options": {}}
    manifest = {
        "report_config": {
            "name": "projects/p/locations/us/reportConfigs/cfg",
            **options,
            "object_metadata_report_options": {
                "metadata_fields": fields,
                "storage_filters": {"bucket": "bucket"},
                "storage_destination_options": {"bucket": "reports", "destination_path": "inv"},
            },
        },
        "records_processed": len(rows),
        "snapshot_time": WHEN,
        "shard_count": 1,
        "report_shards_file_names": [shard],
        **overrides,
    }
    path = tmp_path / "cfg_2026-01-02T03:04:05_manifest.json"
    path.write_text(json.dumps(manifest))
    return path


def _gcs_rows() -> list[dict[str, Any]]:
    def row(name: str, bucket: str = "bucket") -> dict[str, Any]:
        return {"project": "p", "bucket": bucket, "name": name, "size": "5", "updated": "2026-01-01T00:00:00Z"}

    return [row("repo/ns/data/a"), row("repo/ns/data/b c"), row("repo/ns/_lakefs/range"), row("repo/ns/_LAKEFS/x"),
            row("repo/ns/dummy"), row("repo/nsx/outside"), row("repo/ns/data/a", bucket="other")]


def _addresses(df: Any) -> list[tuple[str, int, Any]]:
    return sorted((r.physical_address, r.size, r.last_modified) for r in df.collect())


@pytest.mark.parametrize("file_format", ["csv", "parquet"])
def test_azure_inventory(spark: Any, tmp_path: Path, file_format: str) -> None:
    manifest = _azure(tmp_path, file_format, _azure_rows())
    rows = _addresses(read_cloud_inventory(spark, str(manifest), AZ_NS + "/"))
    assert [r[0] for r in rows] == [f"{AZ_NS}/data/a", f"{AZ_NS}/data/b c"]
    assert {r[1] for r in rows} == {5} and all(r[2] is not None for r in rows)


@pytest.mark.parametrize("file_format", ["csv", "parquet"])
def test_gcs_inventory(spark: Any, tmp_path: Path, file_format: str) -> None:
    manifest = _gcs(tmp_path, file_format, _gcs_rows())
    rows = _addresses(read_cloud_inventory(spark, manifest.as_uri(), GS_NS))
    assert [r[0] for r in rows] == [f"{GS_NS}/data/a", f"{GS_NS}/data/b c"]
    assert {r[1] for r in rows} == {5} and all(r[2] is not None for r in rows)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"status": "Failed"}, "status"),
        ({"endpoint": "https://other.blob.core.windows.net"}, "endpoint"),
        ({"files": []}, "files"),
        ({"files": [{"size": 3}]}, "files[0].blob"),
        ({"ruleDefinition": {"format": "orc", "objectType": "blob", "schemaFields": ["Name"]}}, "ruleDefinition.format"),
        ({"ruleDefinition": {"format": "csv", "objectType": "container", "schemaFields": ["Name"]}}, "ruleDefinition.objectType"),
        ({"ruleDefinition": {"format": "csv", "objectType": "blob", "schemaFields": ["Content-Length"]}}, "ruleDefinition.schemaFields"),
        ({"ruleDefinition": {"format": "csv", "objectType": "blob", "schemaFields": ["Name"], "filters": {"prefixMatch": ["container/repo/ns/data"]}}}, "ruleDefinition.filters.prefixMatch"),
        ({"inventoryCompletionTime": "yesterday"}, "inventoryCompletionTime"),
    ],
)
def test_bad_azure_manifests(spark: Any, tmp_path: Path, overrides: dict[str, Any], field: str) -> None:
    manifest = _azure(tmp_path, "csv", _azure_rows(), **overrides)
    with pytest.raises(BadInput) as raised:
        read_cloud_inventory(spark, str(manifest), AZ_NS)
    assert raised.value.field == field and str(manifest) in str(raised.value)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"report_shards_file_names": []}, "report_shards_file_names"),
        ({"report_shards_file_names": ["missing_0.csv"]}, "files[0]"),
        ({"snapshot_time": None}, "snapshot_time"),
        ({"report_config": {"csv_options": {}, "object_metadata_report_options": {"metadata_fields": ["name"], "storage_filters": {"bucket": "other"}}}},
         "report_config.object_metadata_report_options.storage_filters.bucket"),
        ({"report_config": {"csv_options": {}, "object_metadata_report_options": {"metadata_fields": ["size"], "storage_filters": {"bucket": "bucket"}}}},
         "report_config.object_metadata_report_options.metadata_fields"),
    ],
)
def test_bad_gcs_manifests(spark: Any, tmp_path: Path, overrides: dict[str, Any], field: str) -> None:
    manifest = _gcs(tmp_path, "csv", _gcs_rows(), **overrides)
    with pytest.raises(BadInput) as raised:
        read_cloud_inventory(spark, str(manifest), GS_NS)
    assert raised.value.field == field


def test_not_json_and_unknown_kind(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text("{")
    with pytest.raises(BadInput, match="not JSON"):
        read_cloud_inventory(spark, str(tmp_path / "m.json"), GS_NS)
    (tmp_path / "m.json").write_text("{}")
    with pytest.raises(BadInput) as raised:
        read_cloud_inventory(spark, str(tmp_path / "m.json"), GS_NS)
    assert raised.value.field == "ruleDefinition"


def test_too_old_for_min_age(spark: Any, tmp_path: Path) -> None:
    """The one age check (inventories.common.check_age, the S3 reader's too), naming each kind's
    manifest and the field its time came from."""
    taken = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    azure_dir = tmp_path / "azure"
    azure_dir.mkdir()
    for manifest, namespace, field in (
        (_gcs(tmp_path, "csv", _gcs_rows()), GS_NS, "snapshot_time"),
        (_azure(azure_dir, "csv", _azure_rows()), AZ_NS, "inventoryCompletionTime"),
    ):
        read_cloud_inventory(spark, str(manifest), namespace, now=taken + timedelta(hours=1), min_age=timedelta(hours=2))
        with pytest.raises(BadInput) as raised:
            read_cloud_inventory(spark, str(manifest), namespace, now=taken + timedelta(hours=3), min_age=timedelta(hours=2))
        assert (raised.value.source, raised.value.field) == (str(manifest), field)
        assert str(raised.value) == (
            f"{manifest}: {field}: inventory taken at 2026-01-02T03:04:05+00:00 is older than --min-age allows (2:00:00)"
        )


def test_gcs_inventory_on_the_emulator(spark: Any, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Manifest and shard read from the store itself (the shard streamed to a local file)."""
    from lakewarden.stores import StoreOptions
    from store_worlds import endpoint, make_world

    world = make_world("gcs", endpoint("gcs", request))
    manifest = _gcs(tmp_path, "csv", _gcs_rows())
    shard = next(tmp_path.glob("*.csv"))
    world.put(f"inv/{shard.name}", shard.read_bytes())
    world.put(f"inv/{manifest.name}", manifest.read_text().replace('"bucket": "bucket"', f'"bucket": "{world.root[5:]}"').encode())
    namespace = f"{world.root}/repo/ns"
    rows = read_cloud_inventory(spark, world.uri(f"inv/{manifest.name}"), namespace, store_options=StoreOptions(gcs_endpoint=world.endpoint))
    assert sorted(r.physical_address for r in rows.collect()) == []  # the rows name bucket "bucket", not this one
    world.put(f"inv/{shard.name}", shard.read_bytes().replace(b"p,bucket,", f"p,{world.root[5:]},".encode()))
    rows = read_cloud_inventory(spark, world.uri(f"inv/{manifest.name}"), namespace, store_options=StoreOptions(gcs_endpoint=world.endpoint))
    assert sorted(r.physical_address for r in rows.collect()) == [f"{namespace}/data/a", f"{namespace}/data/b c"]


def test_storage_inventory_picks_the_reader_and_the_time(spark: Any, tmp_path: Path) -> None:
    from lakewarden.inventories import inventory_created
    from lakewarden.inventory import storage_inventory

    azure = _azure(tmp_path, "csv", _azure_rows())
    assert storage_inventory(spark, AZ_NS, str(azure)).count() == 2
    assert inventory_created(str(azure)) == datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    gcs_dir = tmp_path / "gcs"
    gcs_dir.mkdir()
    gcs = _gcs(gcs_dir, "parquet", _gcs_rows())
    assert storage_inventory(spark, GS_NS, str(gcs)).count() == 2
    assert inventory_created(str(gcs)) == datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def test_a_run_without_a_work_dir_leaves_no_scratch_directory_behind(tmp_path: Path) -> None:
    """Data files Hadoop cannot read under their own names (a GCS shard's ``:``) are linked in
    a scratch directory; without a work dir that directory is the process's, removed at exit
    (a temporary directory is not removed by itself, and remote copies can be gigabytes)."""
    import subprocess
    import sys

    shard = tmp_path / "cfg_2026-12-03T12:03:55_0.csv"
    shard.write_text("name\nobject\n")
    script = (
        "import sys; from datetime import datetime, timezone; from pathlib import Path\n"
        "from lakewarden.inventories.common import CloudInventory, local_copies\n"
        "inventory = CloudInventory(kind='gcs', manifest='m.json', created=datetime.now(timezone.utc), file_format='CSV',"
        " data_files=(sys.argv[1],), name_field='name', size_field=None, modified_field=None, uri_root='gs://b',"
        " created_field='snapshot_time')\n"
        "(path,) = local_copies(inventory, None, None)\n"
        "assert Path(path).is_symlink() and ':' not in Path(path).name, path\n"
        "print(Path(path).parent)\n"
    )
    run = subprocess.run([sys.executable, "-c", script, str(shard)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    scratch = Path(run.stdout.strip())
    assert scratch.name.startswith("lakewarden-inventory-")
    assert not scratch.exists()
    assert shard.read_text() == "name\nobject\n"  # the link went, not what it pointed at


def test_a_located_report_reads_its_manifest_once(tmp_path: Path, monkeypatch: Any) -> None:
    """Its kind, its checks, its fingerprint (the report's identity across runs) and when it was
    taken all come from one read of the manifest: on a remote store one GET, and no later read
    can see a manifest replaced meanwhile. An optimized run once read it four times."""
    import hashlib

    from lakewarden import inventory
    from lakewarden.inventories import common, inventory_created
    from test_inventory import NS as S3_NS
    from test_inventory import write_inventory

    reads: list[str] = []

    def counted(read: Any) -> Any:
        def wrapper(location: str, *args: Any, **kwargs: Any) -> bytes:
            if kwargs.get("what") == "manifest":
                reads.append(location)
            return read(location, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(common, "read_location", counted(common.read_location))
    monkeypatch.setattr(inventory, "_read_bytes", counted(inventory._read_bytes))
    gcs_dir = tmp_path / "gcs"
    gcs_dir.mkdir()
    s3_dir = tmp_path / "s3"
    for manifest, namespace in (
        (write_inventory(s3_dir, "Parquet"), S3_NS),
        (_azure(tmp_path, "csv", _azure_rows()), AZ_NS),
        (_gcs(gcs_dir, "parquet", _gcs_rows()), GS_NS),
    ):
        reads.clear()
        located = inventory.locate_report(str(manifest), namespace)
        assert reads == [str(manifest)], located.kind
        assert located.fingerprint == hashlib.sha256(manifest.read_bytes()).hexdigest()
        assert located.created is not None and located.created == inventory_created(str(manifest))
