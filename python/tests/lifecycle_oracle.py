"""Independent reference implementation of the lifecycle job's semantics, for property tests.

Deliberately naive: plain dicts, full ancestry walks from every branch HEAD, every occurrence of
every entry evaluated on its own, no memoisation. It shares no code with the job (it does not
import ``lakewarden.jobs.lifecycle.policy`` or any job module; the policy is the raw JSON document as a
Python dict, not validated here) so a bug in the models or the policy parser cannot hide in it.

Semantics:

* Rows: each enabled rule (``enabled`` defaults to true) gives an all-branches row
  ``(rule, prefix, None, now - days)`` when it has ``days``, and ``(rule, prefix, b, now - d)``
  for each ``b: d`` of its ``branch_days``.
* Named branches N: the ``branch_days`` keys of enabled rules. A real branch ``b`` has context
  ``b`` if ``b`` is in N, else ``"*"``. A commit's contexts are those of every branch whose HEAD
  reaches it through any parent; ``{"*"}`` if no branch reaches it (dangling).
* In context ``c`` a rule's applicable row is its row for branch ``c`` (``c != "*"`` and the rule
  has ``branch_days[c]``), else its all-branches row if it has ``days``, else the rule does not
  apply.
* A range's contexts: the union of the contexts of every commit whose metarange lists it. A
  range no commit lists is an orphan: its entries are never deletable and protect their address.
* An occurrence (range, entry) is deletable now iff its range is listed and in every one of its
  contexts some applicable rule's prefix starts the path and ``last_modified`` is before that
  row's date; it was matched last time iff likewise with the ``last_deleted`` date of
  ``(prefix, row's branch)`` instead.
* A (path, physical) pair is a candidate iff all its occurrences in listed ranges are deletable
  now and not all of them were matched last time. An address is marked iff it is the physical of
  a candidate, every occurrence of it in any range (any path, orphans included) is deletable now,
  no staged entry references it, and it lies inside the namespace but not under ``_lakefs/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from oracles import Snapshot

ALL = "*"


def normalise(uri: str) -> str:
    """Scheme aliases (s3a/s3n -> s3), repeated slashes after the scheme folded."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return re.sub("/+", "/", uri)
    scheme = scheme.lower()
    scheme = {"s3a": "s3", "s3n": "s3"}.get(scheme, scheme)
    return f"{scheme}://{re.sub('/+', '/', rest)}"


def physical_of(snapshot: Snapshot, address: str, address_type: str) -> str:
    """RELATIVE: namespace + "/" + address (leading slashes stripped); FULL: as given; normalised."""
    if str(address_type).upper() == "FULL":
        return normalise(address)
    return normalise(snapshot.namespace.rstrip("/") + "/" + address.lstrip("/"))


def _time(value: str | datetime) -> datetime:
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@dataclass(frozen=True)
class Row:
    rule_id: str
    prefix: str
    branch: str | None
    date_to_be_deleted: datetime


def policy_rows(policy: dict, now: datetime) -> list[Row]:
    rows = []
    for rule_id, rule in policy.items():
        if not rule.get("enabled", True):
            continue
        if "days" in rule:
            rows.append(Row(rule_id, rule["prefix"], None, now - timedelta(days=rule["days"])))
        for branch, days in rule.get("branch_days", {}).items():
            rows.append(Row(rule_id, rule["prefix"], branch, now - timedelta(days=days)))
    return rows


def named_branches(policy: dict) -> set[str]:
    return {
        branch
        for rule in policy.values()
        if rule.get("enabled", True)
        for branch in rule.get("branch_days", {})
    }


def applicable_rows(policy: dict, now: datetime, context: str) -> list[Row]:
    """For each enabled rule, the row that applies in ``context`` (none if the rule does not)."""
    found = []
    rows = policy_rows(policy, now)
    for rule_id in policy:
        own = [row for row in rows if row.rule_id == rule_id]
        branch_row = [row for row in own if context != ALL and row.branch == context]
        all_branches_row = [row for row in own if row.branch is None]
        if branch_row:
            found.append(branch_row[0])
        elif all_branches_row:
            found.append(all_branches_row[0])
    return found


def reachable(snapshot: Snapshot, head: str) -> set[str]:
    """Every commit reachable from ``head`` through any parent (head included)."""
    seen: set[str] = set()
    stack = [head]
    while stack:
        commit = stack.pop()
        if commit in seen or commit not in snapshot.commits:
            continue
        seen.add(commit)
        stack.extend(snapshot.commits[commit].get("parents") or [])
    return seen


def commit_contexts(snapshot: Snapshot, policy: dict) -> dict[str, set[str]]:
    named = named_branches(policy)
    contexts: dict[str, set[str]] = {commit: set() for commit in snapshot.commits}
    for branch, head in snapshot.branches.items():
        for commit in reachable(snapshot, head):
            contexts[commit].add(branch if branch in named else ALL)
    return {commit: (found or {ALL}) for commit, found in contexts.items()}


