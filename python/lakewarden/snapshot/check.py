"""Validate a snapshot directory (docs/contract.md §2) with pyarrow, before and without Spark.

A job checks its snapshot before its Spark session exists (on the main thread, so also while a
JVM starts in the background): a bad snapshot costs no JVM, the check costs no Spark job, and a
snapshot that already passed costs nearly nothing (the memo, below). The checks are the ones a safe run depends on: a commit whose parent, metarange or
range is missing would make live objects look unreferenced, so each is bad input, never a
warning. Every message names the user's file, as the jobs report bad input in one line.

Memory stays bounded whatever the repository's size: tables are streamed in record batches,
only the columns a check needs are read, a column whose Parquet statistics prove it has no
nulls is not read for the null check, and a row group whose statistics say it holds one range
id (lakeFS ranges are written range by range) is not read for it at all. The sets held are
the commit, branch and metarange ids and the range ids the metaranges list.

The memo: after a snapshot passed, ``validated-<fingerprint>.json`` under ``cache_dir`` records
what the check found. The fingerprint covers every table file's resolved path, size,
modification and change times and inode, plus ``repository.json``'s, the check's version and
the declared columns, so changing, adding, removing or replacing any file (``cp``, ``rsync``,
an extract) gives a new fingerprint and a full check. The residual risk is a file rewritten in
place with the same size within one tick of the file system's clock; to keep that window shut,
no memo is written while a file is younger than :data:`RACY_SECONDS` (it may still be being
written), and ``LAKEWARDEN_REVALIDATE=1`` (or ``revalidate=True``) checks again regardless.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from lakewarden.errors import BadInput
from lakewarden.runtime.project import project_dir
from lakewarden.snapshot import (
    ADDRESS_TYPES,
    NOT_NULL,
    SNAPSHOT_TABLES,
    Repository,
    _file_identity,
    _fingerprint,
    _table_path,
    arrow_schemas,
    read_repository,
    source_columns,
)
from lakewarden.spark_timestamps import spark_timestamps

log = logging.getLogger(__name__)

CHECK_VERSION = 1  # bump when a check changes: memos of older checks are then ignored
BATCH_ROWS = 64 * 1024
JSON_BLOCK_BYTES = 1 << 20  # the streaming JSON reader holds a few such blocks (read ahead)
ROW_GROUP_ROWS = 128 * 1024  # rows per row group of a JSONL table's conversion
RACY_SECONDS = 2.0
ABANDONED_SECONDS = 24 * 3600.0  # a temporary conversion this old belongs to a run that was killed
REVALIDATE_ENV = "LAKEWARDEN_REVALIDATE"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
OPTIONAL_COLUMNS = {("branches", "hidden")}  # absent = default false (docs/contract.md §2)
# Columns whose distinct values are all a check needs: a row group holding one value (its
# statistics' min equals max, no nulls) is not read for them.
_DISTINCT_ONLY = {
    ("metaranges", "meta_range_id"),
    ("metaranges", "range_id"),
    ("ranges", "range_id"),
    ("ranges", "address_type"),
    ("staged", "address_type"),
}
# Read dictionary-encoded: a handful of values, so a batch's distinct values cost nothing. (Ids
# are read plain: a row group's dictionary of up to a million ids would ride along every batch.)
_READ_DICTIONARY = ["address_type"]
# Written dictionary-encoded in a JSONL table's conversion: values repeated row after row.
_WRITE_DICTIONARY = ["range_id", "meta_range_id", "address_type"]
# Columns read for their values (ids for the references, address types), whatever the statistics
# say about nulls; the other NOT_NULL columns are read only where statistics leave nulls possible.
_VALUE_COLUMNS = {
    "commits": ("commit_id", "parents", "meta_range_id", "creation_date"),
    "branches": ("branch_id", "commit_id"),
    "tags": ("tag_id", "commit_id"),
    "metaranges": ("meta_range_id", "range_id"),
    "ranges": ("range_id", "address_type"),
    "staged": ("address_type",),
}


@dataclass(frozen=True)
class CheckedTable:
    """One validated table: where the jobs read it and what it holds."""

    name: str
    source: Path  # the user's NAME.jsonl / NAME.parquet (file or folder): what messages name
    data: Path  # the Parquet the jobs read: the user's, or the JSONL table's conversion
    rows: int
    columns: tuple[str, ...]  # the declared columns the Parquet holds (the others read as null)


@dataclass(frozen=True)
class CheckedSnapshot:
    """A snapshot that passed every check, ready for :func:`lakewarden.snapshot.register_snapshot`."""

    snapshot_dir: Path
    repository: Repository
    tables: Mapping[str, CheckedTable]
    newest_commit_epoch: float | None
    fingerprint: str
    from_memo: bool = False

    @property
    def row_counts(self) -> dict[str, int]:
        return {name: table.rows for name, table in self.tables.items()}


def check_snapshot(snapshot_dir: Path, *, cache_dir: Path | None, revalidate: bool = False) -> CheckedSnapshot:
    """Validate ``snapshot_dir`` completely, converting JSONL tables to Parquet under ``cache_dir``.

    Raises :class:`BadInput` (one line naming file and field) at the first problem, having
    changed nothing but caches. A snapshot whose fingerprint passed before is not read again
    (see the module's docstring) unless ``revalidate`` or ``LAKEWARDEN_REVALIDATE=1``.
    ``cache_dir`` None means no memo, and no JSONL tables (their Parquet needs a home)."""
    snapshot_dir = Path(snapshot_dir)
    if not snapshot_dir.is_dir():
        raise BadInput("not a directory", source=str(snapshot_dir))
    repository = read_repository(snapshot_dir)
    paths = {name: _table_path(snapshot_dir, name) for name in SNAPSHOT_TABLES}
    fingerprint = snapshot_fingerprint(snapshot_dir, paths)
    revalidate = revalidate or os.environ.get(REVALIDATE_ENV, "") not in ("", "0")
    if cache_dir is not None and not revalidate:
        remembered = _read_memo(Path(cache_dir), fingerprint, snapshot_dir, repository, paths)
        if remembered is not None:
            log.info("snapshot %s: validated before (fingerprint %s)", snapshot_dir, fingerprint)
            return remembered
    started = time.time()
    checked = scan_snapshot(snapshot_dir, repository, paths, cache_dir=cache_dir, fingerprint=fingerprint)
    if cache_dir is not None:
        _write_memo(Path(cache_dir), checked, paths, started)
    return checked


# -- fingerprint and memo --------------------------------------------------------------------


def _files(path: Path) -> list[Path]:
    return [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())


def snapshot_fingerprint(snapshot_dir: Path, paths: Mapping[str, Path]) -> str:
    """Identity of everything a check reads (see the module's docstring for why it suffices)."""
    declared = (project_dir() / "models" / "sources.yml").read_bytes()  # the declared columns, unparsed: cheap
    digest = hashlib.sha256(f"check {CHECK_VERSION}\n".encode() + declared)
    for path in [snapshot_dir / "repository.json", *(paths[name] for name in SNAPSHOT_TABLES)]:
        for file in _files(path):
            digest.update(_file_identity(file).encode())
    return digest.hexdigest()[:32]


def _memo_path(cache_dir: Path, fingerprint: str) -> Path:
    return cache_dir / f"validated-{fingerprint}.json"


def _read_memo(
    cache_dir: Path, fingerprint: str, snapshot_dir: Path, repository: Repository, paths: Mapping[str, Path]
) -> CheckedSnapshot | None:
    """The remembered check, if it is complete and its Parquet data is still there."""
    try:
        document = json.loads(_memo_path(cache_dir, fingerprint).read_text(encoding="utf-8"))
        tables = {
            name: CheckedTable(
                name=name,
                source=paths[name],
                data=Path(entry["data"]),
                rows=int(entry["rows"]),
                columns=tuple(entry["columns"]),
            )
            for name, entry in document["tables"].items()
            if name in paths
        }
        newest = document["newest_commit_epoch"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if set(tables) != set(SNAPSHOT_TABLES) or not all(table.data.exists() for table in tables.values()):
        return None
    return CheckedSnapshot(snapshot_dir, repository, tables, newest, fingerprint, from_memo=True)


def _write_memo(cache_dir: Path, checked: CheckedSnapshot, paths: Mapping[str, Path], started: float) -> None:
    """Remember a passed check, atomically; not while a file may still be being written."""
    read = [checked.snapshot_dir / "repository.json", *paths.values()]
    newest_change = max(file.stat().st_mtime for path in read for file in _files(path))
    if newest_change > started - RACY_SECONDS:
        log.info("snapshot %s changed within %ss: not remembered as validated", checked.snapshot_dir, RACY_SECONDS)
        return
    document = {
        "check_version": CHECK_VERSION,
        "snapshot_dir": str(checked.snapshot_dir),
        "newest_commit_epoch": checked.newest_commit_epoch,
        "tables": {
            name: {"data": str(t.data), "rows": t.rows, "columns": list(t.columns)}
            for name, t in checked.tables.items()
        },
    }
    _write_atomically(_memo_path(cache_dir, checked.fingerprint), json.dumps(document, indent=1) + "\n")


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


# -- JSONL to Parquet --------------------------------------------------------------------------


def parquet_location(path: Path, name: str, cache_dir: Path | None) -> Path:
    """Where the jobs read table ``name`` stored at ``path``: the user's Parquet, or the JSONL
    table's conversion (made once per fingerprint, see :func:`convert_jsonl`)."""
    if path.suffix != ".jsonl":
        return path
    if cache_dir is None:
        raise ValueError("a JSONL snapshot needs a cache directory for its Parquet conversion")
    return convert_jsonl(path, name, Path(cache_dir))


def convert_jsonl(path: Path, name: str, cache_dir: Path) -> Path:
    """``cache_dir/NAME-<fingerprint>.parquet/``, written in a temporary directory and renamed
    into place, so a run killed half-way leaves no half conversion that a later run would trust.
    A directory without ``_SUCCESS`` (an older, interrupted conversion) is replaced."""
    target = cache_dir / f"{path.stem}-{_fingerprint(path)}.parquet"
    if (target / "_SUCCESS").exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(cache_dir, f".{target.name}.")
    temp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=cache_dir))
    temp.chmod(0o755)  # as Spark made them: readable by whoever reads the warehouse
    try:
        _write_jsonl_as_parquet(path, arrow_schemas()[name], temp / "part-00000.parquet")
        (temp / "_SUCCESS").touch()
        if target.exists() and not (target / "_SUCCESS").exists():
            shutil.rmtree(target, ignore_errors=True)
        try:
            os.rename(temp, target)
        except OSError:  # another run finished the same conversion first
            if not (target / "_SUCCESS").exists():
                raise
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return target


def _remove_abandoned(cache_dir: Path, prefix: str, *, older_than: float = ABANDONED_SECONDS) -> None:
    """Temporary conversions of killed runs (never read: only a rename makes one visible)."""
    limit = time.time() - older_than
    for leftover in cache_dir.glob(f"{prefix}*"):
        try:
            if leftover.stat().st_mtime < limit:
                shutil.rmtree(leftover, ignore_errors=True)
        except OSError:
            pass


def _write_jsonl_as_parquet(path: Path, schema: pa.Schema, out: Path) -> None:
    """Stream ``path`` into one Parquet file of the declared types; times are read as text and
    converted as Spark's ``to_timestamp`` does. Malformed JSON is bad input naming the file.
    Memory: the reader's few blocks of :data:`JSON_BLOCK_BYTES` plus one row group."""
    text_schema = pa.schema([pa.field(f.name, pa.string()) if pa.types.is_timestamp(f.type) else f for f in schema])
    options = pa_json.ParseOptions(explicit_schema=text_schema, unexpected_field_behavior="ignore")
    dictionary = [c for c in _WRITE_DICTIONARY if c in schema.names]
    with pq.ParquetWriter(out, schema, use_dictionary=dictionary or False) as writer:
        try:
            reader = pa_json.open_json(path, read_options=pa_json.ReadOptions(block_size=JSON_BLOCK_BYTES), parse_options=options)
        except pa.ArrowInvalid as exc:
            if str(exc).startswith("Empty JSON"):
                writer.write_table(schema.empty_table())
                return
            raise BadInput(f"malformed ({_first_line(exc)})", source=str(path)) from None
        try:
            for group in _row_groups(_declared_batch(batch, schema) for batch in reader):
                writer.write_table(pa.Table.from_batches(group, schema=schema))
        except pa.ArrowInvalid as exc:
            raise BadInput(f"malformed ({_first_line(exc)})", source=str(path)) from None


def _row_groups(batches: Iterable[pa.RecordBatch]) -> Iterator[list[pa.RecordBatch]]:
    """Batches gathered into row groups of about :data:`ROW_GROUP_ROWS` rows (a JSON block is
    a few thousand rows: as many row groups would make the Parquet slow to read)."""
    group: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        group.append(batch)
        rows += batch.num_rows
        if rows >= ROW_GROUP_ROWS:
            yield group
            group, rows = [], 0
    if group:
        yield group


def _declared_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    arrays = []
    for column in schema:
        values = batch.column(column.name)
        arrays.append(spark_timestamps(values) if pa.types.is_timestamp(column.type) else values)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]


