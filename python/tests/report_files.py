"""The files of a job's report directory as the tests read them: one reader of each.

A dry run writes ``summary.json`` and ``addresses.csv`` into its report directory
(docs/contract.md); the tests hold both to the oracles. The names here are the contract's, not
imported from the package: a renamed file must fail the tests, not follow the rename."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any


def address_rows(report: Path) -> list[dict[str, str]]:
    """``addresses.csv``: one row per marked object, keyed by the header's column names."""
    with open(report / "addresses.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def marked(report: Path, column: str = "physical_address") -> set[str]:
    """The objects a run marked: by ``physical_address`` (the full URI, as the oracles give
    them) or by ``address`` (relative to the storage namespace, as lakeFS lists them)."""
    return {row[column] for row in address_rows(report)}


def summary(report: Path) -> dict[str, Any]:
    """``summary.json``: the run's counts, figures and outcome; of ``report / "sweep"``, the
    sweep's (its outcome counts, whether deletes left recoverable versions)."""
    return json.loads((report / "summary.json").read_text(encoding="utf-8"))