def range_contexts(snapshot: Snapshot, policy: dict) -> dict[str, set[str]]:
    """Contexts of every range some commit lists (orphan ranges are absent)."""
    per_commit = commit_contexts(snapshot, policy)
    found: dict[str, set[str]] = {}
    for commit, row in snapshot.commits.items():
        for range_id in snapshot.metaranges.get(row.get("meta_range_id") or "", ()):
            found.setdefault(range_id, set()).update(per_commit[commit])
    return found


@dataclass(frozen=True)
class Occurrence:
    range_id: str
    path: str
    physical: str
    last_modified: datetime
    listed: bool
    contexts: frozenset[str]


def occurrences(snapshot: Snapshot, policy: dict) -> list[Occurrence]:
    contexts = range_contexts(snapshot, policy)
    found = []
    for range_id, entries in snapshot.ranges.items():
        for entry in entries:
            found.append(
                Occurrence(
                    range_id=range_id,
                    path=entry["key"],
                    physical=physical_of(snapshot, entry["address"], entry["address_type"]),
                    last_modified=_time(entry["last_modified"]),
                    listed=range_id in contexts,
                    contexts=frozenset(contexts.get(range_id, ())),
                )
            )
    return found


def expiring_rules(policy: dict, now: datetime, path: str, modified: datetime, context: str) -> set[str]:
    """Rules whose applicable row in ``context`` expires an entry at ``path`` modified then."""
    return {
        row.rule_id
        for row in applicable_rows(policy, now, context)
        if path.startswith(row.prefix) and modified < row.date_to_be_deleted
    }


def expired_now(policy: dict, now: datetime, path: str, modified: datetime, context: str) -> bool:
    return bool(expiring_rules(policy, now, path, modified, context))


def expired_last(
    policy: dict, now: datetime, last_deleted: dict, path: str, modified: datetime, context: str
) -> bool:
    for row in applicable_rows(policy, now, context):
        previous = last_deleted.get((row.prefix, row.branch))
        if path.startswith(row.prefix) and previous is not None and modified < previous:
            return True
    return False


def deletable_now(policy: dict, now: datetime, occurrence: Occurrence) -> bool:
    return occurrence.listed and all(
        expired_now(policy, now, occurrence.path, occurrence.last_modified, context) for context in occurrence.contexts
    )


def matched_last(policy: dict, now: datetime, last_deleted: dict, occurrence: Occurrence) -> bool:
    return all(
        expired_last(policy, now, last_deleted, occurrence.path, occurrence.last_modified, context)
        for context in occurrence.contexts
    )


def staged_physicals(snapshot: Snapshot) -> set[str]:
    return {physical_of(snapshot, row["address"], row["address_type"]) for row in snapshot.staged}


def inside_namespace(snapshot: Snapshot, physical: str) -> bool:
    namespace = normalise(snapshot.namespace.rstrip("/"))
    return (
        physical.startswith(namespace + "/")
        and not physical.startswith(namespace + "/_lakefs/")
        and physical != namespace + "/dummy"
    )


def lifecycle_marked(
    snapshot: Snapshot,
    policy: dict,
    now: datetime,
    last_deleted: dict[tuple[str, str | None], datetime] | None = None,
) -> dict[str, dict[str, list[str]]]:
    """What a from-scratch lifecycle run must mark: normalised physical address ->
    ``{"paths": sorted candidate paths, "matched_rules": sorted ids of rules that expire a
    candidate occurrence in one of its contexts}``."""
    last_deleted = last_deleted or {}
    all_occurrences = occurrences(snapshot, policy)

    pairs: dict[tuple[str, str], list[Occurrence]] = {}
    for occurrence in all_occurrences:
        if occurrence.listed:
            pairs.setdefault((occurrence.path, occurrence.physical), []).append(occurrence)
    candidates = {
        pair: found
        for pair, found in pairs.items()
        if all(deletable_now(policy, now, o) for o in found)
        and not all(matched_last(policy, now, last_deleted, o) for o in found)
    }

    staged = staged_physicals(snapshot)
    marked: dict[str, dict[str, list[str]]] = {}
    for physical in sorted({physical for _, physical in candidates}):
        if physical in staged or not inside_namespace(snapshot, physical):
            continue
        if not all(deletable_now(policy, now, o) for o in all_occurrences if o.physical == physical):
            continue
        paths = sorted(path for path, candidate_physical in candidates if candidate_physical == physical)
        rules: set[str] = set()
        for (path, candidate_physical), found in candidates.items():
            if candidate_physical != physical:
                continue
            for occurrence in found:
                for context in occurrence.contexts:
                    rules |= expiring_rules(policy, now, path, occurrence.last_modified, context)
        marked[physical] = {"paths": paths, "matched_rules": sorted(rules)}
    return marked


def surviving_physicals(snapshot: Snapshot, policy: dict, now: datetime) -> set[str]:
    """Normalised physical addresses a lifecycle run must never delete: those with an occurrence
    that is not deletable now (including every orphan occurrence) or a staged entry."""
    surviving = {o.physical for o in occurrences(snapshot, policy) if not deletable_now(policy, now, o)}
    return surviving | staged_physicals(snapshot)