# -- reading Parquet in bounded batches ----------------------------------------------------------


@dataclass
class _Table:
    """A table being checked: its Parquet files' footers and the declared columns they hold.
    Files are opened one at a time when read (a folder may hold thousands)."""

    name: str
    source: Path
    data: Path
    files: list[tuple[Path, pq.FileMetaData]]
    columns: tuple[str, ...]

    @property
    def rows(self) -> int:
        return sum(metadata.num_rows for _, metadata in self.files)

    def open(self, file: int) -> pq.ParquetFile:
        """File number ``file``, its address types read dictionary-encoded (a handful of values)."""
        path, metadata = self.files[file]
        dictionary = [c for c in _READ_DICTIONARY if c in self.columns]
        try:
            return pq.ParquetFile(path, metadata=metadata, read_dictionary=dictionary or None)
        except (pa.ArrowException, OSError) as exc:
            raise BadInput(f"unreadable ({_first_line(exc)})", source=str(self.source)) from None


def _parquet_files(data: Path) -> list[Path]:
    """The Parquet files of a table, as Spark lists them (names starting ``_`` or ``.`` are not data)."""
    if data.is_file():
        return [data]
    return [p for p in _files(data) if not any(part.startswith(("_", ".")) for part in p.relative_to(data).parts)]


