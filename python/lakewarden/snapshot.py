"""Read a repository snapshot directory (CONTRACT section 2) in place, as the warehouse's sources.

The tables' columns and types are read from ``models/sources.yml`` (the one definition of the
source tables). Nothing is copied: the source tables are views over the snapshot's Parquet
files (a JSONL table is converted to Parquet once). Every table is validated *before* any view
is replaced (``lakewarden.snapshot_check``, with pyarrow, so a job can do it while the JVM
starts), so a bad snapshot is rejected with a one-line reason and leaves the warehouse as it was.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import pyarrow as pa
import yaml

from lakewarden.errors import BadInput
from lakewarden.project import project_dir

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from lakewarden.snapshot_check import CheckedSnapshot

log = logging.getLogger(__name__)

# Tables of the snapshot directory; all are required (an absent `staged` or `tags` table would
# silently unprotect objects, so even an empty one must be present).
SNAPSHOT_TABLES = ("commits", "branches", "tags", "metaranges", "ranges", "staged")
NOT_NULL = {
    "commits": ("commit_id", "creation_date"),
    "branches": ("branch_id", "commit_id"),
    "tags": ("tag_id", "commit_id"),
    # range_id null = an empty metarange (CONTRACT 2): lakeFS writes one when a commit empties the tree
    "metaranges": ("meta_range_id",),
    "ranges": ("range_id", "key", "address", "address_type"),
    # branch_id and key may be null: lakeFS's prepare_uncommited lists staged physical
    # addresses without them (extract keeps them so); the address alone protects the object
    "staged": ("address", "address_type"),
}
ADDRESS_TYPES = ("RELATIVE", "FULL", "BY_PREFIX_DEPRECATED")


@dataclass(frozen=True)
class Repository:
    repository_id: str
    storage_namespace: str
    default_branch: str


@dataclass(frozen=True)
class LoadedSnapshot:
    repository: Repository
    row_counts: dict[str, int]
    newest_commit_epoch: float | None


@functools.cache
def _sources() -> dict[str, list[dict[str, Any]]]:
    """models/sources.yml, read once per process: source name -> its tables."""
    with open(project_dir() / "models" / "sources.yml", encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    return {source["name"]: source["tables"] for source in document["sources"]}


def source_columns(source_name: str = "lakefs") -> dict[str, list[tuple[str, str]]]:
    """Table -> [(column, spark type)] as declared in models/sources.yml."""
    return {
        table["name"]: [(c["name"], c["data_type"]) for c in table["columns"]] for table in _sources()[source_name]
    }


def source_meta(source_name: str) -> dict[str, dict[str, Any]]:
    """Table -> its ``meta`` in models/sources.yml (empty when it has none)."""
    return {table["name"]: dict(table.get("meta") or {}) for table in _sources()[source_name]}


def source_ddl(source_name: str, table: str) -> str:
    """``"col type, ..."`` of a source table as declared in models/sources.yml, for Spark writers."""
    return ", ".join(f"{name} {kind}" for name, kind in source_columns(source_name)[table])


_ARROW_TYPES = {
    "string": pa.string(),
    "array<string>": pa.list_(pa.string()),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "boolean": pa.bool_(),
}


@functools.cache
def arrow_schemas() -> dict[str, pa.Schema]:
    """Arrow schemas of the snapshot tables, for Python writers (the sample generator,
    ``extract``): derived from models/sources.yml so the Parquet they write always loads."""
    return {
        table: pa.schema([(column, _ARROW_TYPES[spark_type]) for column, spark_type in columns])
        for table, columns in source_columns("lakefs").items()
        if table != "repository"
    }


def read_repository(snapshot_dir: Path) -> Repository:
    path = snapshot_dir / "repository.json"
    if not path.is_file():
        raise BadInput("missing (the snapshot needs repository.json)", source=str(path))
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"not valid JSON ({exc})", source=str(path)) from None
    if not isinstance(document, dict):
        raise BadInput("must be a JSON object", source=str(path))
    values: dict[str, str] = {}
    for field in ("repository_id", "storage_namespace", "default_branch"):
        value = document.get(field)
        if not isinstance(value, str) or not value:
            raise BadInput("missing or not a non-empty string", source=str(path), field=field)
        values[field] = value
    parsed = urlparse(values["storage_namespace"])
    if not parsed.scheme or (parsed.scheme != "file" and not parsed.netloc):
        raise BadInput(
            f"{values['storage_namespace']!r} is not a URI (file:///path, s3://bucket/prefix, ...)",
            source=str(path),
            field="storage_namespace",
        )
    if parsed.scheme == "file" and not parsed.path.startswith("/"):
        raise BadInput("a file:// namespace must be an absolute path", source=str(path), field="storage_namespace")
    return Repository(**values)


def _table_path(snapshot_dir: Path, name: str) -> Path:
    for suffix in (".jsonl", ".parquet"):
        candidate = snapshot_dir / f"{name}{suffix}"
        if candidate.exists():
            return candidate
    raise BadInput(
        f"missing table {name!r} (expected {name}.jsonl or {name}.parquet)", source=str(snapshot_dir)
    )


def _quote_path(path: Path | str) -> str:
    return "`" + str(path).replace("`", "``") + "`"


def _select_sql(source: str, columns: list[tuple[str, str]], present: list[str]) -> str:
    """``select <declared columns, cast> from <source>``: the one definition of how a stored
    Parquet table becomes a source table (a missing optional column as null). JSONL text times
    were already read as Spark's ``to_timestamp`` would (lakewarden.spark_timestamps)."""
    selected = []
    for column, spark_type in columns:
        if column not in present:
            selected.append(f"cast(null as {spark_type}) as `{column}`")
        else:
            selected.append(f"cast(`{column}` as {spark_type}) as `{column}`")
    return f"select {', '.join(selected)} from {source}"


