"""Committed GC rules: lakeFS's GC rules JSON, validated strictly.

``{"default_retention_days": 14, "branches": [{"branch_id": "main", "retention_days": 21}]}``

Unknown keys are errors, not ignored: a misspelt ``retention_day`` silently falling back to the
default would delete data the user meant to keep. A rule for a branch that does not exist is
only a warning (lakeFS keeps rules for deleted branches too).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from lakewarden.errors import BadInput, read_input_file

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GcRules:
    default_retention_days: int
    branch_retention_days: dict[str, int]

    def rows(self) -> list[tuple[str | None, int]]:
        """Rows of the ``gc_rules`` source table (null branch = the default)."""
        return [(None, self.default_retention_days), *sorted(self.branch_retention_days.items())]

    def unknown_branches(self, branches: Iterable[str]) -> list[str]:
        known = set(branches)
        return sorted(b for b in self.branch_retention_days if b not in known)


def _days(value: Any, source: str, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"must be a whole number of days, not {json.dumps(value)}", source=source, field=field)
    if value < 0:
        raise BadInput(f"must not be negative ({value})", source=source, field=field)
    return value


def parse_gc_rules(document: Any, source: str) -> GcRules:
    if not isinstance(document, dict):
        raise BadInput("must be a JSON object", source=source)
    unknown = sorted(set(document) - {"default_retention_days", "branches"})
    if unknown:
        raise BadInput("unknown key (expected default_retention_days, branches)", source=source, field=unknown[0])
    if "default_retention_days" not in document:
        raise BadInput("missing", source=source, field="default_retention_days")
    default = _days(document["default_retention_days"], source, "default_retention_days")
    branches_value = document.get("branches", [])
    if not isinstance(branches_value, list):
        raise BadInput("must be a list of {branch_id, retention_days}", source=source, field="branches")
    per_branch: dict[str, int] = {}
    for index, rule in enumerate(branches_value):
        where = f"branches[{index}]"
        if not isinstance(rule, dict):
            raise BadInput("must be an object", source=source, field=where)
        extra = sorted(set(rule) - {"branch_id", "retention_days"})
        if extra:
            raise BadInput("unknown key (expected branch_id, retention_days)", source=source, field=f"{where}.{extra[0]}")
        branch_id = rule.get("branch_id")
        if not isinstance(branch_id, str) or not branch_id:
            raise BadInput("missing or not a non-empty string", source=source, field=f"{where}.branch_id")
        if branch_id in per_branch:
            raise BadInput(f"second rule for branch {branch_id!r}", source=source, field=f"{where}.branch_id")
        if "retention_days" not in rule:
            raise BadInput("missing", source=source, field=f"{where}.retention_days")
        per_branch[branch_id] = _days(rule["retention_days"], source, f"{where}.retention_days")
    return GcRules(default_retention_days=default, branch_retention_days=per_branch)


def load_gc_rules(path: Path) -> GcRules:
    source = str(path)
    text = read_input_file(path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", source=source) from None
    return parse_gc_rules(document, source)
