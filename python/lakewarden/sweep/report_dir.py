"""The report directory a sweep works on: validated before any side effect.

Input is a report directory (docs/contract.md §4): ``summary.json`` (with ``storage_namespace``)
and ``addresses.csv`` (``address``, ``address_type``, ``physical_address``, ...), the one
:class:`lakewarden.reports.directory.Report` type the jobs write; the sweep's own files beside
them (``sweep.lock``, ``sweep/outcomes/*.jsonl``, ``sweep/outcomes.csv``,
``sweep/summary.json``) are named there too.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

from lakewarden.errors import BadInput
from lakewarden.reports.directory import ADDRESSES, SUMMARY, Report
from lakewarden.safety import parse_uri

REQUIRED_COLUMNS = ("address", "address_type", "physical_address")
OUTCOME_COLUMNS = ("address", "physical_address", "status", "reason")

# addresses.csv may hold quoted fields with commas, quotes and newlines (RFC 4180)
csv.field_size_limit(1 << 28)


def report_path(report_dir: str | os.PathLike[str]) -> Path:
    """A local report directory from a path or ``file:`` URI (object-store reports: not yet)."""
    raw = os.fspath(report_dir)
    if "://" in raw or raw.startswith("file:"):
        try:
            parsed = parse_uri(raw)
        except ValueError as exc:
            raise BadInput(str(exc), source=raw, field="--report") from exc
        if parsed.scheme != "file":
            raise BadInput("only local report directories can be swept (copy it locally first)", source=raw, field="--report")
        raw = parsed.path
    return Path(raw).expanduser().resolve()


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object file, or None when it is missing or unreadable."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def load_report(report_dir: str | os.PathLike[str], *, allow_swept: bool = False) -> Report:
    """Validate a report directory before any side effect; :class:`BadInput` says what is wrong."""
    path = report_path(report_dir)
    if not path.is_dir():
        raise BadInput("report directory does not exist", source=str(path))
    summary_file = path / SUMMARY
    if not summary_file.is_file():
        raise BadInput("missing (not a report directory?)", source=str(summary_file))
    try:
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"unreadable: {exc}", source=str(summary_file)) from exc
    if not isinstance(summary, dict):
        raise BadInput("not a JSON object", source=str(summary_file))
    namespace = summary.get("storage_namespace")
    if not isinstance(namespace, str) or not namespace:
        raise BadInput("missing", source=str(summary_file), field="storage_namespace")
    try:
        parse_uri(namespace)
    except ValueError as exc:
        raise BadInput(str(exc), source=str(summary_file), field="storage_namespace") from exc
    # Only a mark that finished may be swept: a run that failed or died part-way may have
    # written a partial addresses.csv, and its safety tests may not have run.
    mark_status = summary.get("marked_status", summary.get("status"))
    if mark_status in ("running", "failed"):
        raise BadInput(
            f"the run that marked did not finish (status {mark_status!r}): nothing to sweep; run the job again",
            source=str(summary_file),
            field="status",
        )
    addresses = path / ADDRESSES
    if not addresses.exists():
        raise BadInput("missing: the report has no marked addresses file", source=str(addresses))
    report = Report(path, summary)
    previous = read_json(report.sweep_dir / SUMMARY)
    if not allow_swept and summary.get("dry_run") is False and previous and previous.get("success"):
        raise BadInput(
            f"already swept at {previous.get('finished_at')} (not a dry run; nothing left to delete)",
            source=str(summary_file),
            field="dry_run",
        )
    return report


def address_rows(report: Report) -> Iterator[tuple[str, str, str]]:
    """Stream ``(address, address_type, physical_address)`` from ``addresses.csv``.

    The header is checked first (a missing column is :class:`BadInput`); empty fields read as
    ``""``, as the distributed path reads them, so both record the same keys.
    """
    with open(report.addresses_path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            header = []
        missing = [column for column in REQUIRED_COLUMNS if column not in header]
        if missing:
            raise BadInput(
                f"missing column(s) {', '.join(missing)} (header: {', '.join(header)})",
                source=str(report.addresses_path),
                field=missing[0],
            )
        i_address, i_type, i_physical = (header.index(column) for column in REQUIRED_COLUMNS)
        width = max(i_address, i_type, i_physical)
        for row in reader:
            if not row:
                continue
            if len(row) <= width:
                row = row + [""] * (width + 1 - len(row))
            # interned: a second pass over the file (the in-process sweep makes two) then shares
            # the strings the first pass keeps instead of holding a copy of each
            yield sys.intern(row[i_address]), sys.intern(row[i_type]), sys.intern(row[i_physical])


def count_rows(report: Report, *, limit: int) -> int:
    """Rows of ``addresses.csv``, counting stops past ``limit`` (returns ``limit + 1``)."""
    count = 0
    for _ in address_rows(report):
        count += 1
        if count > limit:
            break
    return count