def _open_table(name: str, source: Path, data: Path, declared: list[tuple[str, str]]) -> _Table:
    """Read the footers (no data); a missing declared column is bad input."""
    files = _parquet_files(data)
    if not files:
        raise BadInput("unreadable (no Parquet files)", source=str(source))
    try:
        footers = [(p, pq.read_metadata(p)) for p in files]
    except (pa.ArrowException, OSError) as exc:
        raise BadInput(f"unreadable ({_first_line(exc)})", source=str(source)) from None
    present = set(footers[0][1].schema.to_arrow_schema().names)
    missing = [c for c, _ in declared if c not in present and (name, c) not in OPTIONAL_COLUMNS]
    if missing:
        raise BadInput(f"missing column(s) {', '.join(missing)}", source=str(source))
    return _Table(name, source, data, footers, tuple(c for c, _ in declared if c in present))


@dataclass
class _Batch:
    """Rows of one file of a table with the columns a check asked for, or (``known``) the values
    the statistics of row groups that were not read give for the distinct-only columns."""

    file: int
    first_row: int  # index in the file of the batch's first row
    data: pa.RecordBatch
    known: dict[str, set[Any]] = field(default_factory=dict)


def _statistics(row_group: pq.RowGroupMetaData) -> dict[str, Any]:
    return {row_group.column(i).path_in_schema: row_group.column(i).statistics for i in range(row_group.num_columns)}


