"""The state dir's tables kept across runs and its writer lock (lakewarden.state_tables)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from lakewarden.state_tables import StateLocked, state_lock, state_table_names, table_location

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
        "uncommitted_gc_runs",
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


def test_tables_live_under_the_state_dir(tmp_path: Path) -> None:
    assert table_location(tmp_path, "uncommitted_gc_runs") == tmp_path / "tables" / "uncommitted_gc_runs"
