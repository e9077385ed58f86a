"""Read a repository snapshot directory (CONTRACT section 2) in place, as the warehouse's sources.

The tables' columns and types are read from ``models/sources.yml`` (the one definition of the
source tables). Nothing is copied: the source tables are views over the snapshot's Parquet
files (a JSONL table is converted to Parquet once). Every table is validated *before* any view
is replaced, so a bad snapshot is rejected with a one-line reason and leaves the warehouse as it
was. The checks that
matter for safety are the referential ones: a commit whose parent, metarange or range is missing
would make live objects look unreferenced, so it is an error, never a warning.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import pyarrow as pa
import yaml

from lakewarden.errors import BadInput
from lakewarden.project import project_dir

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

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


def _select_sql(source: str, columns: list[tuple[str, str]], present: list[str], *, jsonl: bool) -> str:
    """``select <declared columns, cast> from <source>``: the one definition of how a stored
    table becomes a source table (timestamps to UTC, a missing optional column as null)."""
    selected = []
    for column, spark_type in columns:
        if column not in present:
            selected.append(f"cast(null as {spark_type}) as `{column}`")
        elif spark_type == "timestamp" and jsonl:
            # RFC 3339 strings with offsets: Spark's to_timestamp honours the offset
            selected.append(f"to_timestamp(`{column}`) as `{column}`")
        else:
            selected.append(f"cast(`{column}` as {spark_type}) as `{column}`")
    return f"select {', '.join(selected)} from {source}"


def _fingerprint(path: Path) -> str:
    """Identity of a stored table's bytes (paths, sizes, modification times): a JSONL table is
    converted again only when this changes."""
    import hashlib

    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        info = file.stat()
        digest.update(f"{file.resolve()}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def _convert_jsonl(spark: "SparkSession", path: Path, columns: list[tuple[str, str]], cache_dir: Path) -> Path:
    """Convert a JSONL table to Parquet once (cached by fingerprint under ``cache_dir``): the
    jobs then read it in place like a Parquet snapshot. Malformed JSON is bad input."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    target = cache_dir / f"{path.stem}-{_fingerprint(path)}.parquet"
    if (target / "_SUCCESS").exists():
        return target
    read_types = ", ".join(f"`{c}` {'string' if t == 'timestamp' else t}" for c, t in columns)
    try:
        raw = spark.read.schema(read_types).option("mode", "FAILFAST").json(str(path))
        raw.createOrReplaceTempView("lakewarden_jsonl_source")
        frame = spark.sql(_select_sql("lakewarden_jsonl_source", columns, [c for c, _ in columns], jsonl=True))
        frame.write.mode("overwrite").parquet(str(target))
    except (PySparkException, Py4JJavaError) as exc:
        raise BadInput(f"malformed ({spark_error_reason(exc)})", source=str(path)) from None
    finally:
        spark.catalog.dropTempView("lakewarden_jsonl_source")
    return target


@dataclass(frozen=True)
class _StoredTable:
    """One snapshot table as the jobs read it: the user's file, and the SQL that selects the
    declared columns from the Parquet data in place (the user's, or a JSONL table's conversion)."""

    name: str
    path: Path
    select_sql: str


def _stored_table(
    spark: "SparkSession", path: Path, columns: list[tuple[str, str]], cache_dir: Path | None
) -> _StoredTable:
    from pyspark.sql.utils import AnalysisException

    name = path.name.split(".")[0]
    data = path
    if path.suffix == ".jsonl":
        if cache_dir is None:
            raise ValueError("a JSONL snapshot needs a cache directory for its Parquet conversion")
        data = _convert_jsonl(spark, path, columns, cache_dir)
    try:
        present = spark.read.parquet(str(data)).columns  # the footer only
    except AnalysisException as exc:
        raise BadInput(f"unreadable ({exc.getMessage().splitlines()[0]})", source=str(path)) from None
    missing = [c for c, _ in columns if c not in present and not (name == "branches" and c == "hidden")]
    if missing:
        raise BadInput(f"missing column(s) {', '.join(missing)}", source=str(path))
    return _StoredTable(name, path, _select_sql(f"parquet.{_quote_path(data.resolve())}", columns, present, jsonl=False))


def _first(frame: "DataFrame") -> Any:
    rows = frame.limit(1).collect()
    return rows[0] if rows else None


def spark_error_reason(exc: BaseException) -> str:
    """The most specific one-line cause inside a Spark/JVM error (e.g. the JSON parser's)."""
    text = str(exc)
    for marker in ("JsonParseException: ", "MALFORMED_RECORD_IN_PARSING", "Caused by: "):
        position = text.find(marker)
        if position >= 0:
            return text[position:].splitlines()[0][:300]
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]


