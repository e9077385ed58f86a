"""A long, busy lakeFS history for the committed-GC benchmark, generated in linear time.

    from busy_history import busy_history
    sample = busy_history(directory)  # 100,000 commits over a year, 10,000 branches, ~5M entries

``lakewarden.sample.generate`` cannot make this shape: its per-commit bookkeeping is quadratic in
commits (it counts a branch's commits by scanning every commit) and its branches are a handful
that live for the whole history. Here, by default:

* ``main`` plus 10,000 feature branches forked from it over 365 days ending at
  ``lakewarden.sample.DEFAULT_END``; each branch lives up to two weeks and gets a few commits;
* 2,000 branches stay open; of the others, half are merged into main (a two-parent merge commit,
  then the branch is deleted) and half are deleted unmerged (their tips dangle). The commits
  before the median merge are of version 0, so half the merges list main's parent **last**
  (lakeFS's CommitVersionParentSwitch), the rest first;
* every commit's metarange is its parent's 20 ranges with exactly one replaced by a new range
  (a merge replaces one slot of main's with main's range overlaid with the branch's changes in
  that slot), so there are ~100,000 x 20 = 2M metarange rows;
* a new range keeps its parent's entries except about a tenth of its keys (as lakeFS rewrites a
  range: unchanged keys keep their address), which get new objects or, now and then, copy
  another key's address (two paths, one object). Ranges hold ~50 entries each, ~5M in all, so
  an address is shared by the many ranges that inherited it, and only objects that nothing but
  expired commits hold are garbage: the GC has real work, and live branches keep theirs.

The shape mirrors what ``lakewarden.sample.generate`` writes (the snapshot format of
docs/snapshot.md, as Parquet, without object files, like ``common.bench_sample``):
``repository.json`` with a ``file://`` storage namespace, a first commit ("Repository created")
with no metarange, two tags, staged entries on every branch (one re-staging an address only the
initial import holds). Unlike the sample, every address is RELATIVE: the load here is the commit
graph, not the kinds of address.

Memory stays bounded: only the ranges a live branch holds keep their entries (as address
numbers), ranges and metarange rows are streamed to Parquet in row groups of ~128k rows (one row
group per 50-entry range, as ``sample.py`` writes its larger ranges, would make 100,000 tiny row
groups that every reader pays for), and the plan of the history is a list of small tuples.
The default size takes well under a minute and a few hundred MB.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import sys
import time
from array import array
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cached_sample  # noqa: E402  (puts this checkout's python/ on the import path)

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from lakewarden.sample import DEFAULT_END, TABLE_NAMES, SampleRepository  # noqa: E402
from lakewarden.snapshot import arrow_schemas  # noqa: E402

CACHE_FILE = "busy-history.json"  # written last: its presence means the history is complete
GENERATOR_VERSION = 1  # bump when the shape changes: cached histories are then made again
REPOSITORY_ID = "busy-history"
ROW_GROUP_ROWS = 128 * 1024
CHANGE_FRACTION = 0.1  # share of a range's keys a rewrite changes
COPY_SHARE = 0.05  # share of changed keys that copy another key's address instead of a new object
BRANCH_DAYS = (0.05, 14.0)  # how long a feature branch lives (closed ones are closed at the end)
OBJECT_SIZES = 1 << 20  # sizes are spread over 1 B .. 1 MiB

# Kinds of planned events, in the order a branch goes through them.
FORK, BRANCH_COMMIT, MERGE, DELETE, MAIN_COMMIT = range(5)
#: (position in the history 0..1, step within its branch, kind, branch number)
Event = tuple[float, int, int, int]


@dataclass(frozen=True)
class HistoryShape:
    """The parameters of a busy history, and the counts they imply."""

    commits: int = 100_000
    branches: int = 10_000
    open_branches: int = 2_000
    slots: int = 20
    entries: int = 5_000_000
    days: int = 365
    seed: int = 1

    def __post_init__(self) -> None:
        if self.slots < 1 or self.days < 1 or self.branches < 0 or self.entries < 1:
            raise ValueError(f"slots, days and entries must be positive, branches not negative: {self}")
        if not 0 <= self.open_branches <= self.branches:
            raise ValueError(f"open_branches must be between 0 and branches ({self.branches}), not {self.open_branches}")
        if self.events - self.merges < max(1, self.branches):
            raise ValueError(
                f"{self.commits} commits cannot hold {self.branches} branches with a commit each and "
                f"{self.merges} merges (at least {max(1, self.branches) + self.merges + 2} commits)"
            )

    @property
    def events(self) -> int:
        """Commits after the first two ("Repository created" and the initial import)."""
        return self.commits - 2

    @property
    def merges(self) -> int:
        """Closed branches merged into main (the other closed ones are deleted unmerged)."""
        return (self.branches - self.open_branches) // 2

    @property
    def branch_commits(self) -> int:
        """Commits on feature branches: about half of the non-merge commits, at least one each."""
        return max(self.branches, (self.events - self.merges) // 2)

    @property
    def main_commits(self) -> int:
        return self.events - self.merges - self.branch_commits

    @property
    def keys_per_range(self) -> int:
        """Entries of every range: each commit writes one range, the import one per slot."""
        return max(4, self.entries // (self.slots + self.events))


def _hex(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


def _micros(moment: datetime) -> int:
    return (moment - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)


# -- the plan: when each branch forks, commits and closes ------------------------------------------


def plan_events(shape: HistoryShape, rng: random.Random) -> tuple[list[Event], float]:
    """Every fork, commit, merge and deletion of the history, in order, and the position of the
    version switch (the median merge: commits before it are of version 0).

    Positions are fractions of the history; a branch's events are strictly after its fork and
    its close after its last commit (the step breaks ties). Commit times are assigned later by
    rank among the commit events, so commits are evenly spaced whatever the draws."""
    counts = [1] * shape.branches
    for _ in range(shape.branch_commits - shape.branches):
        counts[rng.randrange(shape.branches)] += 1
    fates = [BRANCH_COMMIT] * shape.branches  # stays open
    closed = rng.sample(range(shape.branches), shape.branches - shape.open_branches)
    for index, number in enumerate(closed):
        fates[number] = MERGE if index < shape.merges else DELETE
    forks = sorted(rng.random() for _ in range(shape.branches))  # branch numbers in fork order
    events: list[Event] = []
    merge_positions: list[float] = []
    for number, (fork, commits, fate) in enumerate(zip(forks, counts, fates)):
        life = rng.uniform(*BRANCH_DAYS) / shape.days
        close = fork + min(life, (1.0 - fork) / 2)
        events.append((fork, 0, FORK, number))
        moments = sorted(rng.uniform(fork, close) for _ in range(commits))
        events.extend((moment, step, BRANCH_COMMIT, number) for step, moment in enumerate(moments, start=1))
        if fate != BRANCH_COMMIT:
            events.append((close, commits + 1, fate, number))
            if fate == MERGE:
                merge_positions.append(close)
    events.extend((rng.random(), 0, MAIN_COMMIT, -1) for _ in range(shape.main_commits))
    events.sort()
    merge_positions.sort()
    switch = merge_positions[len(merge_positions) // 2] if merge_positions else 0.5
    return events, switch


# -- streaming writers ------------------------------------------------------------------------------


class _RangeWriter:
    """Streams ranges to ``ranges.parquet`` in row groups of about :data:`ROW_GROUP_ROWS` rows.

    A range's entries are address numbers; the strings (address, etag) and the entry times are
    looked up per row group, so a range costs 8 bytes an entry while it is held."""

    def __init__(self, path: Path, shape: HistoryShape, objects: "_Objects") -> None:
        self.schema = arrow_schemas()["ranges"]
        self.writer = pq.ParquetWriter(path, self.schema)
        self.objects = objects
        self.keys = [
            pa.array([_key(slot, index) for index in range(shape.keys_per_range)], pa.string())
            for slot in range(shape.slots)
        ]
        self.pending: list[tuple[str, int, array]] = []
        self.pending_rows = 0
        self.rows = 0

    def add(self, range_id: str, slot: int, content: array) -> None:
        self.pending.append((range_id, slot, content))
        self.pending_rows += len(content)
        if self.pending_rows >= ROW_GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        numbers = array("q")
        range_ids: list[str] = []
        for range_id, _, content in self.pending:
            numbers.extend(content)
            range_ids.extend([range_id] * len(content))
        objects = self.objects
        ids = pa.Array.from_buffers(pa.int64(), len(numbers), [None, pa.py_buffer(numbers.tobytes())])
        columns = [
            pa.array(range_ids, pa.string()),
            pa.concat_arrays([self.keys[slot] for _, slot, _ in self.pending]),
            pa.array([objects.addresses[n] for n in numbers], pa.string()),
            pa.array(["RELATIVE"] * len(numbers), pa.string()),
            pa.array([objects.created[n] for n in numbers], pa.timestamp("us", tz="UTC")),
            pc.add(pc.bit_wise_and(pc.multiply(ids, 2654435761), OBJECT_SIZES - 1), 1),
            pa.array([objects.etags[n] for n in numbers], pa.string()),
        ]
        self.writer.write_table(pa.Table.from_arrays(columns, schema=self.schema))
        self.rows += len(numbers)
        self.pending, self.pending_rows = [], 0

    def close(self) -> None:
        self.flush()
        self.writer.close()


class _MetarangeWriter:
    """Streams ``metaranges.parquet``: one row per (metarange, range), in row groups."""

    def __init__(self, path: Path) -> None:
        self.schema = arrow_schemas()["metaranges"]
        self.writer = pq.ParquetWriter(path, self.schema)
        self.metarange_ids: list[str] = []
        self.range_ids: list[str] = []
        self.rows = 0

    def add(self, metarange_id: str, range_ids: Sequence[str]) -> None:
        self.metarange_ids.extend([metarange_id] * len(range_ids))
        self.range_ids.extend(range_ids)
        if len(self.range_ids) >= ROW_GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.range_ids:
            self.writer.write_table(pa.table([self.metarange_ids, self.range_ids], schema=self.schema))
            self.rows += len(self.range_ids)
            self.metarange_ids, self.range_ids = [], []

    def close(self) -> None:
        self.flush()
        self.writer.close()


def _key(slot: int, index: int) -> str:
    return f"{TABLE_NAMES[slot % len(TABLE_NAMES)]}/slot-{slot:03d}/part-{index:07d}.parquet"


# -- the simulation ---------------------------------------------------------------------------------


@dataclass
class _Objects:
    """Every object written, by number: its address, etag and creation time (an entry's
    ``last_modified``). A few hundred thousand for the default size."""

    seed: int
    addresses: list[str] = field(default_factory=list)
    etags: list[str] = field(default_factory=list)
    created: list[int] = field(default_factory=list)

    def new(self, moment: int) -> int:
        number = len(self.addresses)
        digest = _hex(self.seed, "object", number)
        self.addresses.append(f"data/{digest[:2]}/obj-{number:09d}")
        self.etags.append(digest[32:])
        self.created.append(moment)
        return number


@dataclass
class _Branch:
    name: str
    head: str
    slots: list[int]  # range numbers, one per slot
    changed: dict[int, set[int]] = field(default_factory=dict)  # slot -> keys this branch rewrote
    last_slot: int = 0


@dataclass
class _Commits:
    """The commits table, column by column (100,000 rows are small; entries never are)."""

    commit_id: list[str] = field(default_factory=list)
    parents: list[list[str]] = field(default_factory=list)
    creation_date: list[int] = field(default_factory=list)
    meta_range_id: list[str] = field(default_factory=list)
    committer: list[str] = field(default_factory=list)
    message: list[str] = field(default_factory=list)
    version: list[int] = field(default_factory=list)

    def table(self) -> pa.Table:
        schema = arrow_schemas()["commits"]
        return pa.Table.from_arrays([pa.array(getattr(self, f.name), f.type) for f in schema], schema=schema)


class _History:
    """lakeFS's model of commits and ranges, kept only as far as live branches need it."""

    def __init__(self, shape: HistoryShape, snapshot_dir: Path, rng: random.Random) -> None:
        self.shape = shape
        self.rng = rng
        self.objects = _Objects(shape.seed)
        self.ranges = _RangeWriter(snapshot_dir / "ranges.parquet", shape, self.objects)
        self.metaranges = _MetarangeWriter(snapshot_dir / "metaranges.parquet")
        self.commits = _Commits()
        self.range_ids: list[str] = []
        self.contents: dict[int, array] = {}  # only ranges some branch holds
        self.refcount: dict[int, int] = {}
        self.changes = max(1, round(shape.keys_per_range * CHANGE_FRACTION))

    # -- ranges -------------------------------------------------------------------------------
    def new_range(self, slot: int, content: array) -> int:
        number = len(self.range_ids)
        range_id = _hex(self.shape.seed, "range", number)
        self.range_ids.append(range_id)
        self.ranges.add(range_id, slot, content)
        self.contents[number] = content
        self.refcount[number] = 0
        return number

    def hold(self, ranges: list[int]) -> None:
        for number in ranges:
            self.refcount[number] += 1

    def release(self, ranges: list[int]) -> None:
        for number in ranges:
            self.refcount[number] -= 1
            if self.refcount[number] == 0:  # no branch can build on it any more: free its entries
                del self.refcount[number], self.contents[number]

    def initial_ranges(self, moment: int) -> list[int]:
        keys = self.shape.keys_per_range
        return [
            self.new_range(slot, array("q", (self.objects.new(moment) for _ in range(keys))))
            for slot in range(self.shape.slots)
        ]

    def rewrite(self, slot: int, parent: int, moment: int) -> tuple[int, list[int]]:
        """A new range for ``slot``: the parent's entries with a few keys changed (new objects,
        now and then a copy of another key's address); the others keep their addresses."""
        content = array("q", self.contents[parent])
        changed = self.rng.sample(range(len(content)), self.changes)
        for key in changed:
            if self.rng.random() < COPY_SHARE:
                content[key] = content[self.rng.randrange(len(content))]
            else:
                content[key] = self.objects.new(moment)
        return self.new_range(slot, content), changed

    # -- commits ------------------------------------------------------------------------------
    def commit(self, parents: list[str], ranges: list[int] | None, moment: int, message: str, version: int) -> str:
        """Record a commit; ``parents`` main parent first (a version-0 commit stores them main
        parent last, as lakeFS did before its parent switch); ``ranges`` None: no metarange."""
        commit_id = _hex(self.shape.seed, "commit", len(self.commits.commit_id))
        if ranges is None:
            metarange_id = ""
        else:
            range_ids = [self.range_ids[number] for number in ranges]
            metarange_id = _hex("metarange", *range_ids)  # content-addressed, as lakeFS's
            self.metaranges.add(metarange_id, range_ids)
        columns = self.commits
        columns.commit_id.append(commit_id)
        columns.parents.append(list(reversed(parents)) if version == 0 else list(parents))
        columns.creation_date.append(moment)
        columns.meta_range_id.append(metarange_id)
        columns.committer.append("busy-history-generator")
        columns.message.append(message)
        columns.version.append(version)
        return commit_id

    def move(self, branch: _Branch, head: str, ranges: list[int]) -> None:
        self.hold(ranges)
        self.release(branch.slots)
        branch.head, branch.slots = head, ranges

    def fork(self, name: str, main: _Branch) -> _Branch:
        branch = _Branch(name, main.head, [])
        self.move(branch, main.head, list(main.slots))
        return branch

    def commit_on(self, branch: _Branch, moment: int, message: str, version: int) -> None:
        slot = self.rng.randrange(self.shape.slots)
        number, changed = self.rewrite(slot, branch.slots[slot], moment)
        ranges = list(branch.slots)
        ranges[slot] = number
        self.move(branch, self.commit([branch.head], ranges, moment, message, version), ranges)
        branch.changed.setdefault(slot, set()).update(changed)
        branch.last_slot = slot

    def merge(self, branch: _Branch, main: _Branch, moment: int, version: int) -> None:
        """A two-parent commit on main: main's ranges with the slot the branch changed last
        replaced by main's range overlaid with the branch's changes there."""
        slot = branch.last_slot
        content = array("q", self.contents[main.slots[slot]])
        theirs = self.contents[branch.slots[slot]]
        for key in branch.changed[slot]:
            content[key] = theirs[key]
        ranges = list(main.slots)
        ranges[slot] = self.new_range(slot, content)
        message = f"Merge '{branch.name}' into 'main'"
        self.move(main, self.commit([main.head, branch.head], ranges, moment, message, version), ranges)
        self.release(branch.slots)

    def close(self) -> None:
        self.ranges.close()
        self.metaranges.close()


