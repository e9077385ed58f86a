"""A report whose mark did not finish (the job failed, or died while marking) is never swept:
its addresses.csv may be partial and its safety tests may not have run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakewarden.cli import main
import report_files
from test_sweep import write_report


@pytest.mark.parametrize("status", ["running", "failed"])
def test_sweep_refuses_a_report_whose_mark_did_not_finish(tmp_path: Path, capsys, status: str) -> None:
    namespace = tmp_path / "ns"
    (namespace / "data").mkdir(parents=True)
    (namespace / "data" / "a").write_bytes(b"x")
    report = write_report(tmp_path / "report", namespace.as_uri(), [("data/a", "RELATIVE", f"{namespace.as_uri()}/data/a")])
    summary = report_files.summary(report)
    summary.update(status=status, success=False)
    (report / "summary.json").write_text(json.dumps(summary))
    assert main(["sweep", "--report", str(report), "--state", str(tmp_path / "state")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did not finish" in err[0] and "status" in err[0]
    assert (namespace / "data" / "a").exists()
    assert not (report / "sweep").exists()
