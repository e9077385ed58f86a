"""What the inventory readers share: fetching a manifest and data files from any store (or the
local disk), when a report was taken and the one check of its age (S3 Inventory, Azure and GCS
alike), and turning rows into the storage inventory's shape with the namespace filter."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from lakewarden.errors import BadInput
from lakewarden.safety import parse_uri

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession

    from lakewarden.inventory import Considered, LocatedReport

    from lakewarden.stores import StoreOptions

FORMATS = {"csv": "CSV", "parquet": "Parquet"}


@dataclass(frozen=True)
class CloudInventory:
    """A validated manifest: where its data files are and which columns mean what.

    ``key_prefix`` is prepended to a row's name to form the object's path inside its store
    (Azure rows name ``CONTAINER/BLOB`` already: empty; GCS rows name the object: empty too, the
    bucket is the URI's authority). ``uri_root`` + path is the object's physical address.
    """

    kind: str  # "azure" | "gcs"
    manifest: str
    created: datetime
    file_format: str  # "CSV" | "Parquet"
    data_files: tuple[str, ...]
    name_field: str
    size_field: str | None
    modified_field: str | None
    uri_root: str
    created_field: str  # the manifest field ``created`` comes from, named when it is too old
    row_filter: Callable[["DataFrame"], "Column"] | None = None

    def check_age(self, now: datetime, min_age: timedelta) -> None:
        check_age(self.created, now, min_age, manifest=self.manifest, field=self.created_field)


def check_age(created: datetime, now: datetime, min_age: timedelta, *, manifest: str, field: str) -> None:
    """Bad input when a report taken at ``created`` is too old for ``min_age`` at ``now``: objects
    written after it was taken are missing from it, and anything younger than ``min_age`` at run
    time must be kept; a report older than ``min_age`` cannot vouch for them. The one check for
    every kind of inventory (S3, Azure, GCS); ``field`` is the manifest field ``created`` came from."""
    if now - created > min_age:
        raise BadInput(
            f"inventory taken at {created.isoformat()} is older than --min-age allows ({min_age})",
            source=manifest,
            field=field,
        )


#: The S3 Inventory manifest field that says when the report was taken (epoch milliseconds).
S3_CREATED_FIELD = "creationTimestamp"


def s3_created(raw: Mapping[str, Any], manifest: str, *, required: bool = False) -> datetime | None:
    """When an S3 Inventory report was taken (``creationTimestamp``, epoch milliseconds as a
    string); ``None`` when absent or malformed, or bad input naming the field when ``required``
    (its age is then unknown, so it cannot vouch for anything)."""
    stamp = raw.get(S3_CREATED_FIELD)
    if isinstance(stamp, (int, str)) and str(stamp).isdigit():
        return datetime.fromtimestamp(int(stamp) / 1000, tz=timezone.utc)
    if required:
        problem = "missing" if stamp is None else f"not epoch milliseconds: {stamp!r}"
        raise BadInput(f"{problem} (the report's age is unknown)", source=manifest, field=S3_CREATED_FIELD)
    return None


def is_remote(location: str) -> bool:
    return "://" in location and not location.lower().startswith("file:")


def local_path(location: str) -> Path:
    """A local path or ``file:`` URI (percent-decoded, as ``Path.as_uri`` encodes) as a path."""
    from urllib.parse import unquote

    return Path(unquote(parse_uri(location).path)) if location.startswith("file:") else Path(location).expanduser()


def read_location(location: str, options: "StoreOptions | None", *, what: str) -> bytes:
    """Bytes of a local path / ``file:`` URI, or of an object on any store."""
    if not is_remote(location):
        path = local_path(location)
        try:
            return path.read_bytes()
        except OSError as exc:
            raise BadInput(f"cannot read the {what}: {exc.strerror or exc}", source=str(path)) from None
    from lakewarden.stores import ObjectMissing, StoreError, store_for

    parent = location.rsplit("/", 1)[0]
    try:
        return store_for(parent, options).read(location)
    except ObjectMissing:
        raise BadInput(f"the {what} is missing", source=location) from None
    except StoreError as exc:
        raise BadInput(f"cannot read the {what} ({exc})", source=location) from None


def fingerprint_of(manifest_bytes: bytes) -> str:
    """SHA-256 of an inventory report's manifest: the report's identity. A manifest names its
    data files (with their checksums, for S3) and when the report was taken, so two reports with
    the same manifest bytes observed storage at the same moment. A located report
    (:class:`~lakewarden.inventory.LocatedReport`) carries the fingerprint of the very bytes it
    was validated from."""
    return hashlib.sha256(manifest_bytes).hexdigest()


def download_location(location: str, target: str, options: "StoreOptions | None", *, what: str, manifest: str) -> None:
    """Stream a remote data file to ``target`` (never held in memory whole)."""
    from lakewarden.stores import ObjectMissing, StoreError, store_for

    try:
        store_for(location.rsplit("/", 1)[0], options).download(location, target)
    except ObjectMissing:
        raise BadInput(f"the {what} is missing ({location})", source=manifest, field=what.removeprefix("data file ")) from None
    except StoreError as exc:
        raise BadInput(f"cannot read the {what} ({exc})", source=location) from None


def sibling(location: str, name: str) -> str:
    """``name`` in the manifest's directory (a key relative to the manifest)."""
    if is_remote(location):
        return location.rsplit("/", 1)[0] + "/" + name
    return str(local_path(location).parent / name)


def load_json(location: str, options: "StoreOptions | None") -> dict[str, Any]:
    """The manifest at ``location`` read and parsed (:func:`manifest_object`)."""
    return manifest_object(read_location(location, options, what="manifest"), location)


def manifest_object(data: bytes, location: str) -> dict[str, Any]:
    """A manifest's bytes as the JSON object a manifest is; bad input naming ``location`` else."""
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"not JSON: {exc}", source=location) from None
    if not isinstance(raw, dict):
        raise BadInput("not a JSON object", source=location)
    return raw