def _file_identity(file: Path) -> str:
    """What changes whenever a file's bytes may have: its resolved path, size, modification and
    change times and inode (writing moves the times; replacing it, even by a copy that keeps
    the modification time, moves the change time or the inode)."""
    info = file.stat()
    return f"{file.resolve()}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\0{info.st_ino}\n"


def _fingerprint(path: Path) -> str:
    """Identity of a stored table's bytes (a file, or a folder's files): a JSONL table is
    converted again only when this changes."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        digest.update(_file_identity(file).encode())
    return digest.hexdigest()[:32]


def spark_error_reason(exc: BaseException) -> str:
    """The most specific one-line cause inside a Spark/JVM error (e.g. the JSON parser's)."""
    text = str(exc)
    for marker in ("JsonParseException: ", "MALFORMED_RECORD_IN_PARSING", "Caused by: "):
        position = text.find(marker)
        if position >= 0:
            return text[position:].splitlines()[0][:300]
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]


def load_snapshot(
    spark: "SparkSession",
    snapshot_dir: Path,
    *,
    schema: str = "lakewarden_snapshot",
    cache_dir: Path | None = None,
) -> LoadedSnapshot:
    """Validate ``snapshot_dir``, then point the source tables in ``schema`` at it.

    :func:`lakewarden.snapshot_check.check_snapshot` then :func:`register_snapshot`: a job that
    wants the check to overlap the JVM's start calls the two itself."""
    from lakewarden.snapshot_check import check_snapshot

    return register_snapshot(spark, check_snapshot(Path(snapshot_dir), cache_dir=cache_dir), schema=schema)


def register_snapshot(spark: "SparkSession", checked: "CheckedSnapshot", *, schema: str = "lakewarden_snapshot") -> LoadedSnapshot:
    """Point the source tables in ``schema`` at a checked snapshot: views only, no Spark job.

    Nothing is copied: each source table becomes a view selecting the declared columns from
    the snapshot's Parquet where it is (a JSONL table's conversion under the cache directory).
    Only a snapshot that passed every check gets here, so a bad one leaves the warehouse as it
    was; views already pointing at these very files are left as they are.
    """
    declared = source_columns("lakefs")
    spark.sql(f"create database if not exists {schema}")
    for name in SNAPSHOT_TABLES:
        table = checked.tables[name]
        source = f"parquet.{_quote_path(table.data)}"
        select_sql = _select_sql(source, declared[name], list(table.columns))
        _replace_view(spark, f"{schema}.{name}", select_sql, identity=checked.fingerprint)
    repository = checked.repository
    repository_sql = "select " + ", ".join(
        f"cast({_sql_string(getattr(repository, column))} as {kind}) as `{column}`" for column, kind in declared["repository"]
    )
    _replace_view(spark, f"{schema}.repository", repository_sql, identity=checked.fingerprint)
    counts = {**checked.row_counts, "repository": 1}
    log.info("snapshot %s read in place: %s", checked.snapshot_dir, ", ".join(f"{k}={v}" for k, v in counts.items()))
    return LoadedSnapshot(repository=repository, row_counts=counts, newest_commit_epoch=checked.newest_commit_epoch)


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _replace_view(spark: "SparkSession", qualified: str, select_sql: str, *, identity: str) -> None:
    """``create or replace view``, unless the view is already this one: the view's comment holds
    a digest of its SQL and ``identity`` (the fingerprint of the files it reads), so a job run
    again on an unchanged snapshot writes nothing to the metastore. A table of that name (a warehouse from
    before snapshots were read in place, or a plain ``dbt build``'s empty source table) is
    dropped first."""
    digest = hashlib.sha256(f"{select_sql}\n{identity}".encode()).hexdigest()[:32]
    comment = f"lakewarden snapshot view {digest}"
    if spark.catalog.tableExists(qualified):
        existing = spark.catalog.getTable(qualified)
        if existing.tableType == "VIEW" and existing.description == comment:
            return
        if existing.tableType != "VIEW":
            spark.sql(f"drop table {qualified}")
    spark.sql(f"create or replace view {qualified} comment {_sql_string(comment)} as {select_sql}")
