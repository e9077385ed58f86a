"""The state dir's tables kept across runs and its writer lock (lakewarden.state_tables)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from lakewarden.state_tables import StateLocked, state_lock, state_table_names, table_location, within_this_hold

HOLD = """
import sys, time
sys.path.insert(0, {python!r})
from lakewarden.state_tables import state_lock
with state_lock({state!r}, "holding for the test"):
    print("held", flush=True)
    time.sleep(30)
"""


def test_the_state_tables_are_the_sources_marked_state_table() -> None:
    assert set(state_table_names()) == {
        "lifecycle_run_events",
        "lifecycle_policy_history",
        "gc_uncommitted_runs",
        "range_windows",
        "committed_gc_marks",
    }


def test_a_second_writer_stops_at_once_naming_the_holder(tmp_path: Path) -> None:
    python_dir = str(Path(__file__).resolve().parents[1])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD.format(python=python_dir, state=str(tmp_path))], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(StateLocked) as refused:
            with state_lock(tmp_path, "a second run"):
                pass
        assert time.monotonic() - started < 5, "a second writer must not wait behind the first"
        message = str(refused.value)
        assert str(tmp_path) in message and f'"pid": {holder.pid}' in message and "holding for the test" in message
    finally:
        holder.kill()
        holder.wait()
    with state_lock(tmp_path, "after the holder ended"):  # the kernel released the dead holder's lock
        pass


def test_the_lock_is_reentrant_within_a_process(tmp_path: Path) -> None:
    with state_lock(tmp_path, "outer"):
        with state_lock(tmp_path, "inner"):
            pass
        with state_lock(tmp_path, "inner again"):
            pass


def test_a_worker_thread_writes_within_the_hold_of_the_thread_that_took_the_lock(tmp_path: Path) -> None:
    """The lock is re-entrant per thread: a worker thread of the holder finds it taken (by this
    very process) unless it works within the holder's hold (within_this_hold, as lifecycle's
    mark does for its state appends); and no worker may be handed a hold that is not there."""
    from concurrent.futures import ThreadPoolExecutor

    def write() -> str:
        with state_lock(tmp_path, "worker's append"):
            return "written"

    with pytest.raises(RuntimeError, match="holds no state dir lock"):
        within_this_hold(write)
    with state_lock(tmp_path, "mark"), ThreadPoolExecutor(max_workers=1) as pool:
        with pytest.raises(StateLocked):
            pool.submit(write).result()  # a bare worker: refused, as another process would be
        assert pool.submit(within_this_hold(write)).result() == "written"
        with pytest.raises(StateLocked):
            pool.submit(write).result()  # the worker holds nothing once its function is done
    with state_lock(tmp_path, "free again"):
        pass


def test_tables_live_under_the_state_dir(tmp_path: Path) -> None:
    assert table_location(tmp_path, "gc_uncommitted_runs") == tmp_path / "tables" / "gc_uncommitted_runs"


def test_state_rows_reads_a_small_table_without_spark(tmp_path: Path) -> None:
    """A run history read with pyarrow: declared columns (None where an older file lacks one),
    times in UTC whether or not the file has a zone on them, files being written skipped."""
    from datetime import datetime, timezone

    import pyarrow as pa
    import pyarrow.parquet as pq

    from lakewarden.state_tables import arrow_rows, state_rows, write_parquet_part

    table = "gc_uncommitted_runs"
    assert state_rows(tmp_path, table) == []
    directory = table_location(tmp_path, table)
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    columns = [field.name for field in arrow_rows(table, []).schema]
    row = tuple(
        moment if name in ("run_at", "storage_observed_at", "storage_cutoff", "finished_at") else
        False if name == "dry_run" else 7 if name in ("min_age_seconds", "num_marked") else
        None if name == "last_commit_created_at" else f"{name}-1"
        for name in columns
    )
    write_parquet_part(directory, arrow_rows(table, [row]))
    # an older file: no inventory_fingerprint, times without a zone (as Spark's INT96 reads)
    pq.write_table(pa.table({"run_id": ["run-0"], "storage_namespace": ["ns"], "run_at": [moment.replace(tzinfo=None)]}),
                   directory / "part-older.parquet")
    pq.write_table(pa.table({"run_id": ["half-written"]}), directory / ".part-partial.parquet.tmp.parquet")

    rows = {r["run_id"]: r for r in state_rows(tmp_path, table)}
    assert set(rows) == {"run_id-1", "run-0"}
    assert rows["run_id-1"]["run_at"] == moment and rows["run_id-1"]["dry_run"] is False
    assert rows["run_id-1"]["inventory_fingerprint"] == "inventory_fingerprint-1"
    assert rows["run-0"]["run_at"] == moment and rows["run-0"]["run_at"].tzinfo is not None
    assert rows["run-0"]["inventory_fingerprint"] is None and rows["run-0"]["finished_at"] is None


def test_every_declared_state_column_has_its_arrow_type(tmp_path: Path) -> None:
    """Each state table's declared columns (models/sources.yml) map to Arrow, struct arrays
    included (range_windows' age_windows), and a row written with them reads back as written."""
    from datetime import datetime, timezone

    import pyarrow as pa

    from lakewarden.snapshot import arrow_type
    from lakewarden.state_tables import arrow_rows, state_rows, write_parquet_part

    for table in state_table_names():
        arrow_rows(table, [])  # raises for a type without an Arrow mapping
    assert arrow_type("array<struct<segment:string,min_last_modified:timestamp,n:array<bigint>>>") == pa.list_(
        pa.struct([("segment", pa.string()), ("min_last_modified", pa.timestamp("us", tz="UTC")), ("n", pa.list_(pa.int64()))])
    )
    day = datetime(2026, 1, 2, tzinfo=timezone.utc)
    windows = [{"segment": "events/", "min_last_modified": day, "max_last_modified": day}]
    write_parquet_part(table_location(tmp_path, "range_windows"), arrow_rows("range_windows", [("s3://b/ns", "r1", day, day, 1, "run-1", windows)]))
    (row,) = state_rows(tmp_path, "range_windows")
    assert row["range_id"] == "r1" and row["age_windows"] == windows


def test_a_state_dir_from_before_a_rename_keeps_its_rows(tmp_path: Path) -> None:
    """Uncommitted GC's history was ``uncommitted_gc_runs``: a state dir written then is read
    where it is (an optimized run still finds its previous run), and the first append moves the
    directory to ``gc_uncommitted_runs`` whole, then writes beside the old rows."""
    from lakewarden.state_tables import (
        _adopt_former_name,
        arrow_rows,
        former_names,
        state_rows,
        stored_location,
        write_parquet_part,
    )

    table = "gc_uncommitted_runs"
    assert former_names() == {table: "uncommitted_gc_runs"}
    old = table_location(tmp_path, "uncommitted_gc_runs")
    columns = [field.name for field in arrow_rows(table, []).schema]
    row = tuple("run-old" if name == "run_id" else None for name in columns)
    write_parquet_part(old, arrow_rows(table, [row]))

    assert stored_location(tmp_path, table) == old
    assert [r["run_id"] for r in state_rows(tmp_path, table)] == ["run-old"]

    with state_lock(tmp_path, "test"):
        assert _adopt_former_name(tmp_path, table) is True
        assert _adopt_former_name(tmp_path, table) is False  # once
    assert not old.exists() and stored_location(tmp_path, table) == table_location(tmp_path, table)
    write_parquet_part(table_location(tmp_path, table), arrow_rows(table, [tuple("run-new" if n == "run_id" else None for n in columns)]))
    assert sorted(r["run_id"] for r in state_rows(tmp_path, table)) == ["run-new", "run-old"]


def test_a_current_table_wins_over_a_former_one(tmp_path: Path) -> None:
    """Both directories present: a current one with rows is the table and the former is left
    alone (never merged by guess); an empty current one (a plain dbt build pointed the table
    there first) gives way to the former's rows."""
    from lakewarden.state_tables import _adopt_former_name, arrow_rows, stored_location, write_parquet_part

    table = "gc_uncommitted_runs"
    current, old = table_location(tmp_path, table), table_location(tmp_path, "uncommitted_gc_runs")
    old.mkdir(parents=True)
    (old / "part-old.parquet").write_bytes(b"")
    current.mkdir(parents=True)
    assert stored_location(tmp_path, table) == old
    with state_lock(tmp_path, "test"):
        assert _adopt_former_name(tmp_path, table) is True
    assert (current / "part-old.parquet").exists() and not old.exists()

    old.mkdir()
    write_parquet_part(current, arrow_rows(table, []))
    assert stored_location(tmp_path, table) == current
    assert _adopt_former_name(tmp_path, table) is False and old.is_dir()


def _policy_row(index: int) -> tuple:
    from datetime import datetime, timedelta, timezone

    moment = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(days=index)
    return ("repo", "s3://b/ns", f"r{index % 3}", "logs/", None if index % 2 else "main", index, moment, moment, f"run-{index:03d}")


def test_a_state_table_is_merged_into_one_file_with_the_same_rows(tmp_path: Path) -> None:
    """Sixteen files of a state table become one, read back as the same rows in the same order:
    files as lakewarden writes them, one as Spark writes them (INT96 times without a zone, in
    range_windows' nested windows too), and an older one without a column (null, as Spark reads
    it). Fifteen stay fifteen."""
    from datetime import timezone

    import pyarrow as pa
    import pyarrow.parquet as pq

    from lakewarden.state_tables import MERGE_AT_FILES, arrow_rows, merge_files, state_rows, write_parquet_part

    table = "lifecycle_policy_history"
    directory = table_location(tmp_path, table)
    # as Spark writes (part-00000-...: sorts first), times as INT96 without a zone
    spark_like = arrow_rows(table, [_policy_row(0)])
    naive = spark_like.set_column(6, "date_to_be_deleted", spark_like.column(6).cast(pa.timestamp("us"))).set_column(
        7, "run_at", spark_like.column(7).cast(pa.timestamp("us")))
    directory.mkdir(parents=True)
    pq.write_table(naive, directory / "part-00000-0c1b-c000.snappy.parquet", use_deprecated_int96_timestamps=True)
    (directory / ".part-00000-0c1b-c000.snappy.parquet.crc").write_bytes(b"crc")  # Spark's checksum beside it
    # an older file, written before date_to_be_deleted was declared
    older = arrow_rows(table, [_policy_row(1)]).drop_columns(["date_to_be_deleted"])
    pq.write_table(older, directory / "part-00001-older.parquet")
    for index in range(2, MERGE_AT_FILES - 1):
        write_parquet_part(directory, arrow_rows(table, [_policy_row(index), _policy_row(index + 100)]))
    (directory / "_SUCCESS").write_text("")
    before = state_rows(tmp_path, table)
    assert len(list(directory.glob("*.parquet"))) == MERGE_AT_FILES - 1
    assert merge_files(tmp_path, table) is False  # fifteen: left as they are
    write_parquet_part(directory, arrow_rows(table, [_policy_row(99)]))
    before = state_rows(tmp_path, table)

    assert merge_files(tmp_path, table) is True
    (merged,) = directory.glob("*.parquet")
    assert sorted(p.name for p in directory.iterdir()) == ["_SUCCESS", merged.name]  # nothing hidden left, no checksum
    after = state_rows(tmp_path, table)
    assert after == before and len(after) == 2 * (MERGE_AT_FILES - 3) + 3
    assert after[1]["date_to_be_deleted"] is None and after[0]["run_at"].tzinfo == timezone.utc
    assert pq.read_schema(merged).equals(arrow_rows(table, []).schema)

    # range_windows: a row per range, windows nested with their times
    from datetime import datetime, timedelta

    day = datetime(2026, 1, 2, tzinfo=timezone.utc)
    windows = table_location(tmp_path, "range_windows")

    def window_row(index: int) -> tuple:
        moment = day + timedelta(days=index)
        return ("s3://b/ns", f"range-{index:02d}", moment, moment, index, f"run-{index}",
                [{"segment": "logs/", "min_last_modified": moment, "max_last_modified": moment}])

    spark_like = arrow_rows("range_windows", [window_row(0)])
    naive = pa.Table.from_arrays(
        [column.cast(_without_zone(column.type)) for column in spark_like.columns], names=spark_like.column_names
    )
    windows.mkdir(parents=True)
    pq.write_table(naive, windows / "part-00000-1d2e-c000.snappy.parquet", use_deprecated_int96_timestamps=True)
    for index in range(1, MERGE_AT_FILES):
        write_parquet_part(windows, arrow_rows("range_windows", [window_row(index)]))
    before = state_rows(tmp_path, "range_windows")
    assert merge_files(tmp_path, "range_windows") is True and len(list(windows.glob("*.parquet"))) == 1
    after = state_rows(tmp_path, "range_windows")
    assert _instants(after) == _instants(before) and after[0]["age_windows"][0]["min_last_modified"] == day


def _instants(value):
    """``value`` with every time in it (nested too) as a UTC instant: a time read without a zone
    (Spark's INT96, which holds UTC) and the same time with one compare equal."""
    from datetime import datetime, timezone

    if isinstance(value, datetime):
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    if isinstance(value, dict):
        return {key: _instants(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_instants(item) for item in value]
    return value


def _without_zone(kind):
    """``kind`` with its times (nested ones too) without a zone, as Spark's INT96 reads."""
    import pyarrow as pa

    if pa.types.is_timestamp(kind):
        return pa.timestamp("us")
    if pa.types.is_list(kind):
        return pa.list_(_without_zone(kind.value_type))
    if pa.types.is_struct(kind):
        return pa.struct([(field.name, _without_zone(field.type)) for field in kind])
    return kind


def test_a_merge_cut_short_is_finished_by_the_next_one(tmp_path: Path) -> None:
    """A merge recorded the files it replaces before its rename: cut short after the rename, the
    next merge (or append) removes the replaced files; cut short before it, the merged file goes
    and the files stay. Either way every row is there exactly once."""
    import json

    import pyarrow.parquet as pq

    from lakewarden.state_tables import _finish_merges, arrow_rows, state_rows, write_parquet_part

    table = "lifecycle_policy_history"
    directory = table_location(tmp_path, table)
    first = write_parquet_part(directory, arrow_rows(table, [_policy_row(1)]))
    second = write_parquet_part(directory, arrow_rows(table, [_policy_row(2)]))
    rows = state_rows(tmp_path, table)

    # cut short after the rename: merged visible, the replaced files still there
    pq.write_table(arrow_rows(table, [_policy_row(1), _policy_row(2)]), directory / "part-z-merged-a.parquet")
    (directory / ".merge-a.json").write_text(json.dumps({"merged": "part-z-merged-a.parquet", "temporary": ".t-a", "replaces": [first.name, second.name]}))
    _finish_merges(directory)
    assert sorted(p.name for p in directory.iterdir()) == ["part-z-merged-a.parquet"]
    assert state_rows(tmp_path, table) == rows

    # cut short before the rename: the merge's hidden file goes, the files stay
    pq.write_table(arrow_rows(table, [_policy_row(1), _policy_row(2)]), directory / ".part-y-merged-b.parquet.tmp")
    (directory / ".merge-b.json").write_text(json.dumps({"merged": "part-y-merged-b.parquet", "temporary": ".part-y-merged-b.parquet.tmp", "replaces": ["part-z-merged-a.parquet"]}))
    _finish_merges(directory)
    assert sorted(p.name for p in directory.iterdir()) == ["part-z-merged-a.parquet"]
    assert state_rows(tmp_path, table) == rows

    # a record it cannot read (not one it wrote) stops a merge, never an append
    from lakewarden.state_tables import MERGE_AT_FILES, merge_files

    (directory / ".merge-c.json").write_text("{not json")
    for index in range(MERGE_AT_FILES):
        write_parquet_part(directory, arrow_rows(table, [_policy_row(10 + index)]))
    assert merge_files(tmp_path, table) is False and len(list(directory.glob("*.parquet"))) == MERGE_AT_FILES + 1


def test_a_new_run_in_a_long_lived_session_reads_the_state_tables_as_they_are(spark, tmp_path: Path) -> None:
    """An engine or a Python API caller runs job after job in one session. Between two runs
    another process may change a state table (append, merge its files) or an operator may
    restore the state dir: the next run reads what is there then, not the files the session
    listed before (an engine's run failed on a file a restored copy no longer held)."""
    from lakewarden.runtime.spark_session import get_or_create
    from lakewarden.snapshot import source_columns
    from lakewarden.state_tables import append_rows, arrow_rows, qualified, visible_parquet, write_parquet_part

    state = tmp_path / "state"
    width = len(source_columns("lakewarden")["range_windows"])

    def rows(*ids: str) -> list[tuple]:
        return [("s3://bucket/repo", range_id, *([None] * (width - 2))) for range_id in ids]

    session = get_or_create(state)  # a run
    append_rows(session, state, "range_windows", rows("r1"))
    assert session.table(qualified("range_windows")).count() == 1  # listed: one file
    for stale in visible_parquet(table_location(state, "range_windows")):
        stale.unlink()  # between the runs, another process replaces the table's files
    write_parquet_part(table_location(state, "range_windows"), arrow_rows("range_windows", rows("r2", "r3")))
    session = get_or_create(state)  # the next run in the same session
    assert sorted(row["range_id"] for row in session.table(qualified("range_windows")).collect()) == ["r2", "r3"]