def _check_table(name: str, path: Path, frame: "DataFrame") -> int:
    """Null and address-type checks of one table in one aggregation (which also counts its
    rows); only a failing check costs a second job. Returns the row count."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    checks = {f"null:{column}": F.col(column).isNull() for column in NOT_NULL.get(name, ())}
    if "address_type" in frame.columns:
        checks["address_type"] = ~F.upper("address_type").isin(*ADDRESS_TYPES)
    try:
        counts = frame.agg(
            F.count(F.lit(1)).alias("__rows"), *[F.sum(F.when(c, 1).otherwise(0)).alias(k) for k, c in checks.items()]
        ).first()
        for key, condition in checks.items():
            if not counts[key]:
                continue
            bad = _first(frame.where(condition))
            if key == "address_type":
                raise BadInput(
                    f"{bad['address_type']!r} is not one of {', '.join(ADDRESS_TYPES)}", source=str(path), field="address_type"
                )
            column = key.split(":", 1)[1]
            raise BadInput(f"a row has no {column} (or it is not parseable): {bad.asDict()}", source=str(path), field=column)
    except (PySparkException, Py4JJavaError) as exc:  # e.g. a Parquet file that cannot be decoded
        raise BadInput(f"malformed ({spark_error_reason(exc)})", source=str(path)) from None
    return int(counts["__rows"])


def _check_references(tables: dict[str, "DataFrame"], paths: dict[str, Path]) -> None:
    from pyspark.sql import functions as F

    commits = tables["commits"]
    duplicate = _first(commits.groupBy("commit_id").count().where("count > 1"))
    if duplicate is not None:
        raise BadInput(f"duplicate commit {duplicate['commit_id']!r}", source=str(paths["commits"]), field="commit_id")
    commit_ids = commits.select("commit_id")
    parent_edges = commits.select("commit_id", F.explode_outer("parents").alias("parent_id")).where("parent_id is not null")
    orphan = _first(parent_edges.join(commit_ids.withColumnRenamed("commit_id", "parent_id"), "parent_id", "left_anti"))
    if orphan is not None:
        raise BadInput(
            f"commit {orphan['commit_id']!r} has parent {orphan['parent_id']!r}, which is not in the snapshot",
            source=str(paths["commits"]),
            field="parents",
        )
    for name in ("branches", "tags"):
        dangling = _first(tables[name].join(commit_ids, "commit_id", "left_anti"))
        if dangling is not None:
            raise BadInput(
                f"{dangling[0]!r} points to commit {dangling['commit_id']!r}, which is not in the snapshot",
                source=str(paths[name]),
                field="commit_id",
            )
    duplicate = _first(tables["branches"].groupBy("branch_id").count().where("count > 1"))
    if duplicate is not None:
        raise BadInput(f"duplicate branch {duplicate['branch_id']!r}", source=str(paths["branches"]), field="branch_id")
    metarange_ids = tables["metaranges"].select("meta_range_id").distinct()
    missing_metarange = _first(
        commits.where("meta_range_id is not null and meta_range_id != ''").join(metarange_ids, "meta_range_id", "left_anti")
    )
    if missing_metarange is not None:
        raise BadInput(
            f"commit {missing_metarange['commit_id']!r} has metarange {missing_metarange['meta_range_id']!r}, "
            "which is not in the snapshot (metaranges)",
            source=str(paths["commits"]),
            field="meta_range_id",
        )
    range_ids = tables["ranges"].select("range_id").distinct()
    missing_range = _first(tables["metaranges"].where("range_id is not null").join(range_ids, "range_id", "left_anti"))
    if missing_range is not None:
        raise BadInput(
            f"metarange {missing_range['meta_range_id']!r} lists range {missing_range['range_id']!r}, "
            "which has no entries in the snapshot (ranges)",
            source=str(paths["metaranges"]),
            field="range_id",
        )


def load_snapshot(
    spark: "SparkSession",
    snapshot_dir: Path,
    *,
    schema: str = "lakewarden_snapshot",
    cache_dir: Path | None = None,
) -> LoadedSnapshot:
    """Validate ``snapshot_dir``, then point the source tables in ``schema`` at it.

    Nothing is copied: each source table becomes a view selecting the declared columns from the
    snapshot's Parquet files where they are (a JSONL table is converted to Parquet once, under
    ``cache_dir``, keyed by its size and modification time). The views are created only after
    every check passed, so a bad snapshot leaves the warehouse as it was.
    """
    from pyspark.sql import functions as F

    snapshot_dir = Path(snapshot_dir)
    if not snapshot_dir.is_dir():
        raise BadInput("not a directory", source=str(snapshot_dir))
    repository = read_repository(snapshot_dir)
    declared = source_columns("lakefs")
    paths = {name: _table_path(snapshot_dir, name) for name in SNAPSHOT_TABLES}
    stored = {name: _stored_table(spark, paths[name], declared[name], cache_dir) for name in SNAPSHOT_TABLES}
    tables: dict[str, DataFrame] = {}
    counts: dict[str, int] = {}
    for name in SNAPSHOT_TABLES:
        frame = spark.sql(stored[name].select_sql)
        counts[name] = _check_table(name, paths[name], frame)
        tables[name] = frame
    _check_references(tables, paths)
    newest = tables["commits"].agg(F.max("creation_date").cast("double").alias("newest")).first()
    spark.sql(f"create database if not exists {schema}")
    for name in SNAPSHOT_TABLES:
        _replace_view(spark, f"{schema}.{name}", stored[name].select_sql)
    repository_sql = "select " + ", ".join(
        f"cast({_sql_string(getattr(repository, column))} as {kind}) as `{column}`" for column, kind in declared["repository"]
    )
    _replace_view(spark, f"{schema}.repository", repository_sql)
    counts["repository"] = 1
    log.info("snapshot %s read in place: %s", snapshot_dir, ", ".join(f"{k}={v}" for k, v in counts.items()))
    return LoadedSnapshot(repository=repository, row_counts=counts, newest_commit_epoch=newest["newest"] if newest else None)


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _replace_view(spark: "SparkSession", qualified: str, select_sql: str) -> None:
    """``create or replace view``; a table of that name (a warehouse from before snapshots were
    read in place, or a plain ``dbt build``'s empty source table) is dropped first."""
    database, table = qualified.split(".", 1)
    if spark.catalog.tableExists(qualified):
        kind = spark.catalog.getTable(qualified).tableType
        if kind != "VIEW":
            spark.sql(f"drop table {qualified}")
    spark.sql(f"create or replace view {qualified} as {select_sql}")
