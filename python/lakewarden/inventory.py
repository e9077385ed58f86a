"""The storage inventory: which objects exist under a namespace, as a Spark DataFrame.

Uncommitted GC subtracts what the repository references from what storage holds. What storage
holds comes from an AWS S3 Inventory report when there is one (cheap, no listing), else from
listing the namespace. Both give the same shape, :data:`INVENTORY_SCHEMA`:
``physical_address`` (canonical URI, raw key: what :func:`lakewarden.safety.resolve_physical`
yields for the same object), ``size``, ``last_modified``.

Only objects strictly inside the namespace are returned, never anything under ``_lakefs/`` under
any reading of the key (percent-decoding, dot segments, backslashes): leaving an object out of
the storage inventory can only keep it, never delete it, so the filter is conservative.

S3 Inventory (https://docs.aws.amazon.com/AmazonS3/latest/userguide/storage-inventory.html):
``manifest.json`` lists the data files and their ``fileSchema``; ``manifest.checksum`` holds the
manifest's MD5. CSV data files are gzip'd, headerless, columns in ``fileSchema`` order, keys
URL-encoded (form encoding: ``+`` is a space). Parquet/ORC files carry snake_case columns.
Spark cannot read ``s3://`` here (no hadoop-aws), so remote data files are downloaded in
parallel to a local work directory first, and checked against the manifest's MD5s.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

from lakewarden.errors import BadInput
from lakewarden.timestamps import rfc3339
from lakewarden.safety import LAKEFS_DIR, ParsedURI, parse_uri

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession

    from lakewarden.inventories.cut import CutFiles, ReportColumns
    from lakewarden.stores import StoreOptions

log = logging.getLogger(__name__)

INVENTORY_SCHEMA = "physical_address string, size long, last_modified timestamp"
FORMATS = {"csv": "CSV", "parquet": "Parquet", "orc": "ORC"}
#: Canonical field names (lower case, no underscores) -> the role they play here.
FIELD_BUCKET, FIELD_KEY, FIELD_SIZE, FIELD_MODIFIED = "bucket", "key", "size", "lastmodifieddate"
FIELD_LATEST, FIELD_DELETE_MARKER = "islatest", "isdeletemarker"
#: the only fields of an S3 report that :func:`inventory_rows` reads (an optimized run's cut in
#: the driver keeps no other column: lakewarden.inventories.cut.ReportColumns)
S3_FIELDS_READ = frozenset({FIELD_BUCKET, FIELD_KEY, FIELD_SIZE, FIELD_MODIFIED, FIELD_LATEST, FIELD_DELETE_MARKER})


def _canonical_field(name: str) -> str:
    return name.replace("_", "").replace(" ", "").lower()


# -- manifests --------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataFile:
    key: str
    size: int | None
    md5: str | None


@dataclass(frozen=True)
class Manifest:
    """A parsed, checksum-verified ``manifest.json``."""

    location: str
    source_bucket: str
    destination_bucket: str
    file_format: str
    fields: tuple[str, ...]
    files: tuple[DataFile, ...]
    raw: Mapping[str, Any] = field(repr=False)

    def field_index(self) -> dict[str, str]:
        """Canonical field name -> the name as the manifest spells it."""
        return {_canonical_field(name): name for name in self.fields}


def parse_file_schema(file_format: str, schema: str) -> tuple[str, ...]:
    """Field names of a manifest's ``fileSchema`` (CSV list, Parquet message or ORC struct)."""
    text = schema.strip()
    if file_format == "Parquet" or text.startswith("message"):
        return tuple(re.findall(r"(?:required|optional|repeated)\s+\w+\s+([A-Za-z_][\w]*)", text))
    if file_format == "ORC" or text.startswith("struct<"):
        inner = text[text.find("<") + 1 : text.rfind(">")] if "<" in text else text
        return tuple(m for m in re.findall(r"(?:^|,)\s*([A-Za-z_][\w]*)\s*:", inner))
    return tuple(part.strip() for part in text.split(",") if part.strip())


def load_manifest(
    location: str, *, s3_options: Mapping[str, Any] | None = None, require_checksum: bool = True, data: bytes | None = None
) -> Manifest:
    """Read and validate a manifest (local path, ``file:`` or ``s3://`` URI); :class:`BadInput` if
    wrong. ``data``: the manifest's bytes as read already (its checksum file is still read)."""
    source = location
    if data is None:
        data = _read_bytes(location, s3_options, what="manifest")
    checksum_location = _sibling(location, "manifest.checksum")
    try:
        expected = _read_bytes(checksum_location, s3_options, what="checksum").decode("ascii", "replace").split()
    except BadInput:
        if require_checksum:
            raise
        expected = []
    actual = hashlib.md5(data).hexdigest()
    if expected and expected[0].lower() != actual:
        raise BadInput(f"checksum mismatch: manifest.json has MD5 {actual}, manifest.checksum says {expected[0]}", source=checksum_location, field="md5")
    if require_checksum and not expected:
        raise BadInput("empty checksum file", source=checksum_location)
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"not JSON: {exc}", source=source) from exc
    if not isinstance(raw, dict):
        raise BadInput("not a JSON object", source=source)
    file_format = FORMATS.get(str(raw.get("fileFormat", "")).lower())
    if file_format is None:
        raise BadInput(f"unsupported {raw.get('fileFormat')!r} (CSV, Parquet or ORC)", source=source, field="fileFormat")
    schema = raw.get("fileSchema")
    if not isinstance(schema, str) or not schema.strip():
        raise BadInput("missing", source=source, field="fileSchema")
    fields = parse_file_schema(file_format, schema)
    if FIELD_KEY not in {_canonical_field(name) for name in fields}:
        raise BadInput(f"has no Key field ({schema!r})", source=source, field="fileSchema")
    files_raw = raw.get("files")
    if not isinstance(files_raw, list) or not files_raw:
        raise BadInput("missing or empty", source=source, field="files")
    files = []
    for index, entry in enumerate(files_raw):
        if not isinstance(entry, dict) or not isinstance(entry.get("key"), str) or not entry["key"]:
            raise BadInput("missing key", source=source, field=f"files[{index}].key")
        size = entry.get("size")
        md5 = entry.get("MD5checksum")
        files.append(DataFile(entry["key"], int(size) if isinstance(size, (int, str)) and str(size).isdigit() else None, md5 if isinstance(md5, str) else None))
    source_bucket = raw.get("sourceBucket")
    if not isinstance(source_bucket, str) or not source_bucket:
        raise BadInput("missing", source=source, field="sourceBucket")
    destination = str(raw.get("destinationBucket") or "")
    return Manifest(
        location=location,
        source_bucket=source_bucket,
        destination_bucket=destination.rsplit(":", 1)[-1] if destination.startswith("arn:") else destination,
        file_format=file_format,
        fields=fields,
        files=tuple(files),
        raw=raw,
    )


