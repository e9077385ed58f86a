"""Google Cloud Storage inventory reports (Storage Insights): ``<config>_<snapshot>_manifest.json``
and its CSV/Parquet shards.

The manifest carries ``report_config`` (``object_metadata_report_options.metadata_fields`` and
``storage_filters.bucket``, ``csv_options`` or ``parquet_options``), ``snapshot_time`` and
``report_shards_file_names``, shards written beside the manifest. Rows are live objects; a row's
``bucket`` must be the namespace's, its ``name`` is the object's name.

Refused as bad input (one line naming the manifest and field): another bucket, no ``name``
field, no shards, a shard missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from lakewarden.errors import BadInput
from lakewarden.inventories.common import CloudInventory, parse_time, sibling
from lakewarden.stores.gcs import gcs_location

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame


def _bucket_rows(bucket: str) -> Callable[["DataFrame"], "Column"]:
    def keep(df: "DataFrame") -> "Column":
        from pyspark.sql import functions as F

        columns = {name.lower(): name for name in df.columns}
        if "bucket" not in columns:
            return F.lit(True)
        return F.col(f"`{columns['bucket']}`").cast("string") == bucket

    return keep


def parse_manifest(raw: Mapping[str, Any], manifest: str, storage_namespace: str) -> CloudInventory:
    bucket, _ = gcs_location(storage_namespace)
    config = raw.get("report_config")
    if not isinstance(config, dict):
        raise BadInput("missing", source=manifest, field="report_config")
    options = config.get("object_metadata_report_options")
    if not isinstance(options, dict):
        raise BadInput("missing", source=manifest, field="report_config.object_metadata_report_options")
    fields = options.get("metadata_fields")
    if not isinstance(fields, list) or "name" not in fields:
        raise BadInput("has no name field", source=manifest, field="report_config.object_metadata_report_options.metadata_fields")
    source = (options.get("storage_filters") or {}).get("bucket")
    if source != bucket:
        raise BadInput(
            f"inventory of bucket {source!r}, the storage namespace is in {bucket!r}",
            source=manifest,
            field="report_config.object_metadata_report_options.storage_filters.bucket",
        )
    if "parquet_options" in config:
        file_format = "Parquet"
    elif "csv_options" in config:
        file_format = "CSV"
        csv = config["csv_options"] or {}
        if csv.get("header_required") is False or csv.get("delimiter", ",") != ",":
            raise BadInput("only comma-separated shards with a header row are read", source=manifest, field="report_config.csv_options")
    else:
        raise BadInput("neither csv_options nor parquet_options", source=manifest, field="report_config")
    shards = raw.get("report_shards_file_names")
    if not isinstance(shards, list) or not shards or not all(isinstance(s, str) and s for s in shards):
        raise BadInput("missing or empty", source=manifest, field="report_shards_file_names")
    return CloudInventory(
        kind="gcs",
        manifest=manifest,
        created=parse_time(raw.get("snapshot_time"), manifest, "snapshot_time"),
        file_format=file_format,
        data_files=tuple(sibling(manifest, shard.rsplit("/", 1)[-1]) for shard in shards),
        name_field="name",
        size_field="size" if "size" in fields else None,
        modified_field="updated" if "updated" in fields else None,
        created_field="snapshot_time",
        uri_root=f"gs://{bucket}/",
        row_filter=_bucket_rows(bucket),
    )
