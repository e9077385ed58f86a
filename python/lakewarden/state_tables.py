"""What a job keeps across runs: Parquet tables under ``STATE/tables``, and the lock that
serialises their writers.

Lifecycle's ledger (``lifecycle_run_events``) and policy history (``lifecycle_policy_history``)
and uncommitted GC's run history (``gc_uncommitted_runs``) are the only tables that outlive a
process. They are plain Parquet directories, so any tool can read them, and Spark's in-memory
catalog knows them only because :func:`register_state_tables` points a table at each directory
when the session starts (``macros/create_snapshot_tables_if_missing.sql`` does the same for people
who run ``dbt build`` themselves). Their columns are declared once, in ``models/sources.yml``
(source ``lakewarden``).

Readers need nothing: Parquet files are written whole and then appear, so two processes can read
one state dir at once. Writers take :func:`state_lock`: a job that reads its history, computes
and appends must not interleave with another run doing the same on the same state dir. The lock
says who holds it (pid, command, since when), and a second writer stops at once with that line
rather than wait behind a run that may take an hour.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, TypeVar

from lakewarden.errors import LakewardenError

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

#: Database of the runner-written tables (the dbt var ``snapshot_schema``, source ``lakewarden``).
STATE_SCHEMA = "lakewarden_snapshot"
TABLES_DIR = "tables"
LOCK_FILE = ".lock"

_registered: dict[int, Path] = {}
#: one registration at a time: a job's JVM starts on a thread (SparkStarter) that registers the
#: tables while another thread of the process may do the same; interleaved, one thread's drop
#: and create met the other's create ("TABLE_OR_VIEW_ALREADY_EXISTS")
_registering = threading.Lock()
_held = threading.local()
_T = TypeVar("_T")


class StateLocked(LakewardenError):
    """Another process is writing this state dir's tables."""


def table_location(state: Path, table: str) -> Path:
    """Where a state table's Parquet files go: ``STATE/tables/<name>``."""
    return Path(state) / TABLES_DIR / table


def stored_location(state: Path, table: str) -> Path:
    """Where a state table's files are now: :func:`table_location`, or the directory of its
    former name (:func:`former_names`) in a state dir that has only that one."""
    current = table_location(state, table)
    former = former_names().get(table)
    if former is not None and (not current.exists() or _empty_directory(current)):
        previous = table_location(state, former)
        if previous.is_dir():
            return previous
    return current


def _adopt_former_name(state: Path, table: str) -> bool:
    """Move a table kept under its former name to its current one (the caller holds the lock).
    True when it moved: the session's tables must be pointed again."""
    location = stored_location(state, table)
    current = table_location(state, table)
    if location == current:
        return False
    if current.exists():
        current.rmdir()  # empty (a plain dbt build points the table there first); fails otherwise
    os.rename(location, current)
    return True


def _empty_directory(path: Path) -> bool:
    return path.is_dir() and not any(path.iterdir())


def qualified(table: str) -> str:
    return f"{STATE_SCHEMA}.{table}"


def state_table_names() -> tuple[str, ...]:
    """The tables kept across runs: the sources of ``models/sources.yml`` (source ``lakewarden``)
    whose ``meta`` says ``state_table: true`` (the on-run-start macro reads the same flag)."""
    from lakewarden.snapshot import source_meta

    return tuple(name for name, meta in source_meta("lakewarden").items() if meta.get("state_table"))


def former_names() -> dict[str, str]:
    """``table -> former name`` of the state tables renamed since a state dir may have been
    written (``meta.former_name`` in ``models/sources.yml``). Such a dir still has the rows under
    the former name: readers find them there (:func:`stored_location`), and the first writer to
    append moves the directory to the current name under the lock (a rename: no row is copied
    or lost)."""
    from lakewarden.snapshot import source_meta

    return {name: str(meta["former_name"]) for name, meta in source_meta("lakewarden").items() if meta.get("former_name")}


def _ddl(table: str) -> str:
    from lakewarden.snapshot import source_ddl

    return source_ddl("lakewarden", table)


