"""GC rules and job clock validation: bad input is refused with the file and the field named."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from lakewarden.errors import BadInput
from lakewarden.jobs.gc_committed.rules import load_gc_rules
from lakewarden.jobs.common import parse_now


def write(tmp_path: Path, content: str) -> Path:
    path = tmp_path / "rules.json"
    path.write_text(content)
    return path


def test_valid_rules(tmp_path: Path) -> None:
    rules = load_gc_rules(
        write(tmp_path, json.dumps({"default_retention_days": 14, "branches": [{"branch_id": "main", "retention_days": 21}]}))
    )
    assert rules.default_retention_days == 14
    assert rules.rows() == [(None, 14), ("main", 21)]
    assert rules.unknown_branches(["dev"]) == ["main"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "must be a JSON object"),
        ('{"branches": []}', "default_retention_days: missing"),
        ('{"default_retention_days": -1}', "default_retention_days: must not be negative"),
        ('{"default_retention_days": 1.5}', "default_retention_days: must be a whole number"),
        ('{"default_retention_days": true}', "default_retention_days: must be a whole number"),
        ('{"default_retention_day": 3}', "unknown key"),
        ('{"default_retention_days": 3, "branches": {}}', "branches: must be a list"),
        ('{"default_retention_days": 3, "branches": [{"branch_id": "main"}]}', r"branches\[0\].retention_days: missing"),
        (
            '{"default_retention_days": 3, "branches": [{"branch_id": "main", "retention_days": -2}]}',
            r"branches\[0\].retention_days: must not be negative",
        ),
        (
            '{"default_retention_days": 3, "branches": [{"branch_id": "m", "retention_days": 1}, {"branch_id": "m", "retention_days": 2}]}',
            r"branches\[1\].branch_id: second rule",
        ),
        ('{"default_retention_days": 3, "branches": [{"branch": "m", "retention_days": 1}]}', r"branches\[0\].branch"),
    ],
)
def test_bad_rules_name_file_and_field(tmp_path: Path, content: str, message: str) -> None:
    path = write(tmp_path, content)
    with pytest.raises(BadInput, match=message) as caught:
        load_gc_rules(path)
    assert str(path) in str(caught.value)


def test_missing_rules_file(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such file"):
        load_gc_rules(tmp_path / "absent.json")


WALL = datetime(2026, 6, 1, tzinfo=timezone.utc)


def test_now_parsing() -> None:
    assert parse_now("2026-01-02T03:04:05Z", dry_run=False, wall_clock=WALL) == datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert parse_now("2026-01-02T05:04:05+02:00", dry_run=False, wall_clock=WALL).hour == 3
    assert parse_now(None, dry_run=False, wall_clock=WALL) == WALL


@pytest.mark.parametrize("text", ["yesterday", "2026-01-02", "2026-01-02T00:00:00"])
def test_bad_now(text: str) -> None:
    with pytest.raises(BadInput, match="--now"):
        parse_now(text, dry_run=False, wall_clock=WALL)


def test_future_clock_only_for_dry_runs() -> None:
    with pytest.raises(BadInput, match="future"):
        parse_now("2027-01-01T00:00:00Z", dry_run=False, wall_clock=WALL)
    assert parse_now("2027-01-01T00:00:00Z", dry_run=True, wall_clock=WALL).year == 2027
