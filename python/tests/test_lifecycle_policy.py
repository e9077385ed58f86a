"""Lifecycle policy validation: bad input is refused with the file, the rule and the field named."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from lakewarden.errors import BadInput
from lakewarden.jobs.lifecycle.policy import (
    MAX_DAYS,
    LifecyclePolicy,
    LifecycleRule,
    load_lifecycle_policy,
    parse_lifecycle_policy,
)

# the example of docs/contract.md §3.1
POLICY_EXAMPLE = """
{"rule1": {"prefix": "foo/bar", "days": 10, "enabled": true, "branch_days": {"b1": 5, "b2": 8}},
 "rule2": {"prefix": "foo/zoo", "enabled": true, "branch_days": {"b1": 5}}}
"""


def write(tmp_path: Path, content: str) -> Path:
    path = tmp_path / "policy.json"
    path.write_text(content)
    return path


def test_contract_example(tmp_path: Path) -> None:
    policy = load_lifecycle_policy(write(tmp_path, POLICY_EXAMPLE))
    assert policy.rules == (
        LifecycleRule("rule1", "foo/bar", True, 10, {"b1": 5, "b2": 8}),
        LifecycleRule("rule2", "foo/zoo", True, None, {"b1": 5}),
    )
    assert policy.rows() == [
        ("rule1", "foo/bar", True, 10, {"b1": 5, "b2": 8}),
        ("rule2", "foo/zoo", True, None, {"b1": 5}),
    ]
    assert policy.to_json() == {
        "rule1": {"prefix": "foo/bar", "enabled": True, "days": 10, "branch_days": {"b1": 5, "b2": 8}},
        "rule2": {"prefix": "foo/zoo", "enabled": True, "branch_days": {"b1": 5}},
    }


def test_defaults_and_sorted_rows() -> None:
    policy = parse_lifecycle_policy(
        '{"z": {"prefix": "z/", "days": 0}, "a": {"prefix": "a/", "branch_days": {"y": 2, "x": 1}}}', "p.json"
    )
    assert policy.rows() == [("a", "a/", True, None, {"x": 1, "y": 2}), ("z", "z/", True, 0, {})]
    assert [rule.rule_id for rule in policy.rules] == ["z", "a"]  # document order kept
    assert list(policy.rows()[0][4]) == ["x", "y"]


def test_disabled_rules_are_kept_in_rows() -> None:
    policy = parse_lifecycle_policy(
        '{"on": {"prefix": "a/", "days": 3}, "off": {"prefix": "b/", "days": 1, "enabled": false, "branch_days": {"dev": 2}}}',
        "p.json",
    )
    assert policy.rows() == [("off", "b/", False, 1, {"dev": 2}), ("on", "a/", True, 3, {})]
    assert policy.to_json()["off"]["enabled"] is False


def test_unknown_branches_only_of_enabled_rules() -> None:
    policy = parse_lifecycle_policy(
        json.dumps(
            {
                "r2": {"prefix": "a/", "branch_days": {"main": 1, "gone": 2, "also-gone": 3}},
                "r1": {"prefix": "b/", "days": 4, "branch_days": {"gone": 5}},
                "off": {"prefix": "c/", "enabled": False, "branch_days": {"gone": 1, "nowhere": 1}},
            }
        ),
        "p.json",
    )
    assert policy.unknown_branches(["main", "dev"]) == [("r1", "gone"), ("r2", "also-gone"), ("r2", "gone")]
    assert policy.unknown_branches(iter(["main", "gone", "also-gone"])) == []


def test_to_json_round_trips() -> None:
    policy = parse_lifecycle_policy(POLICY_EXAMPLE, "p.json")
    again = parse_lifecycle_policy(json.dumps(policy.to_json()), "q.json")
    assert again.rows() == policy.rows()
    assert again.to_json() == policy.to_json()
    assert isinstance(policy, LifecyclePolicy)


def test_rule_without_days_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="lakewarden.jobs.lifecycle.policy"):
        policy = parse_lifecycle_policy('{"idle": {"prefix": "x/"}, "busy": {"prefix": "y/", "days": 1}}', "p.json")
    assert policy.rows()[1] == ("idle", "x/", True, None, {})
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1 and "'idle'" in warnings[0] and "matches nothing" in warnings[0]


def test_zero_and_max_days_accepted() -> None:
    policy = parse_lifecycle_policy(json.dumps({"r": {"prefix": "p", "days": 0, "branch_days": {"b": MAX_DAYS}}}), "p")
    assert policy.rows() == [("r", "p", True, 0, {"b": MAX_DAYS})]


@pytest.mark.parametrize(
    ("content", "field", "message"),
    [
        # the document
        ("[]", None, "must be a JSON object"),
        ('"rules"', None, "must be a JSON object"),
        ("{}", None, "at least one rule"),
        ('{"r": {"prefix": "a", "days": 1}, "r": {"prefix": "b", "days": 2}}', "r", "rule id 'r' given more than once"),
        ('{"": {"prefix": "a", "days": 1}}', '""', "rule id must be a non-empty string"),
        ('{"r": ["prefix", "a"]}', "r", "must be an object"),
        ('{"r": null}', "r", "must be an object"),
        # keys of a rule
        ('{"r": {"prefix": "a", "day": 1}}', "r.day", "unknown key 'day' in rule 'r'"),
        ('{"r": {"prefix": "a", "days": 1, "branch_day": {"b": 1}}}', "r.branch_day", "unknown key 'branch_day'"),
        ('{"r": {"prefix": "a", "days": 1, "days": 2}}', "r.days", "given more than once"),
        # prefix
        ('{"r": {"days": 1}}', "r.prefix", "missing"),
        ('{"r": {"prefix": "", "days": 1}}', "r.prefix", "must not be empty"),
        ('{"r": {"prefix": null, "days": 1}}', "r.prefix", "must be a string"),
        ('{"r": {"prefix": ["a"], "days": 1}}', "r.prefix", "must be a string"),
        # days
        ('{"r": {"prefix": "a", "days": -1}}', "r.days", "must not be negative"),
        ('{"r": {"prefix": "a", "days": 10.0}}', "r.days", "must be a whole number"),
        ('{"r": {"prefix": "a", "days": 1.5}}', "r.days", "must be a whole number"),
        ('{"r": {"prefix": "a", "days": true}}', "r.days", "must be a whole number"),
        ('{"r": {"prefix": "a", "days": "10"}}', "r.days", "must be a whole number"),
        ('{"r": {"prefix": "a", "days": null}}', "r.days", "must be a whole number"),
        ('{"r": {"prefix": "a", "days": NaN}}', "r.days", "must be a whole number"),
        (f'{{"r": {{"prefix": "a", "days": {MAX_DAYS + 1}}}}}', "r.days", "too large"),
        # enabled
        ('{"r": {"prefix": "a", "days": 1, "enabled": "true"}}', "r.enabled", "must be true or false"),
        ('{"r": {"prefix": "a", "days": 1, "enabled": 1}}', "r.enabled", "must be true or false"),
        ('{"r": {"prefix": "a", "days": 1, "enabled": null}}', "r.enabled", "must be true or false"),
        # branch_days
        ('{"r": {"prefix": "a", "branch_days": [["b1", 5]]}}', "r.branch_days", "must be an object"),
        ('{"r": {"prefix": "a", "branch_days": {"b1": 5, "b1": 6}}}', "r.branch_days.b1", "branch 'b1' given more than once"),
        ('{"r": {"prefix": "a", "branch_days": {"": 5}}}', 'r.branch_days.""', "branch name must be a non-empty"),
        ('{"r": {"prefix": "a", "branch_days": {"b1": -5}}}', "r.branch_days.b1", "must not be negative"),
        ('{"r": {"prefix": "a", "branch_days": {"b1": 5.0}}}', "r.branch_days.b1", "must be a whole number"),
        ('{"r": {"prefix": "a", "branch_days": {"b1": false}}}', "r.branch_days.b1", "must be a whole number"),
        ('{"r": {"prefix": "a", "branch_days": {"b1": {"days": 1}}}}', "r.branch_days.b1", "must be a whole number"),
        # a later rule is checked too
        ('{"ok": {"prefix": "a", "days": 1}, "bad": {"prefix": "b", "days": -1}}', "bad.days", "must not be negative"),
    ],
)
def test_bad_policy_names_file_rule_and_field(tmp_path: Path, content: str, field: str | None, message: str) -> None:
    path = write(tmp_path, content)
    with pytest.raises(BadInput, match=message) as caught:
        load_lifecycle_policy(path)
    assert caught.value.source == str(path)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{path}: {field}: " if field else f"{path}: ")


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ("{not json", "line 1, column 2"),
        ('{"r": {"prefix": "a",\n  "days": 1,}}', "line 2, column 13"),
        ("", "line 1, column 1"),
        ('{"r": {"prefix": "a", "days": 1}} trailing', "line 1, column 35"),
    ],
)
def test_invalid_json_gives_line_and_column(tmp_path: Path, content: str, where: str) -> None:
    path = write(tmp_path, content)
    with pytest.raises(BadInput, match=f"not valid JSON \\({where}") as caught:
        load_lifecycle_policy(path)
    assert caught.value.source == str(path)


def test_deeply_nested_json_is_bad_input() -> None:
    with pytest.raises(BadInput, match="not valid JSON"):
        parse_lifecycle_policy("[" * 100_000 + "]" * 100_000, "deep.json")


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such file") as caught:
        load_lifecycle_policy(tmp_path / "absent.json")
    assert caught.value.source == str(tmp_path / "absent.json")
    with pytest.raises(BadInput, match="unreadable"):
        load_lifecycle_policy(tmp_path)  # a directory
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe{}")
    with pytest.raises(BadInput, match="unreadable"):
        load_lifecycle_policy(binary)