def register_state_tables(spark: "SparkSession", state: Path, *, refresh: bool = False) -> None:
    """Point the session's state tables at ``STATE/tables/<name>`` (created empty when absent).

    Cheap (three catalog entries, no scan) and idempotent; a session that is handed another
    state dir (the test suite does that) re-points them: dropping an external table never
    deletes its files.

    ``refresh``: a new run in a session that registered this state dir before (an engine, a
    Python API caller) forgets the files the session listed then. Spark keeps a table's file
    listing until told otherwise, and between two runs another process may have appended to
    the tables, merged their files, or the state dir may have been restored from a copy: a
    stale listing then misses rows (an engine's run not seeing a local run's ledger entry) or
    names files that are gone (seen: an engine's run failed on a ``range_windows`` file after
    its state dir was restored). Re-listing happens on the next read, as in a new process."""
    from lakewarden.snapshot import sql_string

    state = Path(state).resolve()
    key = id(spark)
    with _registering:
        registered = _registered.get(key) == state
        if registered and not refresh:
            return
        if not registered:
            spark.sql(f"create database if not exists {STATE_SCHEMA}")
        for table in state_table_names():
            location = stored_location(state, table)
            location.mkdir(parents=True, exist_ok=True)  # a restored state dir may lack it
            if registered:
                spark.catalog.refreshTable(qualified(table))
                continue
            spark.sql(f"drop table if exists {qualified(table)}")
            spark.sql(f"create table {qualified(table)} ({_ddl(table)}) using parquet location {sql_string(str(location))}")
        _registered[key] = state


def append_rows(spark: "SparkSession", state: Path, table: str, rows: Sequence[Sequence[Any]]) -> None:
    """Append rows (in the declared column order) to a state table, under the state lock.

    A few rows a run records (its outcome, its policy) are written as one Parquet file with
    pyarrow, beside the table's other files, and the session's view of the table refreshed:
    no Spark job (a Python-rows DataFrame written by Spark cost ~1–3 s of a run)."""
    if not rows:
        return
    with state_lock(state, f"append to {table}"):
        _register_current(spark, state, table)
        write_parquet_part(table_location(state, table), arrow_rows(table, rows))
        merge_files(state, table)
        spark.catalog.refreshTable(qualified(table))


def _register_current(spark: "SparkSession", state: Path, table: str) -> None:
    """Register the state tables with ``table`` under its current name (the lock is held)."""
    if _adopt_former_name(Path(state), table):
        _registered.pop(id(spark), None)
    register_state_tables(spark, state)


def arrow_rows(table: str, rows: Sequence[Sequence[Any]]) -> Any:
    """Rows of a state table as an Arrow table with its declared columns and types (times as
    UTC microseconds; a naive datetime is taken as UTC)."""
    import pyarrow as pa

    from lakewarden.snapshot import arrow_type, source_columns

    columns = source_columns("lakewarden")[table]
    arrays = []
    for index, (_, kind) in enumerate(columns):
        values = [row[index] for row in rows]
        if kind == "timestamp":
            values = [v.replace(tzinfo=timezone.utc) if isinstance(v, datetime) and v.tzinfo is None else v for v in values]
        if kind.startswith("map<"):
            values = [None if v is None else list(dict(v).items()) for v in values]
        arrays.append(pa.array(values, type=arrow_type(kind)))
    return pa.Table.from_arrays(arrays, names=[name for name, _ in columns])


def state_rows(state: Path, table: str) -> list[dict[str, Any]]:
    """Every row of a small state table (a run history: a row a run), read with pyarrow from its
    Parquet files, no Spark job: the declared columns (None where an older file lacks one), and
    times as UTC datetimes (a file without a zone on its times, as Spark's INT96, holds UTC).
    Not for tables that grow with the repository."""
    import pyarrow.parquet as pq

    from lakewarden.snapshot import source_columns

    columns = [name for name, _ in source_columns("lakewarden")[table]]
    directory = stored_location(Path(state), table)
    if not directory.is_dir():
        return []
    rows: list[dict[str, Any]] = []
    for file in visible_parquet(directory):
        data = pq.read_table(file)
        present = [name for name in columns if name in data.column_names]
        for record in data.select(present).to_pylist():
            rows.append({name: _utc(record.get(name)) for name in columns})
    return rows


def _utc(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    return value


def parquet_rows(directory: Path) -> int:
    """Rows of a Parquet directory from its files' footers (no scan, no Spark job)."""
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(file).num_rows for file in visible_parquet(Path(directory)))


