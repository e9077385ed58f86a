"""``lakewarden sweep --mark-id``: sweeping a mark lakeFS's GC made in mark-only mode.

The repository is lakeFS's unified-GC system test (test_gc_unified.unified_gc_scenario) on local
disk, extracted from the fake lakeFS. lakeFS's mark is written in lakeFS's layout
(lakewarden.stores.marks, the layout of lakeFS's GarbageCollection.writeReports) with what
lakeFS's GC deletes there, plus two addresses it must never delete: file_1 (an active commit of
main still holds it) and file_3 (staged on main). The sweep deletes exactly the six others and
keeps those two, each with its reason; a missing mark, a data file that is not Parquet and one
without an address column are bad input (exit 2, one line naming the file and field) and
change nothing.
"""

from __future__ import annotations

import csv
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fake_lakefs import LocalNamespace, serve  # noqa: F401 - serve: a fixture
from lakewarden.cli import main
from lakewarden.stores import store_for
from lakewarden.stores.marks import write_mark
import report_files
from test_gc_unified import EXPIRED, RULES, UNREFERENCED, clock, unified_gc_scenario  # noqa: F401 - clock: a fixture

pytestmark = pytest.mark.spark


def test_sweep_of_a_lakefs_mark_rechecks_every_address(
    spark: Any, test_state_dir: Path, clock: Any, serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    namespace = LocalNamespace(tmp_path / "storage" / "repo1")
    fake, addresses = unified_gc_scenario(namespace, clock)
    snapshot = tmp_path / "snap"
    assert main(["extract", "--lakefs-endpoint", serve(fake), "--repo", "repo1", "--out", str(snapshot),
                 "--cache-dir", str(tmp_path / "range-cache")]) == 0
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(RULES))
    store = store_for(namespace.uri)
    deletable = EXPIRED | UNREFERENCED
    marked = sorted(addresses[key] for key in deletable | {"file_1", "file_3"})
    write_mark(store, "lakefs-run-1", marked, start_time=clock, cutoff_time=clock - timedelta(hours=1))
    marks = namespace.root / "_lakefs" / "retention" / "gc" / "unified"
    common = ["sweep", "--snapshot", str(snapshot), "--rules", str(rules), "--state", str(test_state_dir),
              "--now", clock.isoformat().replace("+00:00", "Z")]

    def files() -> set[str]:
        return {str(p.relative_to(namespace.root)) for p in namespace.root.rglob("*") if p.is_file()}

    # bad input: exit 2, one line naming the file and field, nothing deleted, no report
    write_mark(store, "no-column", ["x"], start_time=clock, cutoff_time=clock)
    [part] = (marks / "no-column" / "deleted").glob("*.parquet")
    pq.write_table(pa.table({"path": ["x"]}), part)
    write_mark(store, "not-parquet", ["x"], start_time=clock, cutoff_time=clock)
    [part2] = (marks / "not-parquet" / "deleted").glob("*.parquet")
    part2.write_bytes(b"PAR1 this is not parquet")
    before = files()
    for mark_id, source, field in (
        ("never-made", str(marks / "never-made" / "summary.json"), None),
        ("no-column", str(part), "address"),
        ("not-parquet", str(part2), "address"),
    ):
        capsys.readouterr()
        report = tmp_path / f"bad-{mark_id}"
        assert main([*common, "--mark-id", mark_id, "--report", str(report)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and source in err, err
        if field:
            assert field in err
        assert files() == before and not report.exists()

    # the mark lakeFS's GC made, re-checked, then swept
    report = tmp_path / "swept"
    capsys.readouterr()
    assert main([*common, "--mark-id", "lakefs-run-1", "--report", str(report)]) == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["num_kept"] == 2 and result["num_deleted"] == 6 and result["success"] is True
    for key, address in addresses.items():
        assert namespace.exists(address) == (key not in deletable), key
    with open(report / "kept.csv", newline="", encoding="utf-8") as handle:
        kept = {row["address"]: row["reason"] for row in csv.DictReader(handle)}
    assert set(kept) == {addresses["file_1"], addresses["file_3"]}
    assert kept[addresses["file_1"]].startswith("an active commit references it (")
    assert kept[addresses["file_3"]].startswith("a staged entry references it")
    summary = report_files.summary(report)
    assert summary["lakefs_mark_id"] == "lakefs-run-1" and summary["num_kept"] == 2 and summary["num_deleted"] == 6
    with open(report / "sweep" / "outcomes.csv", newline="", encoding="utf-8") as handle:
        outcomes = {row["address"]: row["status"] for row in csv.DictReader(handle)}
    assert outcomes == {addresses[key]: "deleted" for key in deletable}
    assert (marks / "lakefs-run-1" / "summary.json").is_file()  # nothing under _lakefs/ is touched
    assert namespace.exists("dummy")