def parse_time(value: Any, manifest: str, field: str) -> datetime:
    if not isinstance(value, str) or not value:
        raise BadInput("missing", source=manifest, field=field)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"not a time: {value!r}", source=manifest, field=field) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def inventory_kind(raw: Mapping[str, Any]) -> str | None:
    """``azure``, ``gcs``, ``s3`` or ``None`` from a manifest's fields."""
    if "ruleDefinition" in raw or "destinationContainer" in raw:
        return "azure"
    if "report_config" in raw or "report_shards_file_names" in raw:
        return "gcs"
    if "sourceBucket" in raw:
        return "s3"
    return None


def inventory_created(manifest: str, options: "StoreOptions | None" = None) -> datetime | None:
    """When the report at ``manifest`` was taken (S3 ``creationTimestamp``, Azure
    ``inventoryCompletionTime``, GCS ``snapshot_time``); ``None`` when it does not say.
    Jobs measure ``--min-age`` from it: objects younger than that at report time are kept."""
    return created_in(load_json(manifest, options), manifest)


def created_in(raw: Mapping[str, Any], manifest: str) -> datetime | None:
    """:func:`inventory_created` of a manifest already parsed (``raw``, read from ``manifest``)."""
    kind = inventory_kind(raw)
    if kind == "s3":
        return s3_created(raw, manifest)
    field = {"azure": "inventoryCompletionTime", "gcs": "snapshot_time"}.get(kind or "")
    return parse_time(raw.get(field), manifest, field) if field else None


def local_copies(inventory: CloudInventory, options: "StoreOptions | None", work_dir: Path | None) -> list[str]:
    """Local paths of the data files for Spark: remote ones downloaded, and local ones whose
    names Hadoop cannot take (GCS shard names hold ``:`` from their timestamp) linked under a
    safe name. The extension stays: Spark picks the codec from it."""
    from lakewarden.inventory import scratch_dir

    directory: Path | None = None

    def scratch() -> Path:
        nonlocal directory
        if directory is None:
            directory = work_dir or scratch_dir()
            directory.mkdir(parents=True, exist_ok=True)
        return directory

    paths: list[str] = []
    for index, location in enumerate(inventory.data_files):
        safe_name = f"{index:06d}-" + os.path.basename(location).replace(":", "_")
        if not is_remote(location):
            path = local_path(location)
            if not path.is_file():
                raise BadInput(f"missing data file {location}", source=inventory.manifest, field=f"files[{index}]")
            if ":" in path.name:
                link = scratch() / safe_name
                link.unlink(missing_ok=True)
                link.symlink_to(path.resolve())
                path = link
            paths.append(str(path))
            continue
        target = scratch() / safe_name
        download_location(location, str(target), options, what=f"data file files[{index}]", manifest=inventory.manifest)
        paths.append(str(target))
    return paths


def _timestamp(column: "Column", kind: str) -> "Column":
    """ISO-8601 strings, RFC 1123 strings, epoch milliseconds or timestamps -> timestamp (else null)."""
    from pyspark.sql import functions as F

    if kind in ("bigint", "int"):
        return F.timestamp_millis(column)
    if kind.startswith("timestamp"):
        return column.cast("timestamp")
    text = column.cast("string")
    # RFC 1123 ("Fri, 02 Jan 2026 03:04:05 GMT"): Spark parses no day names, so drop it first
    rfc1123 = F.regexp_replace(text, r"^[A-Za-z]{3},\s*", "")
    return F.coalesce(
        F.call_function("try_to_timestamp", text),
        F.call_function("try_to_timestamp", rfc1123, F.lit("dd MMM yyyy HH:mm:ss z")),
    )