def visible_parquet(directory: Path, *, nested: bool = True) -> list[Path]:
    """The Parquet files a reader of a table's directory sees, sorted: none hidden (a file being
    written, :func:`write_parquet_part`, :func:`merge_files`) nor Spark's own (``_SUCCESS``, a
    ``_temporary`` directory of a write under way), at any depth or (``nested=False``) at the top."""
    files = directory.rglob("*.parquet") if nested else directory.glob("*.parquet")
    return sorted(
        file for file in files
        if file.is_file() and not any(part.startswith((".", "_")) for part in file.relative_to(directory).parts)
    )


def _part_name(tag: str) -> str:
    """A part file's name: its time first (the files list in the order they were written), then
    ``tag``, unique to the writer."""
    return f"part-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S%fZ')}-{tag}.parquet"


def write_parquet_part(directory: Path, arrow_table: Any) -> Path:
    """Write one Parquet part file into a table's directory, whole or not at all (a temporary
    name Spark ignores, then a rename), so a reader never sees half a file."""
    import uuid

    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    name = _part_name(uuid.uuid4().hex)
    temporary = directory / f".{name}.tmp"
    pq.write_table(arrow_table, temporary)
    os.replace(temporary, directory / name)
    return directory / name


#: a state table with this many Parquet files is merged into one (:func:`merge_files`)
MERGE_AT_FILES = 16
#: rows read and written at a time by a merge: its memory, whatever the table's size
MERGE_BATCH_ROWS = 65_536
#: the record of a merge under way: which files the merged one replaces (:func:`_finish_merges`)
MERGE_RECORD = ".merge-{token}.json"


def merge_files(state: Path, table: str) -> bool:
    """Merge a state table's files into one once it has :data:`MERGE_AT_FILES` (the caller holds
    the state lock); True when it merged. The rows stay the same.

    Why: each run appends a file or three to these tables, and every read of a table opens each
    of its files; a year of daily lifecycle runs is a thousand files of ``lifecycle_run_events``.
    Measured on a warm session (2 cores): a query over it as 312 files took 0.6-0.8 s, as one
    file 0.2 s. The run histories gain a few rows a run; ``range_windows`` a row per range new
    to a run (its staging model keeps one row per range whatever the files hold).

    How, so that no row is lost or kept twice, even when the process dies half way: the merged
    file is written under a hidden name with the declared columns (a column an older file lacks
    reads null, as Spark reads it), a batch of rows at a time (memory: one batch); a record names the
    files it replaces; then the merged file takes a visible name, the files it replaces are
    removed, and the record last. The next merge, or append, of this table finishes a record
    left behind (:func:`_finish_merges`). Lifecycle and uncommitted GC read their history under
    the lock; a reader without it (a report, dbt from a shell, committed GC looking for a mark
    to reuse: the newest matching row wins, a row twice changes nothing) may meet rows twice for
    the moment between the rename and the removals. A merge that fails is logged and changes
    nothing: the rows are whole without it."""
    directory = table_location(Path(state), table)
    if not directory.is_dir():
        return False
    try:
        _finish_merges(directory)
    except (OSError, ValueError, KeyError) as exc:  # a record this code did not write: left alone
        log.warning("state table %s: a merge record could not be finished (%s); no merge now", table, exc)
        return False
    files = visible_parquet(directory, nested=False)  # a merge writes its file beside them
    if len(files) < MERGE_AT_FILES:
        return False
    import secrets

    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_rows(table, []).schema
    token = secrets.token_hex(6)
    merged = _part_name(f"merged-{token}")
    temporary = directory / f".{merged}.tmp"
    record = directory / MERGE_RECORD.format(token=token)
    partial_record = directory / f".{record.name}.tmp"
    try:
        with pq.ParquetWriter(temporary, schema) as writer:
            for file in files:
                with pq.ParquetFile(file) as source:
                    for batch in source.iter_batches(batch_size=MERGE_BATCH_ROWS):
                        writer.write_table(_conformed(pa.Table.from_batches([batch]), schema))
        partial_record.write_text(json.dumps({"merged": merged, "temporary": temporary.name, "replaces": [f.name for f in files]}))
        os.replace(partial_record, record)
        os.replace(temporary, directory / merged)
        _finish_merges(directory)
    except Exception as exc:  # noqa: BLE001 - a merge is upkeep: the rows are whole without it
        if not record.exists():  # nothing recorded: the files stay, the merge's own go
            temporary.unlink(missing_ok=True)
            partial_record.unlink(missing_ok=True)
        log.warning("state table %s: its %d files were not merged (%s); its rows are as they were", table, len(files), exc)
        return False
    return True


