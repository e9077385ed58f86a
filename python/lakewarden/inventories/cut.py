"""An optimized uncommitted run's cut of a Parquet inventory report, made in the driver with
pyarrow before Spark reads a row.

An optimized run considers only (a) the objects its previous run's uncommitted inventory lists
and (b) the objects written after that run's storage cutoff (:class:`lakewarden.inventory.Considered`);
at 1% churn that is a tenth of what storage holds. The same cut in Spark
(:func:`lakewarden.inventory.keep_considered`) read every report row in a Spark job, and its
plan waited for a broadcast of the previous keys before any model could start: at 1M report
rows and 100k previous keys it was the optimized run's whole difference from a run with nothing
new (2 cores: the models started 3.3 s later, the run took 52.4 s against 46.1 s). Here the
report's files are read with Arrow, the rows the run considers are written to new Parquet files
with the report's own schema, and Spark reads only those (0.6 s for 1M rows on the same cores,
in the thread that writes the storage table, while the models that read only the snapshot run).

The rows are exactly those the Spark cut keeps, so every check after it (inside the namespace,
not under ``_lakefs/``, delete markers, the models' test) sees the same rows:

* a row is kept when its modification time is after the cutoff (an unknown time is not), or
  when its key is the key of an address the previous inventory lists (under the report's URI
  root), compared byte for byte as Spark compares strings;
* a modification time is read as Spark reads it: a Parquet timestamp in milliseconds or
  microseconds (a time without a zone as UTC, the session's zone) or epoch milliseconds in an
  integer column. Any other type (strings, nanoseconds, INT96), a key column that is not a
  string, files whose schemas differ, or a previous inventory of more than
  :data:`CUT_IN_DRIVER_UP_TO` objects, and this module declines (None): Spark cuts as before.
  The driver then holds at most that many keys, whatever the repository's size.

A declined cut changes nothing but where the rows are cut. CSV and ORC reports are always cut
in Spark (their keys and times are parsed text, which only Spark's own parsing reads as the
readers do).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    import pyarrow.dataset as ds

log = logging.getLogger(__name__)

#: the most keys of a previous uncommitted inventory the driver holds for the cut (about 100
#: bytes each with the hash table: ~200 MB); a larger inventory is cut in Spark
CUT_IN_DRIVER_UP_TO = 2_000_000
#: the cut's scans read one batch of one file ahead, not Arrow's default (16 batches, 4 files):
#: the cut runs while the JVM boots, and the default's buffers cost page faults, not speed. At
#: 8.45M report rows (2 cores, alone): 0.14-0.17 s of system time and 1.9-2.0 s of wall time,
#: against 1.3-5.9 s and 2.5-5.1 s; peak memory 670-710 MB against 835-860 MB
SCAN_READAHEAD = {"batch_readahead": 1, "fragment_readahead": 1}


@dataclass(frozen=True)
class ReportColumns:
    """Which of a report's columns hold the object's key and its modification time, and which
    its reader reads at all: each a function of the file's column names (the readers match
    names their own way).

    ``read`` None: the reader may read any column (Azure's and GCS's row filters look at the
    columns a file has), and the cut keeps them all. Otherwise the cut keeps only those (and
    the key and time), so it never decodes a column nobody reads (an S3 report's ``ETag``,
    ``StorageClass``...): a column the reader reads and the cut left out would fail the read,
    never change its rows."""

    key: Callable[[Sequence[str]], str | None]
    modified: Callable[[Sequence[str]], str | None]
    read: Callable[[Sequence[str]], Sequence[str]] | None = None


@dataclass(frozen=True)
class CutFiles:
    """The report cut: its rows an optimized run considers, in new Parquet files."""

    paths: tuple[str, ...]
    rows_read: int
    rows_kept: int
    seconds: float


def cut_parquet_report(
    paths: Sequence[str],
    *,
    columns: ReportColumns,
    uri_root: str,
    previous_location: Path,
    cutoff: datetime,
    work_dir: Path,
) -> CutFiles | None:
    """``paths`` (a Parquet report's data files) cut to the rows written after ``cutoff`` or
    keyed as an address of the previous uncommitted inventory at ``previous_location`` lists;
    None when the cut cannot be made here exactly as Spark makes it (the module's docstring).
    The files are written under ``work_dir``."""
    import pyarrow.parquet as pq

    started = time.monotonic()
    schemas = [pq.read_schema(path) for path in paths]
    if not schemas or any(not schema.equals(schemas[0]) for schema in schemas[1:]):
        _declined("the report's data files have different schemas")
        return None
    schema = schemas[0]
    key = columns.key(schema.names)
    modified = columns.modified(schema.names)
    if key is None:
        _declined("no key column")  # the reader names the problem itself
        return None
    reason = _unsupported(schema, key, modified)
    if reason:
        _declined(reason)
        return None
    use_jemalloc()
    previous = _previous_keys(previous_location, uri_root)
    if previous is None:
        _declined(f"the previous uncommitted inventory holds more than {CUT_IN_DRIVER_UP_TO:,d} objects")
        return None
    work_dir.mkdir(parents=True, exist_ok=True)
    target = work_dir / "cut-00000.parquet"
    kept_columns = _kept_columns(schema, columns, key, modified)
    rows_read, rows_kept = _write_cut(paths, schema, kept_columns, key, modified, previous, cutoff, target)
    seconds = time.monotonic() - started
    log.info("inventory report cut in the driver: %d of %d rows kept in %.2fs", rows_kept, rows_read, seconds)
    return CutFiles((str(target),), rows_read, rows_kept, seconds)


def use_jemalloc() -> None:
    """Make jemalloc the process's Arrow memory pool, unless ``ARROW_DEFAULT_MEMORY_POOL`` names
    one or this pyarrow has no jemalloc (Windows wheels). The default, mimalloc, hands the cut's
    freed buffers back to the system and faults them in again: at 8.45M report rows (2 cores,
    alone, three runs each) the cut took 2.6-5.2 s of CPU in the kernel and 3.4-5.2 s of wall
    time with it, against 0.6-0.7 s and 2.2-2.4 s with jemalloc. Buffers allocated before keep
    the pool they came from."""
    import os

    import pyarrow as pa

    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:
        return
    pa.set_memory_pool(pool)


def _kept_columns(schema: "pa.Schema", columns: ReportColumns, key: str, modified: str | None) -> list[str]:
    """The report's columns the cut writes, in the report's order: those its reader reads (all
    when it does not say) and always the key and the time the cut itself tests."""
    names = list(schema.names)
    if columns.read is None:
        return names
    wanted = {*columns.read(names), key, *([modified] if modified is not None else [])}
    return [name for name in names if name in wanted]


def _declined(reason: str) -> None:
    log.info("inventory report cut in Spark: %s", reason)


def _unsupported(schema: "pa.Schema", key: str, modified: str | None) -> str | None:
    """Why the key or time column cannot be compared here as Spark compares it (None: it can)."""
    import pyarrow as pa

    key_type = schema.field(key).type
    if pa.types.is_dictionary(key_type):
        key_type = key_type.value_type
    if not (pa.types.is_string(key_type) or pa.types.is_large_string(key_type)):
        return f"the key column {key!r} is {key_type}, not a string"
    if modified is not None:
        kind = schema.field(modified).type
        if pa.types.is_timestamp(kind):
            if kind.unit not in ("ms", "us"):
                return f"the time column {modified!r} is {kind}"
        elif not (pa.types.is_int64(kind) or pa.types.is_int32(kind)):
            return f"the time column {modified!r} is {kind}"
    return None


def _previous_keys(location: Path, uri_root: str) -> "pa.Array | None":
    """The keys (the address after ``uri_root``) of the previous uncommitted inventory's objects
    under ``uri_root``; None when it holds more than :data:`CUT_IN_DRIVER_UP_TO` objects. An
    address under another root cannot match a row of this report (Spark's cut drops it too)."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.compute as pc

    dataset = ds.dataset(location, format="parquet")
    if dataset.count_rows() > CUT_IN_DRIVER_UP_TO:
        return None
    addresses = dataset.to_table(columns=["physical_address"]).column("physical_address").combine_chunks()
    addresses = addresses.filter(pc.fill_null(pc.starts_with(addresses, uri_root), False))
    return pc.utf8_slice_codeunits(addresses, len(uri_root)) if len(addresses) else pa.array([], pa.string())


def _write_cut(
    paths: Sequence[str],
    schema: "pa.Schema",
    names: list[str],
    key: str,
    modified: str | None,
    previous: "pa.Array",
    cutoff: datetime,
    target: Path,
) -> tuple[int, int]:
    """Two Arrow plans over the files' columns ``names``, written one after the other to
    ``target``: the rows written after the cutoff, then the others whose key is a previous key
    (a semi join: the previous keys hashed once for every file). The two halves are disjoint, so
    no row is written twice; an unknown time is in the second half, as in Spark
    (``coalesce(last_modified > cutoff, false)``). Not one plan with a union node: Arrow 26's
    union crashed the process while other Python threads ran (the models' threads), its two
    inputs do not."""
    import pyarrow as pa
    import pyarrow.acero as ac
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    dataset = ds.dataset(list(paths), schema=schema, format="parquet")
    newer = _written_after(modified, schema, cutoff) if modified is not None else ds.scalar(False)
    written = pa.schema([field for field in schema if field.name in names])

    def scan(condition: "ds.Expression") -> ac.Declaration:
        return ac.Declaration.from_sequence(
            [
                ac.Declaration("scan", ac.ScanNodeOptions(dataset, columns=names, **SCAN_READAHEAD)),
                ac.Declaration("filter", ac.FilterNodeOptions(condition)),
                ac.Declaration("project", ac.ProjectNodeOptions([ds.field(name) for name in names], names)),
            ]
        )

    previous_keys = ac.Declaration("table_source", ac.TableSourceNodeOptions(pa.table({"lakewarden_previous_key": previous})))
    in_previous = ac.Declaration(
        "hashjoin",
        ac.HashJoinNodeOptions("left semi", left_keys=[key], right_keys=["lakewarden_previous_key"]),
        inputs=[scan(~newer), previous_keys],
    )
    rows_kept = 0
    with pq.ParquetWriter(target, written) as writer:
        for plan in (scan(newer), in_previous):
            for batch in plan.to_reader(use_threads=False):
                rows_kept += batch.num_rows
                writer.write_batch(batch if batch.schema.equals(written) else batch.cast(written))
    rows_read = sum(pq.ParquetFile(path).metadata.num_rows for path in paths)
    return rows_read, rows_kept


def _written_after(modified: str, schema: "pa.Schema", cutoff: datetime) -> "ds.Expression":
    """``modified > cutoff`` as Spark evaluates it on the column, false when the time is
    unknown (``coalesce(last_modified > cutoff, false)``). Spark holds times in microseconds: a
    value in milliseconds is later than the cutoff exactly when it is later than the cutoff's
    millisecond rounded down (``v * 1000 > c`` is ``v > floor(c / 1000)`` for an integer v).
    A timestamp is compared as the instant it stores (one without a zone is read as UTC, the
    session's zone); an integer as epoch milliseconds (Spark's ``timestamp_millis``)."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.compute as pc

    kind = schema.field(modified).type
    column = ds.field(modified)
    micros = (cutoff.astimezone(timezone.utc) - EPOCH) // MICROSECOND
    if pa.types.is_timestamp(kind):
        bound = pa.scalar(micros if kind.unit == "us" else micros // 1000, pa.int64()).cast(pa.timestamp(kind.unit, tz=kind.tz))
    else:  # int32 or int64 epoch milliseconds, compared as int64 (an int32 never overflows it)
        column = column.cast(pa.int64())
        bound = pa.scalar(micros // 1000, pa.int64())
    return pc.is_valid(column) & (column > ds.scalar(bound))


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MICROSECOND = timedelta(microseconds=1)