def to_storage_inventory(
    spark: "SparkSession", report: "LocatedReport", storage_namespace: str, considered: "Considered | None" = None,
    work_dir: Path | None = None,
) -> "Callable[[], DataFrame]":
    """A function giving the rows of a located Azure or GCS report as ``physical_address, size,
    last_modified``, only inside the namespace (and only those ``considered``, when given:
    :func:`lakewarden.inventory.report_rows_in_namespace`). The columns are checked now; the
    cut, which reads every row, is made when the rows are asked for (a Parquet report's in the
    driver when it can be: :func:`lakewarden.inventory.cut_in_driver`)."""
    from pyspark.sql import functions as F

    from lakewarden.inventory import cut_in_driver, report_rows_in_namespace

    inventory: CloudInventory = report.parsed
    paths = list(report.paths)
    if inventory.file_format == "CSV":
        df = spark.read.options(header="true", quote='"', escape='"', mode="PERMISSIVE", inferSchema="false").csv(paths)
    else:
        df = spark.read.parquet(*paths)
    columns = {name.lower(): name for name in df.columns}
    name = columns.get(inventory.name_field.lower())
    if name is None:
        raise BadInput(f"data files have no {inventory.name_field} column (columns: {', '.join(df.columns)})", source=paths[0], field=inventory.name_field)
    dtypes = dict(df.dtypes)
    size_col = columns.get((inventory.size_field or "").lower())
    modified_col = columns.get((inventory.modified_field or "").lower())
    ns = parse_uri(storage_namespace)

    def rows_of(source: "DataFrame", cut: "Considered | None") -> "DataFrame":
        # columns are named by name: the cut files have the report's schema
        if inventory.row_filter is not None:
            source = source.where(inventory.row_filter(source))
        rows = source.select(
            F.col(f"`{name}`").cast("string").alias("_key"),
            (F.col(f"`{size_col}`").cast("long") if size_col else F.lit(None).cast("long")).alias("size"),
            (_timestamp(F.col(f"`{modified_col}`"), dtypes[modified_col]) if modified_col else F.lit(None).cast("timestamp")).alias("last_modified"),
        )
        rows = report_rows_in_namespace(rows, "_key", inventory.uri_root, ns, cut)
        return rows.select(F.concat(F.lit(inventory.uri_root), F.col("_key")).alias("physical_address"), "size", "last_modified")

    def read() -> "DataFrame":
        cut = cut_in_driver(spark, report, considered, work_dir=work_dir)
        return rows_of(df, considered) if cut is None else rows_of(cut, None)

    return read


def _named(field: str | None) -> "Callable[[Sequence[str]], str | None]":
    """The data file column named ``field`` (case-insensitive; the last of several, as the
    reader's map of lower-cased names keeps it)."""

    def column(names: Sequence[str]) -> str | None:
        return next((n for n in reversed(names) if field is not None and n.lower() == field.lower()), None)

    return column


def read_cloud_inventory(
    spark: "SparkSession",
    manifest: str,
    storage_namespace: str,
    *,
    store_options: "StoreOptions | None" = None,
    work_dir: str | os.PathLike[str] | None = None,
    now: datetime | None = None,
    min_age: timedelta | None = None,
    considered: "Considered | None" = None,
) -> "DataFrame":
    """The objects an Azure Blob Inventory or GCS inventory report lists under the namespace
    (only those ``considered``, when given): :func:`locate_cloud_inventory`, then
    :func:`to_storage_inventory`, read at once."""
    report = locate_cloud_inventory(manifest, storage_namespace, store_options=store_options, work_dir=work_dir, now=now, min_age=min_age)
    return to_storage_inventory(spark, report, storage_namespace, considered, work_dir=Path(work_dir) if work_dir else None)()


def locate_cloud_inventory(
    manifest: str,
    storage_namespace: str,
    *,
    store_options: "StoreOptions | None" = None,
    work_dir: str | os.PathLike[str] | None = None,
    now: datetime | None = None,
    min_age: timedelta | None = None,
    manifest_bytes: bytes | None = None,
) -> "LocatedReport":
    """An Azure Blob Inventory or GCS inventory report validated and its data files on local
    disk (no Spark): the manifest (format, fields, coverage of the namespace, age when
    ``min_age`` is given); any problem is :class:`BadInput` naming the file and field.
    ``manifest_bytes``: the manifest as read already (else it is read here)."""
    from lakewarden.inventories.cut import ReportColumns
    from lakewarden.inventory import LocatedReport

    data = manifest_bytes if manifest_bytes is not None else read_location(manifest, store_options, what="manifest")
    raw = manifest_object(data, manifest)
    kind = inventory_kind(raw)
    if kind == "azure":
        from lakewarden.inventories.azure import parse_manifest
    elif kind == "gcs":
        from lakewarden.inventories.gcs import parse_manifest
    else:
        raise BadInput("neither an Azure Blob Inventory nor a GCS inventory report manifest", source=manifest, field="ruleDefinition")
    inventory = parse_manifest(raw, manifest, storage_namespace)
    if min_age is not None:
        inventory.check_age(now or datetime.now(timezone.utc), min_age)
    paths = local_copies(inventory, store_options, Path(work_dir) if work_dir else None)
    return LocatedReport(
        kind=inventory.kind,
        manifest=manifest,
        file_format=inventory.file_format,
        paths=tuple(paths),
        uri_root=inventory.uri_root,
        columns=ReportColumns(key=_named(inventory.name_field), modified=_named(inventory.modified_field)),
        fingerprint=fingerprint_of(data),
        created=created_in(raw, manifest),
        parsed=inventory,
    )
