"""lakeFS's GC mark layout written and read back, on a directory and on the GCS emulator."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lakewarden.errors import BadInput
from lakewarden.stores import StoreOptions, store_for
from lakewarden.stores.marks import read_mark, write_mark
from store_worlds import endpoint, make_world

START = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
CUTOFF = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_layout_is_lakefs(tmp_path: Path) -> None:
    store = store_for((tmp_path / "ns").as_uri())
    addresses = [f"data/{i}" for i in range(5)] + ["s3://elsewhere/x"]
    summary = write_mark(store, "run-1", iter(addresses), start_time=START, cutoff_time=CUTOFF, first_slice="data")
    mark = tmp_path / "ns" / "_lakefs" / "retention" / "gc" / "unified" / "run-1"
    assert json.loads((mark / "summary.json").read_text()) == {
        "run_id": "run-1", "success": True, "first_slice": "data", "start_time": "2026-01-02T03:04:05Z",
        "cutoff_time": "2026-01-01T00:00:00Z", "num_deleted_objects": 6,
    }
    [parquet] = list((mark / "deleted").glob("*.parquet"))
    assert pq.read_table(parquet).column_names == ["address"]
    assert pq.read_table(parquet).column("address").to_pylist() == addresses
    [text] = list((mark / "deleted.text").glob("*.txt"))
    assert text.read_text().splitlines() == addresses
    read_summary, read = read_mark(store, "run-1")
    assert read_summary == summary and list(read) == addresses


def test_empty_failed_missing_and_bad_ids(tmp_path: Path) -> None:
    store = store_for((tmp_path / "ns").as_uri())
    write_mark(store, "empty", [], start_time=START, cutoff_time=CUTOFF)
    assert list(read_mark(store, "empty")[1]) == []
    write_mark(store, "failed", ["a"], start_time=START, cutoff_time=CUTOFF, success=False)
    with pytest.raises(BadInput, match="failed run") as raised:
        read_mark(store, "failed")
    assert raised.value.field == "success"
    with pytest.raises(BadInput, match="does not exist"):
        read_mark(store, "never")
    for bad in ("", "..", "a/b"):
        with pytest.raises(BadInput, match="not a mark id"):
            read_mark(store, bad)


def test_on_the_gcs_emulator(request: pytest.FixtureRequest) -> None:
    world = make_world("gcs", endpoint("gcs", request))
    store = store_for(world.namespace, StoreOptions(gcs_endpoint=world.endpoint))
    write_mark(store, "r2", (f"data/{i}" for i in range(100)), start_time=START, cutoff_time=CUTOFF)
    assert any(key.startswith("ns/_lakefs/retention/gc/unified/r2/deleted/") for key in world.list_keys())
    assert list(read_mark(store, "r2")[1]) == [f"data/{i}" for i in range(100)]
