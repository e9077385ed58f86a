"""Independent reference implementations the Spark/dbt jobs are checked against.

Deliberately naive (plain dicts and full walks, no memoisation, no shared code with the jobs
beyond reading the snapshot's JSON Lines), so a bug in the models cannot hide in the oracle.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass
class Snapshot:
    namespace: str
    commits: dict[str, dict]
    branches: dict[str, str]
    tags: dict[str, str]
    metaranges: dict[str, set[str]]
    ranges: dict[str, list[dict]]
    staged: list[dict]

    @classmethod
    def read(cls, directory: Path) -> "Snapshot":
        repository = json.loads((directory / "repository.json").read_text())
        metaranges: dict[str, set[str]] = {}
        for row in read_jsonl(directory / "metaranges.jsonl"):
            ranges_of = metaranges.setdefault(row["meta_range_id"], set())
            if row.get("range_id") is not None:  # null: an empty metarange lists no range
                ranges_of.add(row["range_id"])
        ranges: dict[str, list[dict]] = {}
        for row in read_jsonl(directory / "ranges.jsonl"):
            ranges.setdefault(row["range_id"], []).append(row)
        return cls(
            namespace=repository["storage_namespace"].rstrip("/"),
            commits={row["commit_id"]: row for row in read_jsonl(directory / "commits.jsonl")},
            branches={row["branch_id"]: row["commit_id"] for row in read_jsonl(directory / "branches.jsonl")},
            tags={row["tag_id"]: row["commit_id"] for row in read_jsonl(directory / "tags.jsonl")},
            metaranges=metaranges,
            ranges=ranges,
            staged=read_jsonl(directory / "staged.jsonl"),
        )

    def physical(self, address: str, address_type: str) -> str:
        if address_type.upper() == "FULL":
            return address
        return f"{self.namespace}/{address.lstrip('/')}"

    def addresses_of(self, commit_ids: set[str]) -> set[str]:
        found = set()
        for commit_id in commit_ids:
            for range_id in self.metaranges.get(self.commits[commit_id]["meta_range_id"] or "", ()):
                for entry in self.ranges[range_id]:
                    found.add(self.physical(entry["address"], entry["address_type"]))
        return found

    def staged_addresses(self) -> set[str]:
        return {self.physical(row["address"], row["address_type"]) for row in self.staged}

    def inside_namespace(self, uri: str) -> bool:
        return (
            uri.startswith(self.namespace + "/")
            and not uri.startswith(self.namespace + "/_lakefs/")
            and uri != self.namespace + "/dummy"  # lakeFS's marker object: its GC never deletes it
        )


def main_parent(row: dict) -> str | None:
    """lakeFS's main parent: the last of ``parents`` for version-0 commits, else the first."""
    parents = row.get("parents") or []
    if not parents:
        return None
    return parents[-1] if row.get("version") == 0 else parents[0]


def committed_gc_active(snapshot: Snapshot, now: datetime, rules: dict | None, retain_tags: bool = True) -> set[str]:
    """lakeFS committed-GC active commits, walked naively."""
    created = {c: ts(row["creation_date"]) for c, row in snapshot.commits.items()}
    first = {c: main_parent(row) for c, row in snapshot.commits.items()}
    if rules is None:
        return set(snapshot.commits)
    per_branch = {r["branch_id"]: r["retention_days"] for r in rules.get("branches", [])}
    default = rules["default_retention_days"]
    starts: list[tuple[str, bool, datetime]] = []
    for branch, head in snapshot.branches.items():
        starts.append((head, True, now - timedelta(days=per_branch.get(branch, default))))
    first_parents = {p for p in first.values() if p}
    heads = set(snapshot.branches.values())
    for commit in snapshot.commits:
        if commit not in first_parents and commit not in heads:
            starts.append((commit, False, now - timedelta(days=default)))
    active: set[str] = set()
    for commit, is_branch, threshold in starts:
        if not is_branch and not created[commit] > threshold:
            continue
        while True:
            active.add(commit)
            if first[commit] is None or not created[commit] > threshold:
                break
            commit = first[commit]
    if retain_tags:
        active |= set(snapshot.tags.values())
    return active


def committed_gc_marked(snapshot: Snapshot, now: datetime, rules: dict | None, retain_tags: bool = True) -> set[str]:
    """Physical addresses committed GC must mark."""
    active = committed_gc_active(snapshot, now, rules, retain_tags)
    expired = set(snapshot.commits) - active
    live = snapshot.addresses_of(active) | snapshot.staged_addresses()
    return {a for a in snapshot.addresses_of(expired) - live if snapshot.inside_namespace(a)}


def local_file(uri: str) -> Path:
    return Path(urlparse(uri).path)


# -- uncommitted GC ------------------------------------------------------------------------------


def normalised_uri(uri: str) -> str:
    """Scheme aliases (s3a/s3n -> s3) and repeated slashes folded, as the jobs compare addresses."""
    import re

    scheme, sep, rest = uri.partition("://")
    if not sep:
        return uri
    scheme = {"s3a": "s3", "s3n": "s3"}.get(scheme.lower(), scheme.lower())
    return f"{scheme}://{re.sub('/+', '/', rest)}"


def local_storage(namespace_path: Path) -> dict[str, datetime]:
    """Every file under a local namespace except ``_lakefs/``: URI -> modification time (UTC)."""
    from datetime import timezone

    found = {}
    for path in namespace_path.rglob("*"):
        if path.is_file() and path.relative_to(namespace_path).parts[0] != "_lakefs":
            found["file://" + str(path)] = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    return found


def gc_uncommitted_marked(snapshot: Snapshot, storage: dict[str, datetime], now: datetime, min_age: timedelta) -> set[str]:
    """What a clean uncommitted GC run must mark: stored objects inside the namespace (not
    ``_lakefs/``, not lakeFS's root ``dummy``) that no entry of any range and no staged entry references, at least
    ``min_age`` old (unknown age: too young)."""
    referenced = {
        normalised_uri(snapshot.physical(entry["address"], entry["address_type"]))
        for entries in snapshot.ranges.values()
        for entry in entries
    }
    referenced |= {normalised_uri(uri) for uri in snapshot.staged_addresses()}
    marked = set()
    for uri, modified in storage.items():
        relative = uri[len(snapshot.namespace) + 1 :]
        if not uri.startswith(snapshot.namespace + "/") or relative.split("/")[0] == "_lakefs" or relative == "dummy":
            continue
        if normalised_uri(uri) in referenced or modified is None or modified > now - min_age:
            continue
        marked.add(uri)
    return marked