def _is_s3(location: str) -> bool:
    return bool(re.match(r"(?i)^s3[an]?://", location))


def _local(location: str) -> Path:
    if location.startswith("file:"):
        return Path(parse_uri(location).path)
    return Path(location).expanduser().resolve()


def _sibling(location: str, name: str) -> str:
    if _is_s3(location):
        return location.rsplit("/", 1)[0] + "/" + name
    return str(_local(location).parent / name)


def _read_bytes(location: str, s3_options: Mapping[str, Any] | None, *, what: str) -> bytes:
    if _is_s3(location):
        from botocore.exceptions import ClientError

        from lakewarden.s3client import s3_client

        parsed = parse_uri(location)
        try:
            return s3_client(dict(s3_options or {})).get_object(Bucket=parsed.authority, Key=parsed.path[1:])["Body"].read()
        except ClientError as exc:
            raise BadInput(f"cannot read the {what}: {exc.response.get('Error', {}).get('Code')}", source=location) from exc
    path = _local(location)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read the {what}: {exc.strerror or exc}", source=str(path)) from exc


# -- data files -------------------------------------------------------------------------------


def _md5_file(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_data_file(manifest: Manifest, index: int, entry: DataFile, path: Path, verify: bool) -> None:
    if entry.size is not None and path.stat().st_size != entry.size:
        raise BadInput(f"data file {entry.key} is {path.stat().st_size} bytes, the manifest says {entry.size}", source=manifest.location, field=f"files[{index}].size")
    if verify and entry.md5 and _md5_file(path) != entry.md5.lower():
        raise BadInput(f"data file {entry.key} does not match its MD5", source=manifest.location, field=f"files[{index}].MD5checksum")


def _locate_local(manifest: Manifest, entry: DataFile) -> Path | None:
    """Where a local copy of an inventory keeps data file ``entry``.

    Keys are relative to the destination bucket; a local copy roots that bucket at one of the
    manifest's ancestors (``<root>/<key>`` or ``<root>/<destination bucket>/<key>``).
    """
    if entry.key.startswith(("/", "file:")):
        candidate = _local(entry.key)
        return candidate if candidate.is_file() else None
    here = _local(manifest.location).parent
    for root in (here, *here.parents):
        candidates = [root / entry.key]
        if manifest.destination_bucket:
            candidates.append(root / manifest.destination_bucket / entry.key)
        for candidate in candidates:
            if candidate.is_file():
                return candidate
    return None


def local_data_files(manifest: Manifest, *, s3_options: Mapping[str, Any] | None = None, work_dir: Path | None = None, verify: bool = True, threads: int = 8) -> list[Path]:
    """Local paths of every data file, downloading them (in parallel) for an ``s3://`` manifest."""
    if not _is_s3(manifest.location):
        paths = []
        for index, entry in enumerate(manifest.files):
            path = _locate_local(manifest, entry)
            if path is None:
                raise BadInput(f"missing data file {entry.key}", source=manifest.location, field=f"files[{index}].key")
            _check_data_file(manifest, index, entry, path, verify)
            paths.append(path)
        return paths
    directory = work_dir or scratch_dir()
    directory.mkdir(parents=True, exist_ok=True)

    def fetch(item: tuple[int, DataFile]) -> Path:
        from botocore.exceptions import ClientError

        from lakewarden.s3client import s3_client

        index, entry = item
        # keep the extension: Spark picks the codec (.gz) from the file name
        target = directory / f"{index:06d}-{os.path.basename(entry.key)}"
        try:
            s3_client(dict(s3_options or {})).download_file(manifest.destination_bucket, entry.key, str(target))
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            raise BadInput(f"missing data file s3://{manifest.destination_bucket}/{entry.key} ({code})", source=manifest.location, field=f"files[{index}].key") from exc
        _check_data_file(manifest, index, entry, target, verify)
        return target

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        return list(pool.map(fetch, enumerate(manifest.files)))


def scratch_dir() -> Path:
    """A download directory that lives as long as the process (Spark reads lazily), removed at
    exit: inventory copies can be gigabytes, and a temporary directory is not cleaned by itself."""
    path = Path(tempfile.mkdtemp(prefix="lakewarden-inventory-"))
    atexit.register(shutil.rmtree, path, True)
    return path


# -- namespace filtering (shared by inventories and listings) ----------------------------------


def _namespace(storage_namespace: str) -> ParsedURI:
    try:
        return parse_uri(storage_namespace)
    except ValueError as exc:
        raise BadInput(str(exc), field="storage_namespace") from exc


def _key_prefix(ns: ParsedURI) -> str:
    """The key/path prefix every object of the namespace starts with (ends with '/' or is empty)."""
    path = ns.path.strip("/")
    if ns.scheme == "file":
        return "/" + path + "/" if path else "/"
    return path + "/" if path else ""


def _hidden(relative: "Column") -> "Column":
    """True for relative keys that are metadata, or ambiguous, under some reading: excluded.

    A key with no ``%``, ``+`` or backslash reads the same under every reading (URL decoding
    changes only ``%XX`` and ``+``; only a backslash becomes ``/``), so it takes only the raw
    reading's checks; the rest take all of them. The same answer, without a dozen regular
    expressions per row for the common key (an inventory of 1M keys: seconds)."""
    from pyspark.sql import functions as F

    return F.when(_plain(relative), _hidden_as_read(relative)).otherwise(_hidden_in_any_reading(relative))


def _plain(relative: "Column") -> "Column":
    """True for keys every reading reads the same (no ``%``, ``+`` or backslash)."""
    return ~(relative.contains("%") | relative.contains("+") | relative.contains("\\"))


def _hidden_in_any_reading(relative: "Column") -> "Column":
    """:func:`_hidden` for any key: raw, URL-decoded once and twice, backslashes as ``/``."""
    from pyspark.sql import functions as F

    readings = [relative, F.call_function("try_url_decode", relative)]
    readings.append(F.call_function("try_url_decode", readings[1]))
    # a reading that cannot be decoded is ambiguous: keep it out
    hidden = readings[1].isNull() | readings[2].isNull()
    for reading in readings:
        hidden = hidden | _hidden_as_read(F.regexp_replace(reading, r"\\", "/"))
    return hidden


def _hidden_as_read(key: "Column") -> "Column":
    """One reading's checks: under ``_lakefs/``, lakeFS's ``dummy`` marker at the root, a dot
    segment that could climb out, or nothing but slashes.

    Each check's regular expression runs only on the keys that hold what it needs to match (the
    word, a dot at the start or after a slash, a leading slash): the same answer, and a plain
    key costs a few byte searches instead of four regular expressions (1M inventory keys: the
    expressions were most of the 8.5 s of reading the inventory)."""
    from pyspark.sql import functions as F

    lowered = F.lower(key)
    return (
        (lowered.contains("_lakefs") & lowered.rlike(r"^[/]*(\./+)*_lakefs(/|$)"))
        | (lowered.contains("dummy") & lowered.rlike(r"^[/]*(\./+)*dummy/*$"))  # lakeFS's marker object at the root
        | ((key.startswith(".") | key.contains("/.")) & key.rlike(r"(^|/)\.\.?(/|$)"))
        | (((key == "") | key.startswith("/")) & (F.regexp_replace(key, "/", "") == ""))
    )


def restrict_to_namespace(df: "DataFrame", key_column: str, ns: ParsedURI, *, rereadable: bool = False) -> "DataFrame":
    """Rows whose raw key is strictly inside ``ns`` and not (under any reading) in ``_lakefs/``.

    ``rereadable``: ``df`` is files that cost little to read again (an inventory report's data
    files, not a listing's list calls). The rows are then judged in two reads of them, the plain
    keys by their raw reading's checks and the rest by every reading's, instead of one read
    with a per-row choice between the two: the choice made the JVM compute parts of both for
    every key (1M report keys, 2 cores: 3.7-5.2 s against 1.5-2.3 s). The same rows either way."""
    from pyspark.sql import functions as F

    prefix = _key_prefix(ns)
    key = F.col(key_column)
    inside = key.isNotNull() & (key.startswith(prefix) if prefix else F.lit(True))
    relative = F.substring(key, len(prefix) + 1, 1 << 30)
    if not rereadable:
        return df.where(inside & ~_hidden(relative))
    plain = _plain(relative)
    return df.where(inside & plain & ~_hidden_as_read(relative)).unionAll(
        df.where(inside & ~plain & ~_hidden_in_any_reading(relative))
    )


@dataclass(frozen=True)
class Considered:
    """What an optimized uncommitted run keeps of a storage inventory report: objects written
    after ``cutoff`` (the previous run's storage cutoff), and objects ``previous`` lists (that
    run's uncommitted inventory: one ``physical_address`` column). Everything else a range read
    by some run referenced, and is no candidate either way."""

    cutoff: datetime
    previous: "DataFrame"
    #: where ``previous`` is read from (its Parquet files): a Parquet report is then cut in the
    #: driver (:func:`lakewarden.inventories.cut.cut_parquet_report`) before Spark reads it
    previous_location: Path | None = None
    #: that cut, when made already (of the same report's files, by the same cutoff and previous
    #: inventory: :func:`cut_report`)
    cut: "CutFiles | None" = None


def keep_considered(rows: "DataFrame", key_column: str, uri_root: str, considered: Considered) -> "DataFrame":
    """``rows`` (raw keys in ``key_column``; an object's address is ``uri_root`` + key) cut to
    ``considered``. Filters commute, so a report cut before its namespace checks keeps the same
    rows as one cut after them, and the checks and the address's text then run on the tenth of a
    report the run keeps (1% churn) instead of all of it (:func:`report_rows_in_namespace`). An
    unknown ``last_modified`` is not "written after": such an object stays only when the previous
    inventory lists it (the models treat unknown age as young).

    One filter, ``written after OR key IN (previous keys)``: Spark runs the IN as an existence
    join, each report row once with a flag, the previous keys broadcast as they are. A left join
    needed them distinct first (a shuffle) so as not to repeat a row; a union of the two halves
    read the report twice. 1M report rows, 1% churn, 2 cores: the optimized run's load 6.4-6.9 s
    and its storage phase 1.75-1.80 s, against 7.8-8.8 s and 1.93-2.14 s with the left join. A
    NULL key or a NULL among the previous keys keeps no row the left join would not.

    The keys are compared as strings, exactly. A 64-bit hash alone would let a committed object
    whose key collides with a previous key into the candidates, where only the new ranges'
    entries are there to keep it: never. Exact forms of a hash test were measured and did not
    pay (8.45M report rows, 852k previous keys, 2 cores, one JVM per form): hashes, then the
    rows that pass checked by key, 3.0-3.6 s plus 2.0-2.5 s (the check builds the same string
    relation) against 4.0-4.9 s; the hash as the join key with the key's equality as the join's
    condition, 3.7-4.8 s against 4.0-4.9 s, within the noise. Reading the report with no key
    test at all took 1.0-1.3 s of those.

    A Parquet report is cut before Spark reads it, in the driver, when it can be
    (:func:`cut_in_driver`): this cut is then not made. It stays for listings, CSV and ORC
    reports and the reports the driver declines."""
    from pyspark.sql import functions as F

    previous_keys = considered.previous.where(F.col("physical_address").startswith(uri_root)).select(
        F.substring(F.col("physical_address"), len(uri_root) + 1, 1 << 30).alias("previous_key")
    )
    # the literal the models compare with (int_gc_uncommitted__candidate_objects)
    cutoff = f"to_timestamp('{rfc3339(considered.cutoff)}')"
    return rows.sparkSession.sql(
        "select * from {rows} "
        f"where coalesce(last_modified > {cutoff}, false) or `{key_column}` in (select previous_key from {{previous}})",
        rows=rows,
        previous=previous_keys,
    )


def cut_report(
    report: "LocatedReport", *, cutoff: datetime, previous_location: Path, work_dir: Path | None = None
) -> "CutFiles | None":
    """The located report's data files cut in the driver (no Spark:
    :func:`lakewarden.inventories.cut.cut_parquet_report`) to the objects written after
    ``cutoff`` and those the previous uncommitted inventory at ``previous_location`` lists; None
    when the cut is not made there: not a Parquet report, or a report or previous inventory the
    cut declines. Spark then cuts the report (:func:`keep_considered`)."""
    if report.file_format != "Parquet":
        return None
    from lakewarden.inventories.cut import cut_parquet_report

    return cut_parquet_report(
        report.paths, columns=report.columns, uri_root=report.uri_root, previous_location=previous_location,
        cutoff=cutoff, work_dir=Path(tempfile.mkdtemp(prefix="cut-", dir=work_dir or scratch_dir())),
    )


def cut_in_driver(
    spark: "SparkSession", report: "LocatedReport", considered: Considered | None, *, work_dir: Path | None = None
) -> "DataFrame | None":
    """The report cut to ``considered`` in the driver, as a DataFrame of the cut files (the
    report's own schema: the reader maps their columns as it maps the report's); the cut made
    before when ``considered`` holds it (a job makes it while its JVM boots), else made now
    (:func:`cut_report`). None when it is not made in the driver: Spark then cuts the report."""
    if considered is None:
        return None
    cut = considered.cut
    if cut is None and considered.previous_location is not None:
        cut = cut_report(report, cutoff=considered.cutoff, previous_location=considered.previous_location, work_dir=work_dir)
    return None if cut is None else spark.read.parquet(*cut.paths)


def report_rows_in_namespace(
    rows: "DataFrame", key_column: str, uri_root: str, ns: ParsedURI, considered: Considered | None
) -> "DataFrame":
    """An inventory report's rows (raw keys in ``key_column``) that are inside ``ns`` and not
    under ``_lakefs/`` (:func:`restrict_to_namespace`, in two reads of the report's files), cut
    first to ``considered`` when an optimized run gives it (:func:`keep_considered`). Every
    report reader (S3, Azure, GCS) goes through here.

    The cut rows are checkpointed locally (kept by the executors, memory then disk): Spark's
    optimiser would otherwise push the checks back below the cut's join, onto every row of the
    report again. 1M report rows, 1% churn, 2 cores: 1.9-2.9 s against 3.8-4.5 s. A lost
    executor fails the query; it cannot change a row. Planning the checkpoint waits for the
    previous keys' broadcast (1.8 s at 852k keys) before the models start; a lazy ``persist``
    instead, which would build it beside the models, made the optimized run slower, not faster
    (runs in turn; 8.45M report rows: 34.8-36.8 s against 31.7-34.2 s; 1M: 14.9-16.6 s against
    14.3-15.9 s)."""
    if considered is not None:
        rows = keep_considered(rows, key_column, uri_root, considered).localCheckpoint(eager=False)
    return restrict_to_namespace(rows, key_column, ns, rereadable=True)


# -- S3 Inventory -> DataFrame -----------------------------------------------------------------


@dataclass(frozen=True)
class LocatedReport:
    """An inventory report (S3 Inventory, Azure Blob Inventory or a GCS inventory report)
    validated and its data files on local disk: all a reader needs that takes no Spark. Made
    by :func:`locate_report`; read by :func:`report_rows`."""

    kind: str  # "s3" | "azure" | "gcs"
    manifest: str
    file_format: str  # "CSV" | "Parquet" | "ORC"
    paths: tuple[str, ...]
    #: an object's address is this root and the row's key
    uri_root: str
    #: which data file columns hold the key and the modification time (the cut in the driver)
    columns: "ReportColumns"
    #: SHA-256 of the manifest's bytes, the ones validated here (the report's identity:
    #: :func:`lakewarden.inventories.common.fingerprint_of`)
    fingerprint: str = ""
    #: when the report was taken, as its manifest says (None: it does not say)
    created: datetime | None = None
    #: the reader's own view of the manifest (:class:`Manifest` or :class:`~lakewarden.inventories.common.CloudInventory`)
    parsed: Any = field(repr=False, default=None)


def locate_report(
    manifest: str,
    storage_namespace: str,
    *,
    s3_options: Mapping[str, Any] | None = None,
    store_options: "StoreOptions | None" = None,
    work_dir: str | os.PathLike[str] | None = None,
    now: datetime | None = None,
    min_age: timedelta | None = None,
) -> LocatedReport:
    """The report at ``manifest`` validated (whichever kind its fields say) and its data files
    fetched: no Spark, so a job does it while its JVM boots. Bad input names file and field.
    The manifest is read once: its kind, its validation, its fingerprint and when it was taken
    all come from the same bytes (on a remote store, one GET; and no second read can see a
    manifest replaced in between)."""
    from lakewarden.inventories.common import inventory_kind, locate_cloud_inventory, manifest_object, read_location

    options = _store_options(s3_options, store_options)
    data = read_location(manifest, options, what="manifest")
    if inventory_kind(manifest_object(data, manifest)) in ("azure", "gcs"):
        return locate_cloud_inventory(
            manifest, storage_namespace, store_options=options, work_dir=work_dir, now=now, min_age=min_age, manifest_bytes=data
        )
    return locate_inventory(
        manifest, storage_namespace, s3_options=s3_options, work_dir=work_dir, now=now, min_age=min_age, manifest_bytes=data
    )


def report_rows(
    spark: "SparkSession", report: LocatedReport, storage_namespace: str, considered: Considered | None = None,
    work_dir: str | os.PathLike[str] | None = None,
) -> "Callable[[], DataFrame]":
    """A located report's data files checked (their columns) now, and a function giving its
    rows under the namespace (:data:`INVENTORY_SCHEMA`; only those ``considered``, when given):
    the cut, which reads every row, is made when the rows are asked for."""
    directory = Path(work_dir) if work_dir else None
    if report.kind == "s3":
        return inventory_rows(spark, report, storage_namespace, considered, work_dir=directory)
    from lakewarden.inventories.common import to_storage_inventory

    return to_storage_inventory(spark, report, storage_namespace, considered, work_dir=directory)


def read_inventory(
    spark: "SparkSession",
    manifest: str,
    storage_namespace: str,
    *,
    s3_options: Mapping[str, Any] | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    require_checksum: bool = True,
    verify_data_files: bool = True,
    now: datetime | None = None,
    min_age: timedelta | None = None,
    considered: Considered | None = None,
) -> "DataFrame":
    """The objects an S3 Inventory report lists under ``storage_namespace`` (:data:`INVENTORY_SCHEMA`),
    only those ``considered`` when given (:func:`keep_considered`): :func:`locate_inventory`,
    then :func:`inventory_rows`, read at once."""
    report = locate_inventory(
        manifest, storage_namespace, s3_options=s3_options, work_dir=work_dir, require_checksum=require_checksum,
        verify_data_files=verify_data_files, now=now, min_age=min_age,
    )
    return inventory_rows(spark, report, storage_namespace, considered, work_dir=Path(work_dir) if work_dir else None)()


def locate_inventory(
    manifest: str,
    storage_namespace: str,
    *,
    s3_options: Mapping[str, Any] | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    require_checksum: bool = True,
    verify_data_files: bool = True,
    now: datetime | None = None,
    min_age: timedelta | None = None,
    manifest_bytes: bytes | None = None,
) -> LocatedReport:
    """An S3 Inventory report validated and its data files on local disk (no Spark).

    Validates before reading: checksum, format, ``fileSchema`` with a Key, the inventory's
    bucket is the namespace's, its age when ``min_age`` is given (the same check as Azure's and
    GCS's: a report older than ``min_age`` at ``now``, or without ``creationTimestamp``, cannot
    vouch for objects younger than that), every data file present (and matching its size/MD5).
    ``manifest_bytes``: the manifest as read already (else it is read here).
    """
    from lakewarden.inventories.common import S3_CREATED_FIELD, check_age, fingerprint_of, s3_created
    from lakewarden.inventories.cut import ReportColumns

    ns = _namespace(storage_namespace)
    data = manifest_bytes if manifest_bytes is not None else _read_bytes(manifest, s3_options, what="manifest")
    parsed = load_manifest(manifest, s3_options=s3_options, require_checksum=require_checksum, data=data)
    if ns.scheme != "s3":
        raise BadInput(f"an S3 inventory cannot describe the {ns.scheme}:// namespace {storage_namespace}", source=manifest, field="sourceBucket")
    if parsed.source_bucket != ns.authority:
        raise BadInput(f"inventory of bucket {parsed.source_bucket!r}, the storage namespace is in {ns.authority!r}", source=manifest, field="sourceBucket")
    if min_age is not None:
        created = s3_created(parsed.raw, manifest, required=True)
        assert created is not None
        check_age(created, now or datetime.now(timezone.utc), min_age, manifest=manifest, field=S3_CREATED_FIELD)
    paths = local_data_files(parsed, s3_options=s3_options, work_dir=Path(work_dir) if work_dir else None, verify=verify_data_files)
    return LocatedReport(
        kind="s3",
        manifest=manifest,
        file_format=parsed.file_format,
        paths=tuple(str(path) for path in paths),
        uri_root=f"s3://{ns.authority}/",
        columns=ReportColumns(key=_field_of(FIELD_KEY), modified=_field_of(FIELD_MODIFIED), read=_fields_read),
        fingerprint=fingerprint_of(data),
        created=s3_created(parsed.raw, manifest),
        parsed=parsed,
    )


def inventory_rows(
    spark: "SparkSession", report: LocatedReport, storage_namespace: str, considered: Considered | None = None,
    *, work_dir: Path | None = None,
) -> "Callable[[], DataFrame]":
    """A located S3 Inventory report's columns checked now, and a function giving its rows
    under ``storage_namespace`` (only those ``considered`` when given): the cut, which reads
    every row of the report, is made when the rows are asked for (an optimized run asks in the
    thread that writes its storage table, beside the models). Delete markers and non-current
    versions are left out. A ``LastModifiedDate`` missing from the schema gives null
    ``last_modified`` (callers must treat unknown age as too young)."""
    from pyspark.sql import functions as F

    ns = _namespace(storage_namespace)
    parsed: Manifest = report.parsed
    files = list(report.paths)
    names = parsed.field_index()

    if parsed.file_format == "CSV":
        columns = [f"c{i}" for i in range(len(parsed.fields))]
        by_field = {_canonical_field(name): f"c{i}" for i, name in enumerate(parsed.fields)}
        schema = ", ".join(f"`{column}` string" for column in columns)
        df = spark.read.schema(schema).options(header="false", quote='"', escape='"', mode="PERMISSIVE").csv(files)
        key = F.call_function("try_url_decode", F.col(by_field[FIELD_KEY]))
        size = F.col(by_field[FIELD_SIZE]).cast("long") if FIELD_SIZE in by_field else F.lit(None).cast("long")
        modified = F.col(by_field[FIELD_MODIFIED]).cast("timestamp") if FIELD_MODIFIED in by_field else F.lit(None).cast("timestamp")
        bucket = F.col(by_field[FIELD_BUCKET]) if FIELD_BUCKET in by_field else None
        latest = F.lower(F.col(by_field[FIELD_LATEST])) if FIELD_LATEST in by_field else None
        marker = F.lower(F.col(by_field[FIELD_DELETE_MARKER])) if FIELD_DELETE_MARKER in by_field else None
        truthy = F.lit("true")
    else:
        df = spark.read.format(parsed.file_format.lower()).load(files)
        actual = {_canonical_field(column): column for column in df.columns}
        if FIELD_KEY not in actual:
            raise BadInput(f"data files have no key column (columns: {', '.join(df.columns)})", source=files[0], field=names.get(FIELD_KEY, "key"))
        by_field = actual
        key = F.col(actual[FIELD_KEY]).cast("string")
        size = F.col(actual[FIELD_SIZE]).cast("long") if FIELD_SIZE in actual else F.lit(None).cast("long")
        if FIELD_MODIFIED in actual:
            column = F.col(actual[FIELD_MODIFIED])
            kind = dict(df.dtypes)[actual[FIELD_MODIFIED]]
            modified = F.timestamp_millis(column) if kind in ("bigint", "int") else column.cast("timestamp")
        else:
            modified = F.lit(None).cast("timestamp")
        bucket = F.col(actual[FIELD_BUCKET]).cast("string") if FIELD_BUCKET in actual else None
        latest = F.col(actual[FIELD_LATEST]).cast("string") if FIELD_LATEST in actual else None
        marker = F.col(actual[FIELD_DELETE_MARKER]).cast("string") if FIELD_DELETE_MARKER in actual else None
        truthy = F.lit("true")

    root = report.uri_root

    def rows_of(source: "DataFrame", cut: Considered | None) -> "DataFrame":
        # the column expressions name columns by name: the cut files have the report's schema
        rows = source.select(
            key.alias("key"),
            size.alias("size"),
            modified.alias("last_modified"),
            (bucket if bucket is not None else F.lit(ns.authority)).alias("bucket"),
            (F.coalesce(latest, F.lit("true")) == truthy if latest is not None else F.lit(True)).alias("is_latest"),
            (F.coalesce(marker, F.lit("false")) == truthy if marker is not None else F.lit(False)).alias("is_delete_marker"),
        )
        rows = rows.where((F.col("bucket") == ns.authority) & F.col("is_latest") & ~F.col("is_delete_marker"))
        rows = report_rows_in_namespace(rows, "key", root, ns, cut)
        return rows.select(
            F.concat(F.lit(root), F.col("key")).alias("physical_address"),
            F.col("size"),
            F.col("last_modified"),
        )

    def read() -> "DataFrame":
        cut = cut_in_driver(spark, report, considered, work_dir=work_dir)
        return rows_of(df, considered) if cut is None else rows_of(cut, None)

    return read


def _field_of(canonical: str) -> "Callable[[Sequence[str]], str | None]":
    """The column of a Parquet or ORC report holding ``canonical`` (matched as the reader
    matches it: :func:`_canonical_field`)."""

    def column(names: Sequence[str]) -> str | None:
        # the last of several, as the reader's map of canonical names to columns keeps it
        return next((name for name in reversed(names) if _canonical_field(name) == canonical), None)

    return column


def _fields_read(names: Sequence[str]) -> list[str]:
    """The columns of a Parquet or ORC report that :func:`inventory_rows` reads: those holding one
    of :data:`S3_FIELDS_READ` (every column of the name: the reader keeps the last)."""
    return [name for name in names if _canonical_field(name) in S3_FIELDS_READ]


# -- listing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListUnit:
    """A piece of the namespace one task lists: ``deep`` = everything under ``prefix``,
    ``shallow`` = only objects directly at ``prefix`` (its sub-prefixes are other units)."""

    prefix: str
    deep: bool


@dataclass(frozen=True)
class _Lister:
    """Runs in Spark tasks: lists units through the namespace's store, yields
    ``(physical_address, size, last_modified)``."""

    storage_namespace: str
    options: "StoreOptions"

    def __call__(self, units: Iterable[ListUnit]) -> Iterator[tuple[str, int, datetime]]:
        from lakewarden.stores import store_for

        ns = parse_uri(self.storage_namespace)
        store = store_for(self.storage_namespace, self.options)
        for unit in units:
            for listed in store.list(_prefix_uri(ns, unit.prefix), deep=unit.deep):
                yield (listed.uri, listed.size, listed.last_modified)


def _uri_root(ns: ParsedURI) -> str:
    """What every object URI of ``ns``'s store starts with, before the key/path prefix."""
    return "file://" if ns.scheme == "file" else f"{ns.scheme}://{ns.authority}/"


def _prefix_uri(ns: ParsedURI, prefix: str) -> str:
    return _uri_root(ns) + prefix


def _store_options(s3_options: Mapping[str, Any] | None, store_options: "StoreOptions | None") -> "StoreOptions":
    from lakewarden.stores import StoreOptions

    return store_options if store_options is not None else StoreOptions.from_s3_options(s3_options)


def plan_listing(
    storage_namespace: str,
    *,
    s3_options: Mapping[str, Any] | None = None,
    target_units: int = 64,
    max_depth: int = 3,
    max_pages: int = 5,
    store_options: "StoreOptions | None" = None,
) -> list[ListUnit]:
    """Split the namespace into units to list in parallel (breadth-first, by '/' prefixes).

    Only prefixes are enumerated on the driver, ``max_pages`` pages (of 1,000 entries) per level
    at most; a level with more entries than that becomes one ``deep`` unit rather than being
    paged through here. The namespace's ``_lakefs/`` is never a unit.
    """
    from lakewarden.stores import store_for

    ns = _namespace(storage_namespace)
    store = store_for(storage_namespace, _store_options(s3_options, store_options))
    root = _key_prefix(ns)
    uri_root = _uri_root(ns)
    units: list[ListUnit] = []
    frontier = [root]
    for depth in range(max_depth):
        if not frontier:
            break
        next_frontier: list[str] = []
        for prefix in frontier:
            if depth > 0 and len(units) + len(frontier) + len(next_frontier) >= target_units:
                units.append(ListUnit(prefix, deep=True))
                continue
            children = store.children(_prefix_uri(ns, prefix), max_entries=max_pages * 1000)
            if children is None:
                units.append(ListUnit(prefix, deep=True))
                continue
            units.append(ListUnit(prefix, deep=False))
            for child_uri in children:
                child = child_uri[len(uri_root):]
                if prefix == root and child[len(root):].strip("/").casefold() == LAKEFS_DIR:
                    continue
                next_frontier.append(child)
        frontier = next_frontier
    units += [ListUnit(prefix, deep=True) for prefix in frontier]
    return units


#: A namespace of at most this many objects (outside ``_lakefs/``) is listed by the driver
#: itself and handed to Spark as one Arrow table: a Spark-task listing starts Python workers
#: and schedules a task per unit, 3.6 s for the demo's 746 objects. The driver lists the
#: planned units until it has seen one object more than this, then drops what it listed and
#: lets the tasks list everything: its memory stays bounded by this constant, and a large
#: namespace pays at most this many objects' list calls twice (ten pages of 1,000).
LIST_ON_DRIVER_UP_TO = 10_000


def _listed_on_driver(
    spark: "SparkSession", storage_namespace: str, options: "StoreOptions", units: list[ListUnit]
) -> "DataFrame | None":
    """The namespace's objects as a DataFrame when there are at most :data:`LIST_ON_DRIVER_UP_TO`
    of them, else None (listed by the same lister the tasks run, unit by unit)."""
    import pyarrow as pa

    addresses: list[str] = []
    sizes: list[int] = []
    modified: list[datetime] = []
    for address, size, last_modified in _Lister(storage_namespace, options)(iter(units)):
        if len(addresses) >= LIST_ON_DRIVER_UP_TO:
            return None
        addresses.append(address)
        sizes.append(size)
        modified.append(last_modified)
    table = pa.table(
        {
            "physical_address": pa.array(addresses, pa.string()),
            "size": pa.array(sizes, pa.int64()),
            "last_modified": pa.array(modified, pa.timestamp("us", tz="UTC")),
        }
    )
    # an Arrow table becomes a local relation in the JVM (no Python worker)
    return spark.createDataFrame(table).selectExpr(
        "physical_address", "cast(size as long) as size", "cast(last_modified as timestamp) as last_modified"
    )


#: the schemes :func:`list_namespace` lists (``local://`` is listed as its ``file://`` directory)
LISTABLE_SCHEMES = ("file", "s3", "https", "gs")


def list_namespace(
    spark: "SparkSession",
    storage_namespace: str,
    *,
    s3_options: Mapping[str, Any] | None = None,
    parallelism: int | None = None,
    store_options: "StoreOptions | None" = None,
) -> "DataFrame":
    """Every object under the namespace (:data:`INVENTORY_SCHEMA`), listed in Spark tasks.

    The driver only plans prefixes (:func:`plan_listing`); tasks list them through the
    namespace's store (:mod:`lakewarden.stores`: ``os.walk``, S3 ListObjectsV2, Azure List
    Blobs, GCS objects.list), so a listing of any size never passes through the driver. A
    small namespace is the exception (:data:`LIST_ON_DRIVER_UP_TO`).
    """
    from pyspark.sql import functions as F

    from lakewarden.sweep import ensure_python_workers

    ns = _namespace(storage_namespace)
    if ns.scheme not in LISTABLE_SCHEMES:
        raise BadInput(f"cannot list {ns.scheme}:// namespaces", field="storage_namespace")
    options = _store_options({k: v for k, v in (s3_options or {}).items() if v is not None}, store_options)
    target = max(parallelism or spark.sparkContext.defaultParallelism * 8, 1)
    units = plan_listing(storage_namespace, target_units=target, store_options=options)
    small = _listed_on_driver(spark, storage_namespace, options, units)
    if small is not None:
        log.info("listing %s on the driver: %d unit(s), at most %d objects", storage_namespace, len(units), LIST_ON_DRIVER_UP_TO)
        listed = small
    else:
        log.info("listing %s in %d unit(s)", storage_namespace, len(units))
        ensure_python_workers(spark)
        rdd = spark.sparkContext.parallelize(units, max(1, min(len(units), target))).mapPartitions(_Lister(storage_namespace, options))
        listed = spark.createDataFrame(rdd, INVENTORY_SCHEMA)
    # raw keys/paths, as resolve_physical joins them: file://<path>, <scheme>://<authority>/<key>
    with_key = listed.withColumn("_key", F.expr(f"substring(physical_address, {len(_uri_root(ns)) + 1})"))
    return restrict_to_namespace(with_key, "_key", ns).select("physical_address", "size", "last_modified")


def storage_inventory(
    spark: "SparkSession",
    storage_namespace: str,
    manifest: str | None = None,
    *,
    s3_options: Mapping[str, Any] | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    parallelism: int | None = None,
    local_blockstore: str | None = None,
    store_options: "StoreOptions | None" = None,
    now: datetime | None = None,
    min_age: timedelta | None = None,
    considered: Considered | None = None,
) -> "DataFrame":
    """The inventory report at ``manifest`` when given (S3 Inventory, Azure Blob Inventory or a
    GCS inventory report, told apart by the manifest's fields), else a listing of the namespace:
    :func:`prepare_storage_inventory`'s rows, read at once."""
    return prepare_storage_inventory(
        spark, storage_namespace, manifest, s3_options=s3_options, work_dir=work_dir, parallelism=parallelism,
        local_blockstore=local_blockstore, store_options=store_options, now=now, min_age=min_age, considered=considered,
    )()


def prepare_storage_inventory(
    spark: "SparkSession",
    storage_namespace: str,
    manifest: str | None = None,
    *,
    s3_options: Mapping[str, Any] | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    parallelism: int | None = None,
    local_blockstore: str | None = None,
    store_options: "StoreOptions | None" = None,
    now: datetime | None = None,
    min_age: timedelta | None = None,
    considered: Considered | None = None,
) -> "Callable[[], DataFrame]":
    """What storage holds under the namespace, validated now, as a function giving its rows.

    The inventory report at ``manifest`` when given (S3 Inventory, Azure Blob Inventory or a
    GCS inventory report, told apart by the manifest's fields), else a listing of the namespace.
    A report is validated (manifest, data files, columns) before this returns, and its rows are
    read and cut when the function is called: an optimized run calls it in the thread that
    writes its storage table. ``considered``: only the objects an optimized run considers
    (:func:`keep_considered`), cut from a report before its rows are checked (in the driver
    when it can be: :func:`cut_in_driver`). A listing is made before this returns.
    With ``min_age``, a report taken longer than that before ``now`` is bad input, whatever its
    kind (:func:`lakewarden.inventories.common.check_age`).

    A ``local://`` namespace (lakeFS's local blockstore) is listed as the directory it is under
    ``local_blockstore``, and its objects are named ``local://...`` again, as lakeFS names them.
    """
    from lakewarden.blockstore import blockstore_root, file_uri_prefix, to_file_uri

    if manifest:
        report = locate_report(
            manifest, storage_namespace, s3_options=s3_options, store_options=store_options, work_dir=work_dir, now=now, min_age=min_age
        )
        return report_rows(spark, report, storage_namespace, considered, work_dir=work_dir)
    if local_blockstore is None and store_options is not None:
        local_blockstore = store_options.local_blockstore
    root = blockstore_root(storage_namespace, local_blockstore)
    if root is None:
        listed = list_namespace(spark, storage_namespace, s3_options=s3_options, parallelism=parallelism, store_options=store_options)
    else:
        from pyspark.sql import functions as F

        on_disk = list_namespace(spark, to_file_uri(storage_namespace, root), parallelism=parallelism)
        prefix = file_uri_prefix(root)
        listed = on_disk.where(F.col("physical_address").startswith(prefix)).withColumn(
            "physical_address", F.concat(F.lit("local://"), F.expr(f"substring(physical_address, {len(prefix) + 1})"))
        )
    # a listing is cut after its checks: its rows are listed once, not read again
    rows = listed if considered is None else keep_considered(listed, "physical_address", "", considered)
    return lambda: rows


__all__: Sequence[str] = (
    "INVENTORY_SCHEMA",
    "LocatedReport",
    "locate_report",
    "report_rows",
    "cut_report",
    "prepare_storage_inventory",
    "Manifest",
    "Considered",
    "ListUnit",
    "keep_considered",
    "report_rows_in_namespace",
    "load_manifest",
    "parse_file_schema",
    "read_inventory",
    "list_namespace",
    "plan_listing",
    "storage_inventory",
    "restrict_to_namespace",
)
