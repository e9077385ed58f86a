"""Read a repository snapshot directory (docs/contract.md §2) in place, as the warehouse's sources.

The tables' columns and types are read from ``models/sources.yml`` (the one definition of the
source tables). Nothing is copied: the source tables are views over the snapshot's Parquet
files (a JSONL table is converted to Parquet once). Every table is validated *before* any view
is replaced (``lakewarden.snapshot.check``, with pyarrow, so a job can do it while the JVM
starts), so a bad snapshot is rejected with a one-line reason and leaves the warehouse as it was.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence
from urllib.parse import urlparse

import pyarrow as pa
import yaml

from lakewarden.errors import BadInput
from lakewarden.runtime.project import project_dir

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from lakewarden.snapshot.check import CheckedSnapshot

log = logging.getLogger(__name__)

# Tables of the snapshot directory; all are required (an absent `staged` or `tags` table would
# silently unprotect objects, so even an empty one must be present).
SNAPSHOT_TABLES = ("commits", "branches", "tags", "metaranges", "ranges", "staged")
NOT_NULL = {
    "commits": ("commit_id", "creation_date"),
    "branches": ("branch_id", "commit_id"),
    "tags": ("tag_id", "commit_id"),
    # range_id null = an empty metarange (docs/contract.md §2): lakeFS writes one when a commit empties the tree
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
    #: the Parquet each source table reads (the user's, or a JSONL table's conversion)
    table_files: Mapping[str, Path] = field(default_factory=dict)


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


def register_rows(spark: "SparkSession", qualified: str, source_name: str, table: str, rows: Sequence[Sequence[Any]]) -> None:
    """A small per-run input table (GC rules, a lifecycle policy) as a view of literal rows.

    A view of ``VALUES`` is a catalog entry: no Spark job, where writing the rows as a Parquet
    table cost a job and a JVM code path of its own (~1–2 s of a run). Columns and types are the
    declared ones (models/sources.yml); each value is a literal cast to its column's type."""
    columns = source_columns(source_name)[table]
    names = ", ".join(f"`{name}`" for name, _ in columns)
    if rows:
        values = ",\n".join(
            "(" + ", ".join(f"cast({sql_literal(value, kind)} as {kind})" for value, (_, kind) in zip(row, columns, strict=True)) + ")"
            for row in rows
        )
        select_sql = f"select * from values\n{values}\nas rows ({names})"
    else:
        select_sql = "select " + ", ".join(f"cast(null as {kind}) as `{name}`" for name, kind in columns) + " where false"
    if spark.catalog.tableExists(qualified) and spark.catalog.getTable(qualified).tableType != "VIEW":
        spark.sql(f"drop table {qualified}")
    spark.sql(f"create or replace view {qualified} as {select_sql}")


def sql_literal(value: Any, kind: str) -> str:
    """A Python value as a Spark SQL literal of the declared type (strings escaped)."""
    from datetime import datetime

    if value is None:
        return "null"
    if kind.startswith("map<"):
        key_kind, value_kind = kind[4:-1].split(",", 1)
        items = ", ".join(f"{sql_literal(k, key_kind)}, {sql_literal(v, value_kind)}" for k, v in dict(value).items())
        return f"map({items})" if items else f"cast(map() as {kind})"
    if kind.startswith("array<"):
        inner = kind[6:-1]
        items = ", ".join(sql_literal(v, inner) for v in value)
        return f"array({items})" if items else f"cast(array() as {kind})"
    if kind == "boolean":
        return "true" if value else "false"
    if kind in ("int", "bigint", "smallint", "tinyint"):
        return str(int(value))
    if kind == "double":
        return repr(float(value))
    if kind == "timestamp" and isinstance(value, datetime):
        return f"timestamp {sql_string(value.isoformat())}"
    return sql_string(str(value))


_ARROW_TYPES = {
    "string": pa.string(),
    "array<string>": pa.list_(pa.string()),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "boolean": pa.bool_(),
}


