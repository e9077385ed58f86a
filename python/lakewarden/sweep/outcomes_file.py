"""Reading the recorded outcomes and writing ``sweep/outcomes.csv`` without Spark.

The in-process path keeps, per marked address, the record that wins the merge rule
(:meth:`lakewarden.sweep.engine.Outcome.beats`); it only runs below
:data:`lakewarden.sweep.PROCESS_MAX_ADDRESSES`, which bounds that map.
"""

from __future__ import annotations

import csv
import os
import uuid
from pathlib import Path
from typing import Iterable

from lakewarden.sweep.engine import Outcome, parse_outcome_line
from lakewarden.sweep.report_dir import OUTCOME_COLUMNS


def merge_into(best: dict[tuple[str, str], Outcome], records: Iterable[Outcome]) -> None:
    """Fold ``records`` into ``best`` by the merge rule."""
    for record in records:
        current = best.get(record.key)
        if current is None or record.beats(current):
            best[record.key] = record


def load_outcomes(outcomes_dir: Path) -> dict[tuple[str, str], Outcome]:
    """The winning record per ``(address, physical_address)`` over every sweep's JSON Lines;
    torn lines (a killed writer's last, unterminated line) are dropped."""
    best: dict[tuple[str, str], Outcome] = {}
    if not outcomes_dir.is_dir():
        return best
    for path in sorted(outcomes_dir.glob("*.jsonl")):
        with open(path, "rb") as handle:
            for line in handle:
                if not line.endswith(b"\n"):
                    break  # torn: the writer died mid-line
                record = parse_outcome_line(line)
                if record is not None:
                    merge_into(best, (record,))
    return best


def write_outcomes_csv(target: Path, rows: Iterable[tuple[str, str, str, str]]) -> None:
    """Write ``address,physical_address,status,reason`` rows (already sorted) atomically:
    a reader, or a sweep killed while writing, sees the old file or the new one."""
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}")
    try:
        with open(temporary, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(OUTCOME_COLUMNS)
            writer.writerows(rows)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    finally:
        if temporary.exists():
            temporary.unlink()