def _commit_moments(shape: HistoryShape) -> Iterator[int]:
    """Evenly spaced commit times (microseconds) over ``days``, the last just before the end."""
    end = _micros(DEFAULT_END)
    span = shape.days * 86_400 * 1_000_000
    step = span // (shape.events + 1)
    for index in range(shape.events):
        yield end - span + step * (index + 1)


def _simulate(history: _History, events: list[Event], switch: float) -> tuple[_Branch, dict[str, _Branch], list[str]]:
    """Run the plan: main, the open branches by name, and the names of the removed ones."""
    shape = history.shape
    start = _micros(DEFAULT_END) - shape.days * 86_400 * 1_000_000
    created = history.commit([], None, start - 60_000_000, "Repository created", 0)
    ranges = history.initial_ranges(start)
    main = _Branch("main", created, [])
    history.move(main, history.commit([created], ranges, start, "initial import", 0), ranges)
    branches: dict[int, _Branch] = {}
    removed: list[str] = []
    moments = _commit_moments(shape)
    width = len(str(max(shape.branches, 1)))
    for position, _, kind, number in events:
        version = 0 if position < switch else 1
        if kind == FORK:
            branches[number] = history.fork(f"feature-{number + 1:0{width}d}", main)
        elif kind == BRANCH_COMMIT:
            branch = branches[number]
            history.commit_on(branch, next(moments), f"work on {branch.name}", version)
        elif kind == MAIN_COMMIT:
            history.commit_on(main, next(moments), f"update main #{len(history.commits.commit_id)}", version)
        else:
            branch = branches.pop(number)
            if kind == MERGE:
                history.merge(branch, main, next(moments), version)
            else:
                history.release(branch.slots)  # deleted unmerged: its commits dangle
            removed.append(branch.name)
    return main, {b.name: b for b in sorted(branches.values(), key=lambda b: b.name)}, removed