def arrow_type(kind: str) -> pa.DataType:
    """The Arrow type of a declared Spark SQL type (the types models/sources.yml uses), for
    Python writers of Parquet that Spark reads back as declared."""
    kind = kind.strip().lower()
    if kind in _ARROW_TYPES:
        return _ARROW_TYPES[kind]
    if kind == "double":
        return pa.float64()
    if kind.startswith("array<") and kind.endswith(">"):
        return pa.list_(arrow_type(kind[6:-1]))
    if kind.startswith("map<") and kind.endswith(">"):
        key, value = kind[4:-1].split(",", 1)
        return pa.map_(arrow_type(key), arrow_type(value))
    if kind.startswith("struct<") and kind.endswith(">"):
        fields = (field.split(":", 1) for field in _top_level_fields(kind[7:-1]))
        return pa.struct([(name.strip().strip("`"), arrow_type(field_kind)) for name, field_kind in fields])
    raise ValueError(f"no Arrow type for the Spark type {kind!r}")


def _top_level_fields(fields: str) -> list[str]:
    """``a:int,b:array<struct<c:int,d:int>>`` split at its own commas, not its fields' types'."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(fields):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(fields[start:index])
            start = index + 1
    parts.append(fields[start:])
    return parts


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
    for key in ("repository_id", "storage_namespace", "default_branch"):
        value = document.get(key)
        if not isinstance(value, str) or not value:
            raise BadInput("missing or not a non-empty string", source=str(path), field=key)
        values[key] = value
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

    :func:`lakewarden.snapshot.check.check_snapshot` then :func:`register_snapshot`: a job that
    wants the check to overlap the JVM's start calls the two itself."""
    from lakewarden.snapshot.check import check_snapshot

    return register_snapshot(spark, check_snapshot(Path(snapshot_dir), cache_dir=cache_dir), schema=schema)


def register_snapshot(spark: "SparkSession", checked: "CheckedSnapshot", *, schema: str = "lakewarden_snapshot") -> LoadedSnapshot:
    """Point the source tables in ``schema`` at a checked snapshot: views only, no Spark job.

    Nothing is copied: each source table becomes a view selecting the declared columns from
    the snapshot's Parquet where it is (a JSONL table's conversion under the cache directory).
    Only a snapshot that passed every check gets here, so a bad one leaves the warehouse as it
    was; views already pointing at these very files are left as they are.
    """
    declared = source_columns("lakefs")
    files_schema = f"{schema}_files"
    spark.sql(f"create database if not exists {schema}")
    spark.sql(f"create database if not exists {files_schema}")
    for name in SNAPSHOT_TABLES:
        table = checked.tables[name]
        source = _files_table(spark, f"{files_schema}.{name}", table.data)
        select_sql = _select_sql(source, declared[name], list(table.columns))
        _replace_view(spark, f"{schema}.{name}", select_sql, identity=checked.fingerprint)
    repository = checked.repository
    # a one-row VALUES, not a select without FROM: Spark plans it as a local relation, and a
    # model's cross join with it broadcasts that row from the driver, where a select without
    # FROM is a one-row scan, broadcast by a Spark job (the plans of an incremental lifecycle
    # run at 1M entries held 13 such scans, 1 now; the run sent 94 Spark jobs, was 96)
    repository_sql = (
        "select * from values ("
        + ", ".join(f"cast({sql_string(getattr(repository, column))} as {kind})" for column, kind in declared["repository"])
        + ") as repository ("
        + ", ".join(f"`{column}`" for column, _ in declared["repository"])
        + ")"
    )
    _replace_view(spark, f"{schema}.repository", repository_sql, identity=checked.fingerprint)
    counts = {**checked.row_counts, "repository": 1}
    log.info("snapshot %s read in place: %s", checked.snapshot_dir, ", ".join(f"{k}={v}" for k, v in counts.items()))
    return LoadedSnapshot(
        repository=repository,
        row_counts=counts,
        newest_commit_epoch=checked.newest_commit_epoch,
        table_files={name: checked.tables[name].data for name in SNAPSHOT_TABLES},
    )


