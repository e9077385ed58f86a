"""The shared sweep engine without Spark or a store: records, row checks, batching, failures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import pytest

from lakewarden.deleters.base import DeleteOutcome, Deleter
from lakewarden.safety import resolve_physical
from lakewarden.sweep.engine import OutcomeLog, RowChecker, SweepFailed, delete_rows, parse_outcome_line


def test_records_are_the_json_of_json_dumps_and_parse_back(tmp_path: Path) -> None:
    with OutcomeLog(tmp_path / "x.jsonl", 'sweep "1" é') as log:
        [record] = log.record([('a"\n,ü\u2028\x01', "file:///x/a", DeleteOutcome.deleted("file:///x/a", "r\\é"))])
    line = (tmp_path / "x.jsonl").read_text(encoding="utf-8")
    fields = ("address", "physical_address", "status", "reason", "ts", "sweep_id")
    assert line == json.dumps(dict(zip(fields, record))) + "\n"
    assert parse_outcome_line(line) == record
    assert parse_outcome_line(line[:-5]) is None, "a torn line is no record"


@pytest.mark.parametrize("namespace", ["file:///x/ns", "file:///x/ns/", "s3a://b/ns/", "s3://b//ns"])
@pytest.mark.parametrize("address", ["data/1", "d//x", "./a", "ü ;,"])
def test_row_checker_resolves_relative_addresses_as_safety_does(namespace: str, address: str) -> None:
    assert RowChecker(namespace)._expected(address, "RELATIVE") == resolve_physical(address, "RELATIVE", namespace)


class _Counting(Deleter):
    """Deletes nothing; fails the batch number ``fail_at`` (1-based) by raising."""

    max_batch = 3

    def __init__(self, fail_at: int | None = None):
        super().__init__("file:///ns")
        self.fail_at, self.calls = fail_at, 0
        self.max_concurrency = 2

    def delete_batch(self, uris: Sequence[str]) -> list[DeleteOutcome]:
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("backend bug")
        return [DeleteOutcome.deleted(uri) for uri in uris]


def _rows(n: int) -> list[tuple[str, str, str]]:
    return [(f"d/{i}", "RELATIVE", f"file:///ns/d/{i}") for i in range(n)]


def test_batches_capped_by_the_backend_unsafe_rows_never_reach_it(tmp_path: Path) -> None:
    deleter = _Counting()
    rows = _rows(7) + [("_lakefs/x", "RELATIVE", "file:///ns/_lakefs/x"), ("d/9", "RELATIVE", "file:///ns/d/other")]
    landed: list[int] = []
    with OutcomeLog(tmp_path / "o.jsonl", "s") as log:
        deleted, failed = delete_rows(rows, deleter=deleter, checker=RowChecker("file:///ns"), log=log, batch_size=100,
                                      on_recorded=lambda records: landed.append(len(records)))
    assert (deleted, failed) == (7, 2) and deleter.calls == 3 and landed == [3, 3, 3]
    records = [parse_outcome_line(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    failed_records = [r for r in records if r and r.status == "failed"]
    assert [r.address for r in failed_records] == ["_lakefs/x", "d/9"]
    assert "under _lakefs/" in failed_records[0].reason and "not what RELATIVE address" in failed_records[1].reason


def test_a_raising_backend_stops_the_sweep_after_recording_what_completed(tmp_path: Path) -> None:
    with OutcomeLog(tmp_path / "o.jsonl", "s") as log, pytest.raises(SweepFailed, match="backend bug"):
        delete_rows(_rows(12), deleter=_Counting(fail_at=3), checker=RowChecker("file:///ns"), log=log, batch_size=3, threads=1)
    recorded = [parse_outcome_line(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [r.address for r in recorded if r] == [f"d/{i}" for i in range(6)], "the two completed batches are on record"


def test_auto_engine_is_in_process_up_to_the_bound(tmp_path: Path) -> None:
    from lakewarden.errors import BadInput
    from lakewarden.sweep import PROCESS_MAX_ADDRESSES, choose_engine, load_report

    report_dir = tmp_path / "r"
    report_dir.mkdir()
    (report_dir / "summary.json").write_text(json.dumps({"storage_namespace": "file:///ns", "dry_run": True}))
    (report_dir / "addresses.csv").write_text("address,address_type,physical_address\n" + "".join(
        f"d/{i},RELATIVE,file:///ns/d/{i}\n" for i in range(3)))
    report = load_report(report_dir)
    assert PROCESS_MAX_ADDRESSES == 500_000
    assert choose_engine(report) == "process"
    assert choose_engine(report, process_max=3) == "process"
    assert choose_engine(report, process_max=2) == "spark"
    assert choose_engine(report, "spark") == "spark" and choose_engine(report, "process", process_max=0) == "process"
    with pytest.raises(BadInput, match="--engine"):
        choose_engine(report, "fast")  # type: ignore[arg-type]
