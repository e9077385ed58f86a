"""A small lakeFS-like repository whose history the uncommitted GC tests write step by step
(no tests here): uploads (real files with controlled modification times), staged entries,
commits that turn a branch's staged entries into a new range, branches, late commits, deletes.

It keeps lakeFS's invariants: a physical address is never reused, an object is written before
any entry references it, and a commit's creation time is not before its objects were written.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class Branch:
    head: str | None
    ranges: list[str]
    staged: dict[str, tuple[str, str, datetime]] = field(default_factory=dict)  # key -> (address, type, time)


class Repo:
    def __init__(self, root: Path, *, namespace: str | None = None, seed: int = 0, write_objects: bool = True, genesis: bool = True):
        self.root = Path(root)
        self.namespace_path = self.root / "storage" / "repo"
        self.external_path = self.root / "external"
        self.snapshot_dir = self.root / "snapshot"
        self.storage_namespace = namespace or self.namespace_path.as_uri()
        self.write_objects = write_objects
        self.rng = random.Random(seed)
        self.clock = START
        self.counter = 0
        self.commits: list[dict] = []
        self.metaranges: dict[str, list[str]] = {}
        self.ranges: dict[str, list[dict]] = {}
        self.branches: dict[str, Branch] = {}
        self.uploads: list[str] = []  # every address uploaded, in order
        self.deleted: set[str] = set()
        for directory in (self.namespace_path, self.external_path, self.snapshot_dir):
            directory.mkdir(parents=True, exist_ok=True)
        (self.namespace_path / "_lakefs").mkdir(exist_ok=True)
        (self.namespace_path / "_lakefs" / "dummy").write_bytes(b"metadata")
        self.branches["main"] = Branch(None, [])
        if genesis:  # one committed object on main
            self.stage("main")
            self.commit("main")

    # -- storage --------------------------------------------------------------------------
    def advance(self, delta: timedelta) -> None:
        self.clock += delta

    def upload(self, prefix: str = "data") -> str:
        """Write a new object at the current time; returns its RELATIVE address."""
        self.counter += 1
        address = f"{prefix}/{uuid.UUID(int=self.rng.getrandbits(128)).hex[:2]}/obj-{self.counter:06d}"
        if self.write_objects:
            path = self.namespace_path / address
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x" * 8)
            stamp = self.clock.timestamp()
            os.utime(path, (stamp, stamp))
        self.uploads.append(address)
        return address

    def delete_object(self, address: str) -> None:
        (self.namespace_path / address).unlink(missing_ok=True)
        self.deleted.add(address)

    def external(self) -> str:
        self.counter += 1
        path = self.external_path / f"ext-{self.counter:06d}"
        if self.write_objects:
            path.write_bytes(b"e")
        return path.as_uri()

    # -- refs -----------------------------------------------------------------------------
    def stage(self, branch: str, *, address: str | None = None, full: bool = False, key: str | None = None) -> str:
        """Stage an entry (a fresh upload unless ``address`` is given); returns the address."""
        address = address or self.upload()
        key = key or f"tables/{branch}/k-{self.counter:06d}"
        if full and "://" not in address:
            entry = (f"{self.storage_namespace}//{address}", "FULL", self.clock)  # doubled slash: normalised
        else:
            entry = (address, "FULL" if "://" in address else "RELATIVE", self.clock)
        self.branches[branch].staged[key] = entry
        return address

    def unstage_address(self, branch: str, address: str) -> None:
        staged = self.branches[branch].staged
        for key in [k for k, v in staged.items() if v[0] == address]:
            del staged[key]

    def unstage(self, branch: str) -> str | None:
        """Drop (reset) one staged entry: its object becomes garbage unless something else holds it."""
        staged = self.branches[branch].staged
        if not staged:
            return None
        key = self.rng.choice(sorted(staged))
        return staged.pop(key)[0]

    def commit(self, branch: str, *, late: bool = False) -> str | None:
        """Turn the branch's staged entries into a new range and commit, created now; ``late``: created
        when its newest entry was staged (a commit that shows up after a run but is dated before it)."""
        state = self.branches[branch]
        if not state.staged and state.head is not None:
            return None
        created_at = max(m for _, _, m in state.staged.values()) if late and state.staged else None
        range_id = f"range-{len(self.ranges):05d}"
        self.ranges[range_id] = [
            {
                "range_id": range_id,
                "key": key,
                "address": address,
                "address_type": kind,
                "last_modified": rfc3339(moment),
                "size": 8,
                "etag": "e",
            }
            for key, (address, kind, moment) in sorted(state.staged.items())
        ]
        ranges = [*state.ranges, range_id]
        meta_range_id = f"mr-{len(self.metaranges):05d}"
        self.metaranges[meta_range_id] = ranges
        commit_id = f"c-{len(self.commits):05d}"
        self.commits.append(
            {
                "commit_id": commit_id,
                "parents": [state.head] if state.head else [],
                "creation_date": rfc3339(created_at or self.clock),
                "meta_range_id": meta_range_id,
                "committer": "test",
                "message": f"commit on {branch}",
                "version": 1,
            }
        )
        state.head, state.ranges, state.staged = commit_id, ranges, {}
        return commit_id

    def copy_commit(self, branch: str) -> None:
        """Commit an entry that reuses an address some commit already holds (dedup across paths)."""
        committed = [e["address"] for entries in self.ranges.values() for e in entries if e["address_type"] == "RELATIVE"]
        if committed:
            self.stage(branch, address=self.rng.choice(committed))
            self.commit(branch)

    def create_branch(self, name: str, source: str = "main") -> None:
        origin = self.branches[source]
        self.branches[name] = Branch(origin.head, list(origin.ranges))

    def delete_branch(self, name: str) -> None:
        self.branches.pop(name, None)

    # -- snapshot -------------------------------------------------------------------------
    def write_snapshot(self) -> Path:
        def dump(name: str, rows: list[dict]) -> None:
            with open(self.snapshot_dir / f"{name}.jsonl", "w", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(json.dumps(row) + "\n")

        (self.snapshot_dir / "repository.json").write_text(
            json.dumps({"repository_id": "uc-repo", "storage_namespace": self.storage_namespace, "default_branch": "main"})
        )
        dump("commits", self.commits)
        dump("branches", [{"branch_id": b, "commit_id": s.head, "hidden": False} for b, s in self.branches.items() if s.head])
        dump("tags", [])
        dump(
            "metaranges",
            [
                {"meta_range_id": m, "range_id": r}
                for m, rs in self.metaranges.items()
                for r in (dict.fromkeys(rs) if rs else [None])  # None: an empty metarange (docs/contract.md §2)
            ],
        )
        dump("ranges", [entry for entries in self.ranges.values() for entry in entries])
        dump(
            "staged",
            [
                {"branch_id": b, "key": k, "address": a, "address_type": t, "last_modified": rfc3339(m)}
                for b, s in self.branches.items()
                if s.head
                for k, (a, t, m) in sorted(s.staged.items())
            ],
        )
        return self.snapshot_dir