def _files_table(spark: "SparkSession", qualified: str, data: Path) -> str:
    """The relation a source view selects from: an external table over the Parquet where it is,
    declared with the files' own schema (read from their footers with pyarrow).

    Why not ``parquet.`path```: Spark infers such a path's schema with a Spark job each time a
    query naming it is analysed, and every view over a view analyses it again: that was most
    of a run's Spark jobs and about a second per model. A catalog table with a declared schema
    is resolved from the catalog, with no job. Files whose schemas disagree, or a type this
    mapping does not know, keep the path (Spark infers, as before)."""
    ddl = _parquet_ddl(data)
    if ddl is None:
        return f"parquet.{_quote_path(data)}"
    spark.sql(f"drop table if exists {qualified}")  # a catalog entry; the files stay
    spark.sql(f"create table {qualified} ({ddl}) using parquet location {sql_string(str(data))}")
    return qualified


def _parquet_ddl(data: Path) -> str | None:
    """The Spark DDL of a Parquet file's or folder's columns, as Spark would infer it; None when
    the files disagree or hold a type outside :func:`spark_type`."""
    import pyarrow.parquet as pq

    files = [data] if data.is_file() else sorted(
        p for p in data.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))
    )
    if not files:
        return None
    schemas = set()
    int96: set[str] = set()  # Spark's own legacy timestamps: Spark reads them as timestamp
    for file in files:
        metadata = pq.read_metadata(file)
        schemas.add(metadata.schema.to_arrow_schema().remove_metadata())
        int96 |= {column.path for column in metadata.schema if column.physical_type == "INT96"}
    if len(schemas) != 1:
        return None
    (schema,) = schemas
    columns = []
    for arrow_field in schema:
        kind = "timestamp" if arrow_field.name in int96 else spark_type(arrow_field.type)
        if kind is None:
            return None
        columns.append(f"`{arrow_field.name.replace('`', '``')}` {kind}")
    return ", ".join(columns) or None


def spark_type(kind: pa.DataType) -> str | None:
    """The Spark SQL type Spark's Parquet reader gives an Arrow type (timestamps with a time
    zone are Spark timestamps, without one ``timestamp_ntz``); None for types not mapped here."""
    simple = {
        pa.string(): "string", pa.large_string(): "string", pa.int64(): "bigint", pa.int32(): "int",
        pa.int16(): "smallint", pa.int8(): "tinyint", pa.bool_(): "boolean", pa.float64(): "double",
        pa.float32(): "float", pa.date32(): "date", pa.binary(): "binary", pa.large_binary(): "binary",
    }
    if kind in simple:
        return simple[kind]
    if pa.types.is_timestamp(kind):
        return "timestamp" if kind.tz is not None else "timestamp_ntz"
    if pa.types.is_decimal(kind):
        return f"decimal({kind.precision},{kind.scale})"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        inner = spark_type(kind.value_type)
        return None if inner is None else f"array<{inner}>"
    if pa.types.is_map(kind):
        key, value = spark_type(kind.key_type), spark_type(kind.item_type)
        return None if key is None or value is None else f"map<{key},{value}>"
    if pa.types.is_struct(kind):
        fields = [(kind.field(i).name, spark_type(kind.field(i).type)) for i in range(kind.num_fields)]
        if any(t is None for _, t in fields):
            return None
        return "struct<" + ",".join(f"`{n}`:{t}" for n, t in fields) + ">"
    return None


def sql_string(value: str) -> str:
    """A Spark SQL string literal (backslashes and quotes escaped): the one definition."""
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
    spark.sql(f"create or replace view {qualified} comment {sql_string(comment)} as {select_sql}")
