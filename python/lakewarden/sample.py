"""Deterministic sample lakeFS repositories: snapshot tables plus real object files.

Used by ``lakewarden demo``, the tests and the benchmarks. A history is simulated the way lakeFS
builds one: every commit's metarange lists one range per key slot; a commit rewrites a few slots
(new, immutable ranges) and shares the rest with its parent, so ranges are shared between
commits. Feature branches fork from main, commit, and are merged back (two-parent commits), left
open, or deleted without merging (their commits become dangling). Some entries copy another
path's address (dedup across paths), some are FULL addresses inside or outside the namespace,
branches carry staged entries (one re-staging an address only expired commits hold), and the
namespace holds unreferenced files (failed uploads), a ``_lakefs/`` folder and lakeFS's
``dummy`` object at its root.

It has the shapes a real lakeFS repository has: the first commit ("Repository created") has no
metarange; a short-lived branch commits an empty tree (an empty metarange, written as one
``metaranges`` row with ``range_id`` null); and the first half of the history is of commit
version 0, whose merges list main's parent **last** (lakeFS's CommitVersionParentSwitch).

Only slots still referenced by a branch keep their entries in memory, and ranges are streamed
to Parquet as they are made, so 10M entries need well under 2 GB.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator, TextIO

import pyarrow as pa
import pyarrow.parquet as pq

from lakewarden.snapshot import arrow_schemas
from lakewarden.timestamps import rfc3339

TABLE_NAMES = ("events", "users", "orders", "logs", "metrics", "images", "raw", "features")
DEFAULT_END = datetime(2026, 1, 1, tzinfo=timezone.utc)

RANGE_SCHEMA = arrow_schemas()["ranges"]


@dataclass(frozen=True)
class SampleConfig:
    """Shape of a sample repository. ``entries`` is the target row count of the ranges table."""

    seed: int = 7
    entries: int = 3_000
    slots: int = 12
    days: int = 40
    feature_branches: int = 6
    slots_per_commit: int = 2
    change_fraction: float = 0.3
    write_objects: bool = True
    object_size: int = 32
    table_format: str = "jsonl"  # or "parquet"
    end: datetime = DEFAULT_END
    repository_id: str = "sample-repo"


def large_sample_config(*, seed: int, entries: int, slots: int = 64) -> SampleConfig:
    """A 90-day repository of about ``entries`` range rows, as Parquet, without object files:
    the shape the benchmarks measure at scale and the engine warms up on (one definition, so
    that a warm-up runs the code the benchmarks time)."""
    return SampleConfig(
        seed=seed, entries=entries, slots=slots, days=90, feature_branches=12, slots_per_commit=3,
        write_objects=False, table_format="parquet",
    )


@dataclass
class _Branch:
    name: str
    head: str
    slots: list[str]
    forked_slots: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SampleRepository:
    """What was generated, for tests and the demo to reason about."""

    snapshot_dir: Path
    storage_namespace: str
    namespace_path: Path
    external_path: Path
    commit_count: int
    range_rows: int
    branches: dict[str, str]
    deleted_branches: list[str]
    unreferenced_objects: list[str]
    end: datetime


def _hex(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


class _Writer:
    """Streams snapshot tables to JSONL or Parquet."""

    def __init__(self, directory: Path, table_format: str) -> None:
        if table_format not in ("jsonl", "parquet"):
            raise ValueError(f"table_format must be jsonl or parquet, not {table_format!r}")
        self.directory = directory
        self.format = table_format
        self._ranges: pq.ParquetWriter | None = None
        self._ranges_jsonl: TextIO | None = None
        self.range_rows = 0

    def write_range(self, range_id: str, rows: list[tuple[str, str, str, datetime, int, str]]) -> None:
        self.range_rows += len(rows)
        if self.format == "parquet":
            if self._ranges is None:
                self._ranges = pq.ParquetWriter(self.directory / "ranges.parquet", RANGE_SCHEMA)
            columns = list(zip(*rows))
            self._ranges.write_table(
                pa.table(
                    [pa.array([range_id] * len(rows)), *[pa.array(c) for c in columns]],
                    schema=RANGE_SCHEMA,
                )
            )
        else:
            if self._ranges_jsonl is None:
                self._ranges_jsonl = open(self.directory / "ranges.jsonl", "w", encoding="utf-8")
            for key, address, address_type, modified, size, etag in rows:
                self._ranges_jsonl.write(
                    json.dumps(
                        {
                            "range_id": range_id,
                            "key": key,
                            "address": address,
                            "address_type": address_type,
                            "last_modified": rfc3339(modified, timespec="auto"),
                            "size": size,
                            "etag": etag,
                        }
                    )
                    + "\n"
                )

    def write_table(self, name: str, rows: list[dict], schema: pa.Schema) -> None:
        if self.format == "parquet":
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), self.directory / f"{name}.parquet")
            return
        with open(self.directory / f"{name}.jsonl", "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(
                    json.dumps({k: rfc3339(v, timespec="auto") if isinstance(v, datetime) else v for k, v in row.items()}) + "\n"
                )

    def close(self) -> None:
        if self._ranges is not None:
            self._ranges.close()
        if self._ranges_jsonl is not None:
            self._ranges_jsonl.close()
        if self.range_rows == 0:
            self.write_table("ranges", [], RANGE_SCHEMA)


class _Simulator:
    def __init__(self, config: SampleConfig, namespace: Path, external: Path, writer: _Writer) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.namespace = namespace
        self.external = external
        self.writer = writer
        self.keys_per_slot = max(4, int(config.entries * (1 - config.change_fraction) / config.slots / 10))
        self.contents: dict[str, dict[str, tuple[str, str, datetime, int]]] = {}
        self.refcount: dict[str, int] = {}
        self.commits: list[dict] = []
        self.metaranges: dict[str, list[str]] = {}
        self.commit_created: dict[str, datetime] = {}
        self.address_counter = 0
        # A bounded sample of addresses already written, for copies (dedup across paths).
        self.every_address: list[tuple[str, str]] = []

    # -- objects --------------------------------------------------------------------------
    def new_address(self, moment: datetime, kind: str = "RELATIVE") -> tuple[str, str]:
        self.address_counter += 1
        name = f"data/{_hex(self.config.seed, 'addr', self.address_counter)[:2]}/obj-{self.address_counter:09d}"
        if self.config.write_objects:
            self._write_object(self.namespace / name, moment)
        if kind == "FULL_INSIDE":
            return (self.namespace / name).as_uri(), "FULL"
        return name, "RELATIVE"

    def remember(self, address: str, address_type: str) -> None:
        if len(self.every_address) < 100_000:
            self.every_address.append((address, address_type))

    def external_address(self, moment: datetime) -> tuple[str, str]:
        self.address_counter += 1
        path = self.external / f"imported-{self.address_counter:09d}.csv"
        if self.config.write_objects:
            self._write_object(path, moment)
        return path.as_uri(), "FULL"

    def _write_object(self, path: Path, moment: datetime) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_hex(path.name).encode()[: self.config.object_size].ljust(self.config.object_size, b"."))
        stamp = moment.timestamp()
        os.utime(path, (stamp, stamp))

    # -- ranges ---------------------------------------------------------------------------
    def make_range(self, slot: int, content: dict[str, tuple[str, str, datetime, int]]) -> str:
        range_id = _hex(self.config.seed, "range", slot, sorted(content.items())[:1], len(self.contents), self.writer.range_rows)
        rows = [
            (key, address, address_type, modified, size, _hex(address)[:32])
            for key, (address, address_type, modified, size) in sorted(content.items())
        ]
        self.writer.write_range(range_id, rows)
        self.contents[range_id] = content
        self.refcount[range_id] = 0
        return range_id

    def hold(self, range_ids: list[str]) -> None:
        for range_id in range_ids:
            self.refcount[range_id] += 1

    def release(self, range_ids: list[str]) -> None:
        for range_id in range_ids:
            self.refcount[range_id] -= 1
            if self.refcount[range_id] == 0:
                del self.contents[range_id]  # no branch can modify it any more: free its entries

    def key(self, slot: int, index: int) -> str:
        return f"{TABLE_NAMES[slot % len(TABLE_NAMES)]}/slot-{slot:03d}/part-{index:07d}.parquet"

    def initial_slots(self, moment: datetime) -> list[str]:
        slots = []
        for slot in range(self.config.slots):
            content = {}
            for index in range(self.keys_per_slot):
                address, address_type = self.new_address(moment)
                content[self.key(slot, index)] = (address, address_type, moment, self.config.object_size)
                self.remember(address, address_type)
            slots.append(self.make_range(slot, content))
        return slots

    def rewrite_slot(self, slot: int, range_id: str, moment: datetime) -> str:
        """A new range for ``slot``: some paths overwritten, some deleted, some added, some copied."""
        content = dict(self.contents[range_id])
        keys = sorted(content)
        changes = max(1, int(len(keys) * self.config.change_fraction))
        for key in self.rng.sample(keys, min(changes, len(keys))):
            roll = self.rng.random()
            if roll < 0.15 and len(content) > 1:
                del content[key]  # deleted path: its object survives only in older commits
            elif roll < 0.25 and self.every_address:
                address, address_type = self.rng.choice(self.every_address)  # copy: dedup across paths
                content[key] = (address, address_type, moment, self.config.object_size)
            else:
                kind = "FULL_INSIDE" if roll > 0.98 else "RELATIVE"
                address, address_type = self.new_address(moment, kind)
                content[key] = (address, address_type, moment, self.config.object_size)
                self.remember(address, address_type)
        for _ in range(max(1, changes // 4)):
            index = self.keys_per_slot + self.rng.randrange(10 * self.keys_per_slot)
            if self.rng.random() < 0.05:
                address, address_type = self.external_address(moment)
            else:
                address, address_type = self.new_address(moment)
                self.remember(address, address_type)
            content[self.key(slot, index)] = (address, address_type, moment, self.config.object_size)
        return self.make_range(slot, content)

    # -- commits --------------------------------------------------------------------------
    def commit(
        self, parents: list[str], slots: list[str] | None, moment: datetime, message: str, *, version: int = 1
    ) -> str:
        """Record a commit. ``parents`` main parent first; a version-0 commit stores them the way
        lakeFS did before its parent switch (main parent last). ``slots`` None: no metarange
        (lakeFS's first commit); an empty list: an empty metarange."""
        commit_id = _hex(self.config.seed, "commit", len(self.commits))
        if slots is None:
            meta_range_id = ""
        else:
            meta_range_id = _hex("metarange", *slots)
            self.metaranges.setdefault(meta_range_id, list(slots))
        stored_parents = list(reversed(parents)) if version == 0 else list(parents)
        self.commits.append(
            {
                "commit_id": commit_id,
                "parents": stored_parents,
                "creation_date": moment,
                "meta_range_id": meta_range_id,
                "committer": "sample-generator",
                "message": message,
                "version": version,
            }
        )
        self.commit_created[commit_id] = moment
        return commit_id

    def commit_on(self, branch: _Branch, moment: datetime, message: str, *, version: int = 1) -> None:
        new_slots = list(branch.slots)
        for slot in self.rng.sample(range(self.config.slots), min(self.config.slots_per_commit, self.config.slots)):
            new_slots[slot] = self.rewrite_slot(slot, branch.slots[slot], moment)
        self.move(branch, self.commit([branch.head], new_slots, moment, message, version=version), new_slots)

    def move(self, branch: _Branch, head: str, slots: list[str]) -> None:
        self.hold(slots)
        self.release(branch.slots)
        branch.head, branch.slots = head, slots


def _moments(config: SampleConfig, count: int) -> Iterator[datetime]:
    start = config.end - timedelta(days=config.days)
    step = timedelta(days=config.days) / max(count, 1)
    for index in range(count):
        yield start + step * index


def generate(output_dir: Path, config: SampleConfig = SampleConfig()) -> SampleRepository:
    """Write a sample repository under ``output_dir``: ``snapshot/``, ``storage/`` (the namespace)
    and ``external/`` (objects outside the namespace, referenced by FULL addresses)."""
    output_dir = Path(output_dir).resolve()
    snapshot_dir = output_dir / "snapshot"
    namespace = output_dir / "storage" / config.repository_id
    external = output_dir / "external"
    for directory in (snapshot_dir, namespace, external):
        directory.mkdir(parents=True, exist_ok=True)
    writer = _Writer(snapshot_dir, config.table_format)
    sim = _Simulator(config, namespace, external, writer)
    rng = sim.rng

    # Each commit adds about slots_per_commit * change_fraction * 1.25 of a range's rows.
    per_commit = max(1, int(config.slots_per_commit * sim.keys_per_slot * (1 + config.change_fraction * 1.25)))
    initial_rows = config.slots * sim.keys_per_slot
    total_commits = max(6, (config.entries - initial_rows) // per_commit)
    moments = list(_moments(config, total_commits + 1))

    first = moments[0]
    # lakeFS's first commit has no metarange; the data arrives with the next one.
    created = sim.commit([], None, first - timedelta(minutes=1), "Repository created", version=0)
    slots = sim.initial_slots(first)
    root = sim.commit([created], slots, first, "initial import", version=0)
    main = _Branch("main", root, [])
    sim.move(main, root, slots)
    branches: dict[str, _Branch] = {"main": main}
    deleted: list[str] = []
    # A branch whose only commit deletes every object: an empty metarange (with an id).
    scratch = _Branch("scratch", root, [])
    sim.move(scratch, root, list(main.slots))
    sim.move(scratch, sim.commit([root], [], first + timedelta(seconds=1), "clear scratch", version=0), [])
    branches["scratch"] = scratch
    # The first half of the history predates lakeFS's parent switch (commit version 0).
    version_switch = total_commits // 2
    feature_plans = sorted(rng.sample(range(1, total_commits), min(config.feature_branches, total_commits - 1)))
    next_feature = 0

    for number, moment in enumerate(moments[1:], start=1):
        while next_feature < len(feature_plans) and feature_plans[next_feature] <= number:
            name = f"feature-{next_feature + 1}"
            branch = _Branch(name, main.head, [])
            sim.move(branch, main.head, list(main.slots))
            branch.forked_slots = list(main.slots)
            branches[name] = branch
            next_feature += 1
        version = 0 if number < version_switch else 1
        features = [b for b in branches.values() if b.name not in ("main", "scratch")]
        if features and rng.random() < 0.45:
            branch = rng.choice(features)
            sim.commit_on(branch, moment, f"work on {branch.name}", version=version)
            fate = rng.random()
            age = sum(1 for c in sim.commits if c["message"] == f"work on {branch.name}")
            if age >= 3 and fate < 0.35:  # merge into main, then maybe delete the branch
                merged = [
                    branch.slots[s] if branch.slots[s] != branch.forked_slots[s] else main.slots[s]
                    for s in range(config.slots)
                ]
                merge = sim.commit(
                    [main.head, branch.head], merged, moment, f"merge {branch.name} into main", version=version
                )
                sim.move(main, merge, merged)
                if rng.random() < 0.6:
                    sim.release(branch.slots)
                    del branches[branch.name]
                    deleted.append(branch.name)
            elif age >= 3 and fate < 0.5:  # abandoned: deleted without merging -> dangling commits
                sim.release(branch.slots)
                del branches[branch.name]
                deleted.append(branch.name)
        else:
            sim.commit_on(main, moment, f"update main #{number}", version=version)

    writer.close()
    staged = _staged_entries(sim, branches, config)
    unreferenced = _unreferenced_objects(sim, config)
    if config.write_objects:
        lakefs_dir = namespace / "_lakefs"
        lakefs_dir.mkdir(exist_ok=True)
        (lakefs_dir / "dummy-metarange").write_bytes(b"lakefs metadata: never deleted by a job")
        # lakeFS writes this object when it creates a repository; its GC never deletes it.
        (namespace / "dummy").write_bytes(b"lakeFS repository marker: never deleted by a job")

    commit_ids = [c["commit_id"] for c in sim.commits]
    tags = [
        {"tag_id": "v1.0", "commit_id": commit_ids[len(commit_ids) // 4]},
        {"tag_id": "v2.0", "commit_id": commit_ids[len(commit_ids) // 2]},
    ]
    storage_namespace = namespace.as_uri()
    (snapshot_dir / "repository.json").write_text(
        json.dumps(
            {"repository_id": config.repository_id, "storage_namespace": storage_namespace, "default_branch": "main"},
            indent=2,
        )
        + "\n"
    )
    schemas = arrow_schemas()
    writer.write_table("commits", sim.commits, schemas["commits"])
    writer.write_table(
        "branches",
        [{"branch_id": b.name, "commit_id": b.head, "hidden": False} for b in branches.values()],
        schemas["branches"],
    )
    writer.write_table("tags", tags, schemas["tags"])
    writer.write_table(
        "metaranges",
        [
            {"meta_range_id": m, "range_id": r}
            for m, ranges in sim.metaranges.items()
            for r in (dict.fromkeys(ranges) if ranges else [None])  # None: an empty metarange
        ],
        schemas["metaranges"],
    )
    writer.write_table("staged", staged, schemas["staged"])
    return SampleRepository(
        snapshot_dir=snapshot_dir,
        storage_namespace=storage_namespace,
        namespace_path=namespace,
        external_path=external,
        commit_count=len(sim.commits),
        range_rows=writer.range_rows,
        branches={b.name: b.head for b in branches.values()},
        deleted_branches=deleted,
        unreferenced_objects=unreferenced,
        end=config.end,
    )


def _staged_entries(sim: _Simulator, branches: dict[str, _Branch], config: SampleConfig) -> list[dict]:
    """A few uncommitted writes per branch, including one re-staging the oldest address."""
    rows = []
    moment = config.end - timedelta(hours=2)
    for branch in branches.values():
        for index in range(3):
            address, address_type = sim.new_address(moment)
            rows.append(
                {
                    "branch_id": branch.name,
                    "key": f"staging/{branch.name}/new-{index}.json",
                    "address": address,
                    "address_type": address_type,
                    "last_modified": moment,
                }
            )
    if sim.every_address:
        address, address_type = sim.every_address[0]  # only the initial import commit holds it
        rows.append(
            {
                "branch_id": "main",
                "key": "staging/restored-from-history.parquet",
                "address": address,
                "address_type": address_type,
                "last_modified": moment,
            }
        )
    return rows


def _unreferenced_objects(sim: _Simulator, config: SampleConfig) -> list[str]:
    """Objects no entry references (failed or abandoned uploads): old ones and fresh ones."""
    names = []
    for index, age in enumerate((timedelta(days=10), timedelta(days=3), timedelta(minutes=30))):
        name = f"data/uploads/abandoned-{index}.bin"
        if config.write_objects:
            sim._write_object(sim.namespace / name, config.end - age)
        names.append(name)
    return names