def _proves_no_nulls(stats: Any) -> bool:
    return stats is not None and stats.has_null_count and stats.null_count == 0


def _single_value(stats: Any) -> tuple[bool, Any]:
    """(True, v) when statistics prove every value of the column chunk is ``v`` (no nulls).
    Sound whatever order the writer compared strings in, and never true of truncated
    statistics (a truncated max is rounded up, so it differs from the truncated min). Only
    text statistics count: bytes (a column without the string annotation) would never equal
    the ids read as text."""
    if _proves_no_nulls(stats) and stats.has_min_max and isinstance(stats.min, str) and stats.min == stats.max:
        return True, stats.min
    return False, None


def _columns_to_read(table: _Table, stats: dict[str, Any]) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The columns a row group must be read for, and the values its statistics already give."""
    needed: list[str] = []
    known: dict[str, Any] = {}
    for column in _VALUE_COLUMNS[table.name]:
        if column not in table.columns:
            continue
        if (table.name, column) in _DISTINCT_ONLY:
            single, value = _single_value(stats.get(column))
            if single:
                known[column] = value
                continue
        needed.append(column)
    for column in NOT_NULL.get(table.name, ()):
        if column not in needed and column not in known and not _proves_no_nulls(stats.get(column)):
            needed.append(column)
    return tuple(needed), known


Run = tuple[tuple[str, ...], list[int], dict[str, set[Any]]]


def _runs(metadata: pq.FileMetaData, table: _Table) -> Iterator[Run]:
    """Consecutive row groups needing the same columns (each read in one pass), with the values
    their statistics give; a run is cut at :data:`BATCH_ROWS` such values, so memory stays
    bounded even for a file of a million one-range row groups."""
    run: Run | None = None
    for index in range(metadata.num_row_groups):
        columns, known = _columns_to_read(table, _statistics(metadata.row_group(index)))
        if run is not None and (run[0] != columns or sum(map(len, run[2].values())) >= BATCH_ROWS):
            yield run
            run = None
        if run is None:
            run = (columns, [], {})
        run[1].append(index)
        for column, value in known.items():
            run[2].setdefault(column, set()).add(value)
    if run is not None:
        yield run


def _batches(table: _Table) -> Iterator[_Batch]:
    """Every row of ``table`` in bounded batches, reading only what statistics leave undecided."""
    for number, (_, metadata) in enumerate(table.files):
        with table.open(number) as parquet:
            first_row = 0
            for columns, groups, known in _runs(metadata, table):
                if known:
                    yield _Batch(number, first_row, pa.record_batch([], names=[]), known)
                if not columns:
                    first_row += sum(metadata.row_group(i).num_rows for i in groups)
                    continue
                try:
                    for batch in parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=groups, columns=list(columns)):
                        yield _Batch(number, first_row, batch)
                        first_row += batch.num_rows
                except (pa.ArrowException, OSError) as exc:
                    raise BadInput(f"malformed ({_first_line(exc)})", source=str(table.source)) from None


def _row(table: _Table, file: int, index: int) -> dict[str, Any]:
    """One row, all declared columns, for a message (read only when a check failed)."""
    seen = 0
    with table.open(file) as parquet:
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=list(table.columns)):
            if index < seen + batch.num_rows:
                row: dict[str, Any] = batch.slice(index - seen, 1).to_pylist()[0]
                return row
            seen += batch.num_rows
    return {}


def _values(column: pa.Array) -> list[Any]:
    """The distinct non-null values of a column (dictionary-encoded or plain)."""
    unique = pc.unique(column)
    if pa.types.is_dictionary(unique.type):
        unique = unique.dictionary_decode()
    values: list[Any] = unique.drop_null().to_pylist()
    return values


def _as_declared(column: str, values: pa.Array) -> pa.Array:
    """A time as the view reads it: text as Spark's ``cast(text as timestamp)``, finer units
    truncated to microseconds (Spark's precision)."""
    if column not in ("creation_date", "last_modified"):
        return values
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return spark_timestamps(values)
    if pa.types.is_timestamp(values.type) and values.type.unit == "ns":
        return pc.cast(values, pa.timestamp("us", tz=values.type.tz), safe=False)
    return values


# -- the checks ----------------------------------------------------------------------------------


@dataclass
class _Findings:
    """What the table scans keep for the referential checks (ids only, never entries)."""

    commits: dict[str, list[Any]] = field(default_factory=dict)
    branches: dict[str, list[Any]] = field(default_factory=dict)
    tags: dict[str, list[Any]] = field(default_factory=dict)
    metarange_ids: set[str] = field(default_factory=set)
    listed_ranges: set[str] = field(default_factory=set)  # listed by a metarange, not yet seen in ranges


class _FirstProblem:
    """The first failing check of a table, in the order the checks are stated."""

    def __init__(self, table: _Table) -> None:
        self.table = table
        self.nulls: dict[str, tuple[int, int]] = {}
        self.address_type: Any = None

    def null_at(self, column: str, batch: _Batch, values: pa.Array) -> None:
        if column in self.nulls or not values.null_count:
            return
        position = pc.index(pc.is_null(values), True).as_py()
        self.nulls[column] = (batch.file, batch.first_row + position)

    def address_types(self, values: Iterable[Any]) -> None:
        if self.address_type is None:
            self.address_type = next((v for v in values if str(v).upper() not in ADDRESS_TYPES), None)

    def raise_first(self) -> None:
        source = str(self.table.source)
        for column in NOT_NULL.get(self.table.name, ()):
            if column in self.nulls:
                row = _row(self.table, *self.nulls[column])
                raise BadInput(f"a row has no {column} (or it is not parseable): {row}", source=source, field=column)
        if self.address_type is not None:
            raise BadInput(
                f"{self.address_type!r} is not one of {', '.join(ADDRESS_TYPES)}", source=source, field="address_type"
            )


def _check_table(table: _Table, findings: _Findings) -> None:
    """Null and address-type checks of one table, collecting the ids the references need."""
    problem = _FirstProblem(table)
    kept = getattr(findings, table.name) if table.name in ("commits", "branches", "tags") else None
    for batch in _batches(table):
        for column in batch.data.schema.names:
            values = _as_declared(column, batch.data.column(column))
            if column in NOT_NULL.get(table.name, ()):
                problem.null_at(column, batch, values)
            if kept is not None:  # small tables: their ids are kept whole for the references
                kept.setdefault(column, []).extend(values.to_pylist())
            elif column == "address_type":
                problem.address_types(_values(values))
            elif (table.name, column) in _DISTINCT_ONLY:
                _collect(findings, table.name, column, _values(values))
        for column, distinct in batch.known.items():
            if column == "address_type":
                problem.address_types(distinct)
            else:
                _collect(findings, table.name, column, distinct)
    problem.raise_first()


def _collect(findings: _Findings, table: str, column: str, values: Iterable[Any]) -> None:
    if table == "metaranges" and column == "meta_range_id":
        findings.metarange_ids.update(values)
    elif table == "metaranges":
        findings.listed_ranges.update(values)
    else:  # ranges.range_id: a listed range that has entries
        findings.listed_ranges.difference_update(values)


def _newest_commit_epoch(findings: _Findings) -> float | None:
    """Seconds since the epoch of the newest commit, as Spark's ``cast(max(...) as double)``."""
    moments = [m if m.tzinfo else m.replace(tzinfo=timezone.utc) for m in findings.commits.get("creation_date", []) if m]
    if not moments:
        return None
    newest: datetime = max(moments)
    return ((newest - _EPOCH) // timedelta(microseconds=1)) / 1e6


def _check_references(tables: Mapping[str, _Table], findings: _Findings) -> None:
    """The referential checks, in the order and with the messages the contract's tests expect."""
    commits = findings.commits
    commit_ids = commits.get("commit_id", [])
    known: set[str] = set()
    for commit_id in commit_ids:
        if commit_id in known:
            raise BadInput(f"duplicate commit {commit_id!r}", source=str(tables["commits"].source), field="commit_id")
        known.add(commit_id)
    for commit_id, parents in zip(commit_ids, commits.get("parents", [None] * len(commit_ids))):
        for parent in parents or ():
            if parent is not None and parent not in known:
                raise BadInput(
                    f"commit {commit_id!r} has parent {parent!r}, which is not in the snapshot",
                    source=str(tables["commits"].source),
                    field="parents",
                )
    for name, id_column in (("branches", "branch_id"), ("tags", "tag_id")):
        rows = getattr(findings, name)
        for ref, commit_id in zip(rows.get(id_column, []), rows.get("commit_id", [])):
            if commit_id not in known:
                raise BadInput(
                    f"{ref!r} points to commit {commit_id!r}, which is not in the snapshot",
                    source=str(tables[name].source),
                    field="commit_id",
                )
    branches: set[str] = set()
    for branch in findings.branches.get("branch_id", []):
        if branch in branches:
            raise BadInput(f"duplicate branch {branch!r}", source=str(tables["branches"].source), field="branch_id")
        branches.add(branch)
    for commit_id, metarange in zip(commit_ids, commits.get("meta_range_id", [None] * len(commit_ids))):
        if metarange and metarange not in findings.metarange_ids:
            raise BadInput(
                f"commit {commit_id!r} has metarange {metarange!r}, which is not in the snapshot (metaranges)",
                source=str(tables["commits"].source),
                field="meta_range_id",
            )
    if findings.listed_ranges:
        metarange, range_id = _first_listing(tables["metaranges"], findings.listed_ranges)
        raise BadInput(
            f"metarange {metarange!r} lists range {range_id!r}, which has no entries in the snapshot (ranges)",
            source=str(tables["metaranges"].source),
            field="range_id",
        )


def _first_listing(metaranges: _Table, missing: set[str]) -> tuple[str, str]:
    """The first metaranges row listing one of the ``missing`` ranges (a second, rare pass)."""
    for number in range(len(metaranges.files)):
        with metaranges.open(number) as parquet:
            for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=["meta_range_id", "range_id"]):
                hits = pc.is_in(batch.column("range_id"), value_set=pa.array(sorted(missing), pa.string()))
                position = pc.index(hits, True).as_py()
                if position >= 0:
                    row = batch.slice(position, 1).to_pylist()[0]
                    return row["meta_range_id"], row["range_id"]
    raise AssertionError("a listed range was collected from metaranges, so a row lists it")


def scan_snapshot(
    snapshot_dir: Path,
    repository: Repository,
    paths: Mapping[str, Path],
    *,
    cache_dir: Path | None,
    fingerprint: str,
) -> CheckedSnapshot:
    """The full check: convert JSONL tables, read every footer (missing columns), check each
    table (nulls, address types), then the references between them."""
    declared = source_columns("lakefs")
    tables = {
        name: _open_table(name, paths[name], parquet_location(paths[name], name, cache_dir), declared[name])
        for name in SNAPSHOT_TABLES
    }
    findings = _Findings()
    for name in SNAPSHOT_TABLES:
        _check_table(tables[name], findings)
    _check_references(tables, findings)
    checked = {
        name: CheckedTable(name, t.source, t.data.resolve(), t.rows, t.columns) for name, t in tables.items()
    }
    log.info("snapshot %s checked: %s", snapshot_dir, ", ".join(f"{k}={v.rows}" for k, v in checked.items()))
    return CheckedSnapshot(snapshot_dir, repository, checked, _newest_commit_epoch(findings), fingerprint)