def _finish_merges(directory: Path) -> None:
    """Complete what a merge recorded: its merged file visible, the files it replaces go; not
    yet visible (the process died before the rename), the merged file goes and the others stay."""
    for record in sorted(directory.glob(MERGE_RECORD.format(token="*"))):
        plan = json.loads(record.read_text())
        if (directory / plan["merged"]).is_file():
            for name in plan["replaces"]:
                (directory / name).unlink(missing_ok=True)
                (directory / f".{name}.crc").unlink(missing_ok=True)  # Spark's checksum beside its file
        else:
            (directory / plan["temporary"]).unlink(missing_ok=True)
        record.unlink()


def _conformed(data: Any, schema: Any) -> Any:
    """``data`` (one file's rows) with exactly the columns and types of ``schema``: a missing
    column as nulls, times without a zone taken as UTC (Spark's INT96 holds UTC)."""
    import pyarrow as pa

    columns = []
    for field in schema:
        if field.name not in data.column_names:
            columns.append(pa.nulls(data.num_rows, type=field.type))
            continue
        columns.append(data.column(field.name).cast(field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def append_frame(spark: "SparkSession", state: Path, table: str, frame: Any) -> None:
    """Append a DataFrame with the table's columns (selected by name) to a state table, as one
    Parquet file.

    One file, not one a partition: every read of a state table opens each of its files, and these
    tables gain files with every run (a lifecycle run's policy rows came as two). Measured on a
    warm session (2 cores): a query over ``lifecycle_run_events`` as 312 files took 0.6-0.8 s,
    the same rows as one file 0.2 s. The frames appended here are a run's few rows (its policy,
    the windows of the ranges new to it), already computed: one task writes them."""
    from lakewarden.snapshot import source_columns

    columns = [name for name, _ in source_columns("lakewarden")[table]]
    with state_lock(state, f"append to {table}"):
        _register_current(spark, state, table)
        frame.select(*columns).coalesce(1).write.insertInto(qualified(table))
        merge_files(state, table)
        spark.catalog.refreshTable(qualified(table))


def within_this_hold(function: Callable[[], _T]) -> Callable[[], _T]:
    """``function`` for another thread of this process, run within the state dir writer lock
    this thread holds (:func:`state_lock`): the lock is re-entrant per thread, so a write
    started on a worker thread would otherwise find the lock taken (by this very process) and
    fail. The caller waits for the worker before it lets the lock go (a job's mark hands one
    stretch of its writes to a thread and joins it within its hold). Raises RuntimeError when
    this thread holds no lock: a worker must never write a state dir unlocked."""
    depth = getattr(_held, "depth", 0)
    if not depth:
        raise RuntimeError("within_this_hold: this thread holds no state dir lock")

    def run() -> _T:
        _held.depth = depth
        try:
            return function()
        finally:
            _held.depth = 0

    return run


@contextlib.contextmanager
def state_lock(state: Path, what: str) -> Iterator[None]:
    """Hold the state dir's writer lock for ``what`` (re-entrant within the thread holding it;
    another thread of this process works within that hold through :func:`within_this_hold`).

    Raises :class:`StateLocked` naming the holder when another process has it."""
    depth = getattr(_held, "depth", 0)
    if depth:
        _held.depth = depth + 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    path = Path(state) / TABLES_DIR / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise StateLocked(f"state dir {state} is being written by {holder}; try again when it has finished") from None
        handle.seek(0)
        handle.truncate()
        since = datetime.now(timezone.utc).isoformat(timespec="seconds")
        handle.write(json.dumps({"pid": os.getpid(), "command": " ".join(sys.argv[:4]), "doing": what, "since": since}))
        handle.flush()
        _held.depth = 1
        try:
            yield
        finally:
            _held.depth = 0
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        handle.close()
