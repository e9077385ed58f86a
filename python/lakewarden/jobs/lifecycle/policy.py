"""Lifecycle policy: the lifecycle job's JSON policy (docs/contract.md §3.1), validated strictly.

``{"rule1": {"prefix": "foo/bar", "days": 10, "enabled": true, "branch_days": {"b1": 5, "b2": 8}},
   "rule2": {"prefix": "foo/zoo", "enabled": true, "branch_days": {"b1": 5}}}``

As with the GC rules, anything unexpected is an error rather than ignored: a misspelt
``branch_day`` silently dropped would apply the (shorter) all-branches retention, a duplicate key
would let the later value win unnoticed, and an empty prefix would match the whole repository.
A rule with neither ``days`` nor ``branch_days`` is allowed (it matches nothing) with a warning; a
``branch_days`` entry for a branch that does not exist is for the job to warn about
(:meth:`LifecyclePolicy.unknown_branches`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from lakewarden.errors import BadInput, read_input_file

log = logging.getLogger(__name__)

RULE_KEYS = ("prefix", "days", "enabled", "branch_days")

# Upper bound for ``days`` and ``branch_days`` values (about 1000 years): keeps ``now - days``
# representable as a Python datetime and a Spark timestamp, and the value a 32-bit Spark int.
MAX_DAYS = 365_000


@dataclass(frozen=True)
class LifecycleRule:
    rule_id: str
    prefix: str
    enabled: bool
    days: int | None
    branch_days: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"prefix": self.prefix, "enabled": self.enabled}
        if self.days is not None:
            document["days"] = self.days
        document["branch_days"] = dict(sorted(self.branch_days.items()))
        return document


@dataclass(frozen=True)
class LifecyclePolicy:
    rules: tuple[LifecycleRule, ...]

    def rows(self) -> list[tuple[str, str, bool, int | None, dict[str, int]]]:
        """Rows of the ``lifecycle_policy_rules`` source table, one per rule (disabled ones too),
        sorted by rule id: ``(rule_id, prefix, enabled, days, branch_days)``."""
        return [
            (rule.rule_id, rule.prefix, rule.enabled, rule.days, dict(sorted(rule.branch_days.items())))
            for rule in sorted(self.rules, key=lambda r: r.rule_id)
        ]

    def unknown_branches(self, branches: Iterable[str]) -> list[tuple[str, str]]:
        """``(rule_id, branch)`` for every ``branch_days`` key of an enabled rule that is not one
        of ``branches``, sorted."""
        known = set(branches)
        return sorted(
            (rule.rule_id, branch)
            for rule in self.rules
            if rule.enabled
            for branch in rule.branch_days
            if branch not in known
        )

    def to_json(self) -> dict[str, Any]:
        """The policy as canonical JSON: rules sorted by id, every rule with ``prefix``,
        ``enabled`` and ``branch_days`` (sorted), ``days`` only when set. Parsing it again gives
        an equal policy."""
        return {rule.rule_id: rule.to_json() for rule in sorted(self.rules, key=lambda r: r.rule_id)}


class _Object(dict):
    """A JSON object as decoded, remembering keys that occurred more than once."""

    duplicates: list[str]


def _object_pairs(pairs: list[tuple[str, Any]]) -> _Object:
    result = _Object()
    result.duplicates = []
    for key, value in pairs:
        if key in result and key not in result.duplicates:
            result.duplicates.append(key)
        result[key] = value
    return result


def _days(value: Any, source: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"must be a whole number of days, not {json.dumps(value)}", source=source, field=where)
    if value < 0:
        raise BadInput(f"must not be negative ({value})", source=source, field=where)
    if value > MAX_DAYS:
        raise BadInput(f"too large ({value}; at most {MAX_DAYS} days)", source=source, field=where)
    return value


def _rule_field(rule_id: str, *parts: str) -> str:
    return ".".join((rule_id or '""', *parts))


def _parse_rule(rule_id: str, value: Any, source: str) -> LifecycleRule:
    if not rule_id:
        raise BadInput("rule id must be a non-empty string", source=source, field='""')
    if not isinstance(value, dict):
        raise BadInput("must be an object {prefix, days, enabled, branch_days}", source=source, field=rule_id)
    duplicates = getattr(value, "duplicates", [])
    if duplicates:
        raise BadInput("key given more than once", source=source, field=_rule_field(rule_id, duplicates[0]))
    unknown = sorted(set(value) - set(RULE_KEYS))
    if unknown:
        raise BadInput(
            f"unknown key {unknown[0]!r} in rule {rule_id!r} (expected {', '.join(RULE_KEYS)})",
            source=source,
            field=_rule_field(rule_id, unknown[0]),
        )

    if "prefix" not in value:
        raise BadInput("missing", source=source, field=_rule_field(rule_id, "prefix"))
    prefix = value["prefix"]
    if not isinstance(prefix, str):
        raise BadInput(f"must be a string, not {json.dumps(prefix)}", source=source, field=_rule_field(rule_id, "prefix"))
    if not prefix:
        raise BadInput(
            "must not be empty (it would match the whole repository)", source=source, field=_rule_field(rule_id, "prefix")
        )

    days = _days(value["days"], source, _rule_field(rule_id, "days")) if "days" in value else None

    enabled = value.get("enabled", True)
    if not isinstance(enabled, bool):
        raise BadInput(
            f"must be true or false, not {json.dumps(enabled)}", source=source, field=_rule_field(rule_id, "enabled")
        )

    branch_days: dict[str, int] = {}
    if "branch_days" in value:
        where = _rule_field(rule_id, "branch_days")
        per_branch = value["branch_days"]
        if not isinstance(per_branch, dict):
            raise BadInput("must be an object {branch: days}", source=source, field=where)
        duplicates = getattr(per_branch, "duplicates", [])
        if duplicates:
            raise BadInput(
                f"branch {duplicates[0]!r} given more than once", source=source, field=f"{where}.{duplicates[0]}"
            )
        for branch, branch_value in per_branch.items():
            if not branch:
                raise BadInput("branch name must be a non-empty string", source=source, field=f'{where}.""')
            branch_days[branch] = _days(branch_value, source, f"{where}.{branch}")

    if days is None and not branch_days:
        log.warning("%s: lifecycle rule %r has neither days nor branch_days: it matches nothing", source, rule_id)
    return LifecycleRule(rule_id=rule_id, prefix=prefix, enabled=enabled, days=days, branch_days=branch_days)


def parse_lifecycle_policy(text: str, source: str) -> LifecyclePolicy:
    """Parse and validate a policy's JSON text; ``source`` names it in errors (the file path)."""
    try:
        document = json.loads(text, object_pairs_hook=_object_pairs)
    except json.JSONDecodeError as exc:
        raise BadInput(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", source=source) from None
    except RecursionError:
        raise BadInput("not valid JSON (nested too deeply)", source=source) from None
    if not isinstance(document, dict):
        raise BadInput("must be a JSON object of rule id -> rule", source=source)
    duplicates = getattr(document, "duplicates", [])
    if duplicates:
        raise BadInput(f"rule id {duplicates[0]!r} given more than once", source=source, field=duplicates[0] or '""')
    if not document:
        raise BadInput("no rules (at least one rule is required)", source=source)
    return LifecyclePolicy(rules=tuple(_parse_rule(rule_id, rule, source) for rule_id, rule in document.items()))


def load_lifecycle_policy(path: Path | str) -> LifecyclePolicy:
    return parse_lifecycle_policy(read_input_file(path), str(path))