# -- the other tables -------------------------------------------------------------------------------


def _staged_rows(history: _History, branch_names: list[str], moment: int) -> list[dict]:
    """Three uncommitted writes per branch, and one re-staging the import's first object
    (only expired commits hold it: the staged row must keep it)."""
    rows = []
    objects = history.objects
    for name in branch_names:
        for index in range(3):
            number = objects.new(moment)
            rows.append({"branch_id": name, "key": f"staging/{name}/new-{index}.json",
                         "address": objects.addresses[number], "address_type": "RELATIVE", "last_modified": moment})
    rows.append({"branch_id": "main", "key": "staging/restored-from-history.parquet",
                 "address": objects.addresses[0], "address_type": "RELATIVE", "last_modified": moment})
    return rows


def _write_small_tables(snapshot_dir: Path, history: _History, main: _Branch, branches: dict[str, _Branch]) -> None:
    schemas = arrow_schemas()
    pq.write_table(history.commits.table(), snapshot_dir / "commits.parquet")
    heads = [main, *branches.values()]
    pq.write_table(
        pa.Table.from_pylist([{"branch_id": b.name, "commit_id": b.head, "hidden": False} for b in heads],
                             schema=schemas["branches"]),
        snapshot_dir / "branches.parquet",
    )
    commit_ids = history.commits.commit_id
    tags = [{"tag_id": "v1.0", "commit_id": commit_ids[len(commit_ids) // 4]},
            {"tag_id": "v2.0", "commit_id": commit_ids[len(commit_ids) // 2]}]
    pq.write_table(pa.Table.from_pylist(tags, schema=schemas["tags"]), snapshot_dir / "tags.parquet")
    staged = _staged_rows(history, [b.name for b in heads], _micros(DEFAULT_END - timedelta(hours=2)))
    pq.write_table(pa.Table.from_pylist(staged, schema=schemas["staged"]), snapshot_dir / "staged.parquet")


def generate_history(output_dir: Path, shape: HistoryShape) -> SampleRepository:
    """Write the history under ``output_dir``: ``snapshot/`` (Parquet tables and
    ``repository.json``) and the empty ``storage/`` namespace and ``external/`` folders."""
    output_dir = Path(output_dir).resolve()
    snapshot_dir = output_dir / "snapshot"
    namespace = output_dir / "storage" / REPOSITORY_ID
    external = output_dir / "external"
    for directory in (snapshot_dir, namespace, external):
        directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(shape.seed)
    events, switch = plan_events(shape, rng)
    history = _History(shape, snapshot_dir, rng)
    try:
        main, branches, removed = _simulate(history, events, switch)
    finally:
        history.close()
    del events
    _write_small_tables(snapshot_dir, history, main, branches)
    storage_namespace = namespace.as_uri()
    (snapshot_dir / "repository.json").write_text(
        json.dumps({"repository_id": REPOSITORY_ID, "storage_namespace": storage_namespace, "default_branch": "main"},
                   indent=2) + "\n"
    )
    return SampleRepository(
        snapshot_dir=snapshot_dir,
        storage_namespace=storage_namespace,
        namespace_path=namespace,
        external_path=external,
        commit_count=len(history.commits.commit_id),
        range_rows=history.ranges.rows,
        branches={b.name: b.head for b in (main, *branches.values())},
        deleted_branches=removed,
        unreferenced_objects=[],  # no object files are written
        end=DEFAULT_END,
    )


def busy_history(
    directory: Path,
    *,
    commits: int = 100_000,
    branches: int = 10_000,
    open_branches: int = 2_000,
    slots: int = 20,
    entries: int = 5_000_000,
    days: int = 365,
    seed: int = 1,
) -> SampleRepository:
    """The busy history of these parameters in ``directory``, generated once and then reused.

    Like ``common.bench_sample``: when ``directory`` holds a complete history made with the same
    parameters by the same generator version, it is returned as is; otherwise the directory is
    cleared and generated again (the marker file is written last)."""
    shape = HistoryShape(commits=commits, branches=branches, open_branches=open_branches, slots=slots,
                         entries=entries, days=days, seed=seed)
    parameters = {"generator": GENERATOR_VERSION, **asdict(shape)}
    return cached_sample(directory, CACHE_FILE, parameters, lambda target: generate_history(target, shape))


def history_dir(workdir: Path, shape: HistoryShape) -> Path:
    """Where a benchmark keeps the busy history of these parameters inside its workdir."""
    return Path(workdir) / (
        f"busy-history-c{shape.commits}-b{shape.branches}-o{shape.open_branches}-s{shape.slots}"
        f"-e{shape.entries}-d{shape.days}-seed{shape.seed}"
    )


def main(argv: list[str] | None = None) -> int:
    """Generate (or reuse) a history and print what it holds: ``python benchmarks/busy_history.py DIR``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    defaults = HistoryShape()
    for name in ("commits", "branches", "open_branches", "slots", "entries", "days", "seed"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(defaults, name))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    sample = busy_history(args.directory, commits=args.commits, branches=args.branches,
                          open_branches=args.open_branches, slots=args.slots, entries=args.entries,
                          days=args.days, seed=args.seed)
    seconds = time.perf_counter() - started
    rows = {name: pq.read_metadata(sample.snapshot_dir / f"{name}.parquet").num_rows
            for name in ("commits", "branches", "tags", "metaranges", "ranges", "staged")}
    print(f"busy history in {sample.snapshot_dir}: ready in {seconds:.1f} s, "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print(", ".join(f"{name} {count:,d}" for name, count in rows.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
