"""Commit-graph walks that SQL cannot express well: first-parent retention walks and reachability.

Both run on the driver over integer arrays, in O(commits + edges) time and memory (the walks
add O(commits x distinct thresholds) in the worst case). That is comfortable up to a few million
commits (measured: ~1 s per 100k commits on one core); past roughly 10M commits the driver's
memory for the arrays (~100 bytes a commit plus one bitset per commit for reachability) becomes
the limit, and the walk should move to iterative Spark joins over ``first_parent`` (pointer
jumping), which this module's functions are the reference implementation for.

Semantics follow lakeFS's committed GC (graveler/retention): a branch's active commits are its
HEAD and, walking the main-parent chain, the parent of every commit created strictly after the
branch's expiration threshold -- so the commit that was HEAD at the threshold stays active.
A dangling commit (nobody's main parent and no branch's HEAD) is treated as the HEAD of a
hypothetical branch whose HEAD is a dummy child created at the same instant, with the default
retention: the dangling commit itself is active only if it was created strictly after the
threshold.

The *main* ("first") parent is lakeFS's: ``parents[0]`` for commits of version 1 and later, the
**last** element of ``parents`` for version-0 commits (lakeFS's CommitVersionParentSwitch: merges
written before the switch listed the merged-into branch last). A repository created before the
switch has such merges on its main line, and walking ``parents[0]`` there would follow the merged
branch and let the real main line expire.

One deliberate difference: lakeFS's walk stops as soon as it meets a commit an earlier walk has
already processed with an older-or-equal threshold, even past that walk's own retention, so its
active set depends on the order it visits start points. Here every walk goes as far as its own
retention reaches (the union of all walks), which can only keep more than lakeFS, never less.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from lakewarden.errors import BadInput

#: how a person is told about commits no branch reaches (explain, report.html)
DANGLING = "(no branch: dangling or deleted-branch commits)"

NO_PARENT = -1
#: lakeFS's CommitVersionParentSwitch: commits of a lower version list their main parent last.
PARENT_SWITCH_VERSION = 1


def main_parent_index(parent_count: int, version: int | None) -> int | None:
    """Index into ``parents`` of lakeFS's main ("first") parent; None for a root commit.

    A missing version is read as current (>= 1): every writer this project knows records it, and
    the contract requires it.
    """
    if parent_count == 0:
        return None
    if version is not None and version < PARENT_SWITCH_VERSION:
        return parent_count - 1
    return 0


@dataclass(frozen=True)
class StartPoint:
    """Where a retention walk starts.

    ``branch_id`` is None for a dangling commit. ``threshold`` is the expiration threshold in
    epoch seconds; None means the rule never expires anything (walk the whole chain).
    """

    commit_id: str
    branch_id: str | None
    threshold: float | None


@dataclass(frozen=True)
class Activation:
    """Why a commit is active: the start point whose walk reached it first."""

    commit_id: str
    start_commit_id: str
    branch_id: str | None
    is_start: bool


class CommitGraph:
    """An immutable commit DAG indexed by position, built once per run."""

    def __init__(
        self,
        commit_ids: Sequence[str],
        parents: Sequence[Sequence[str] | None],
        created_at: Sequence[float],
        versions: Sequence[int | None] | None = None,
        *,
        source: str = "commits",
    ) -> None:
        if not (len(commit_ids) == len(parents) == len(created_at)):
            raise ValueError("commit_ids, parents and created_at must have the same length")
        if versions is not None and len(versions) != len(commit_ids):
            raise ValueError("versions must have one entry per commit")
        self.commit_ids: list[str] = list(commit_ids)
        self.index: dict[str, int] = {}
        for position, commit_id in enumerate(self.commit_ids):
            if commit_id in self.index:
                raise BadInput(f"duplicate commit {commit_id!r}", source=source, field="commit_id")
            self.index[commit_id] = position
        self.created_at: list[float] = [float(value) for value in created_at]
        self.parents: list[list[int]] = []
        for position, parent_ids in enumerate(parents):
            resolved: list[int] = []
            for parent_id in parent_ids or ():
                parent = self.index.get(parent_id)
                if parent is None:
                    raise BadInput(
                        f"commit {self.commit_ids[position]!r} has parent {parent_id!r}, which is not in the snapshot",
                        source=source,
                        field="parents",
                    )
                resolved.append(parent)
            self.parents.append(resolved)
        self.first_parent: list[int] = []
        for position, resolved_parents in enumerate(self.parents):
            index = main_parent_index(len(resolved_parents), None if versions is None else versions[position])
            self.first_parent.append(NO_PARENT if index is None else resolved_parents[index])

    def __len__(self) -> int:
        return len(self.commit_ids)

    def position(self, commit_id: str, *, source: str, field: str) -> int:
        try:
            return self.index[commit_id]
        except KeyError:
            raise BadInput(f"unknown commit {commit_id!r}", source=source, field=field) from None

    def dangling_commits(self, head_commit_ids: Iterable[str]) -> list[str]:
        """Commits that are nobody's main parent and no branch's HEAD, in input order."""
        is_first_parent = bytearray(len(self))
        for parent in self.first_parent:
            if parent != NO_PARENT:
                is_first_parent[parent] = 1
        heads = {self.index[c] for c in head_commit_ids if c in self.index}
        return [
            self.commit_ids[position]
            for position in range(len(self))
            if not is_first_parent[position] and position not in heads
        ]

    def active_commits(self, start_points: Iterable[StartPoint]) -> list[Activation]:
        """Commits kept active by the start points' first-parent walks (see module docstring).

        Each commit is walked again only by a start point with an older threshold than every
        walk that already passed it, because a walk with a newer threshold stops no later.
        """
        walked_with: dict[int, float] = {}  # commit -> oldest threshold a walk passed it with
        activations: dict[int, Activation] = {}
        for start in start_points:
            position = self.position(start.commit_id, source="start points", field="commit_id")
            threshold = float("-inf") if start.threshold is None else float(start.threshold)
            if start.branch_id is None and not self.created_at[position] > threshold:
                continue  # the dummy child is not strictly after the threshold: the dangling commit expired
            current = position
            while True:
                previous = walked_with.get(current)
                if previous is not None and previous <= threshold:
                    break
                walked_with[current] = threshold
                if current not in activations:
                    activations[current] = Activation(
                        commit_id=self.commit_ids[current],
                        start_commit_id=start.commit_id,
                        branch_id=start.branch_id,
                        is_start=current == position,
                    )
                parent = self.first_parent[current]
                if parent == NO_PARENT or not self.created_at[current] > threshold:
                    break  # only a commit created strictly after the threshold keeps its parent
                current = parent
        return [activations[p] for p in sorted(activations)]

    def topological_children_first(self) -> list[int]:
        """Positions ordered so every commit comes before all of its parents (Kahn's algorithm)."""
        pending_children = [0] * len(self)
        for parents in self.parents:
            for parent in parents:
                pending_children[parent] += 1
        order = [p for p in range(len(self)) if pending_children[p] == 0]
        cursor = 0
        while cursor < len(order):
            for parent in self.parents[order[cursor]]:
                pending_children[parent] -= 1
                if pending_children[parent] == 0:
                    order.append(parent)
            cursor += 1
        if len(order) != len(self):
            raise BadInput("the commit graph has a cycle", source="commits", field="parents")
        return order

    def reachability(self, branch_heads: Mapping[str, str]) -> "Reachability":
        """Which branches reach each commit through any parent, as interned branch sets.

        Each branch is one bit of a Python int; a commit's set is the union of its children's
        sets plus the branches whose HEAD it is. Commits share a handful of distinct sets, so
        the result is one set id per commit plus the distinct sets, never commits x branches.
        """
        branches = sorted(branch_heads)
        bits = [0] * len(self)
        for bit, branch_id in enumerate(branches):
            head = self.position(branch_heads[branch_id], source="branches", field="commit_id")
            bits[head] |= 1 << bit
        for position in self.topological_children_first():
            reach = bits[position]
            if reach:
                for parent in self.parents[position]:
                    bits[parent] |= reach
        interned: dict[int, str] = {}
        members: dict[str, tuple[str, ...]] = {}
        masks: dict[str, int] = {}
        set_ids: list[str] = []
        for reach in bits:
            set_id = interned.get(reach)
            if set_id is None:
                names = branches_of(branches, reach)
                set_id = branch_set_id(names)
                interned[reach] = set_id
                members[set_id] = names
                masks[set_id] = reach
            set_ids.append(set_id)
        return Reachability(commit_ids=self.commit_ids, set_ids=set_ids, members=members, branches=tuple(branches), masks=masks)


@dataclass(frozen=True)
class Reachability:
    """Commit -> branch-set id, and branch-set id -> member branches."""

    commit_ids: list[str]
    set_ids: list[str]
    members: dict[str, tuple[str, ...]]
    #: the branches in bit order, and each set as a mask over them (bit i = branches[i]): unions
    #: of many sets are then ORs of ints, not unions of name tuples
    branches: tuple[str, ...] = ()
    masks: dict[str, int] = field(default_factory=dict)

    def names_of(self, mask: int) -> tuple[str, ...]:
        """The branches of a mask (an OR of :attr:`masks`)."""
        return branches_of(self.branches, mask)

    def branches_reaching(self, commit_id: str) -> tuple[str, ...]:
        return self.members[self.set_ids[self.commit_ids.index(commit_id)]]


def set_bits(mask: int) -> list[int]:
    """The positions of ``mask``'s set bits, ascending. Read off its binary digits: shifting a
    10,000-bit int once per bit made each call quadratic in the number of branches."""
    digits = bin(mask)[:1:-1]  # bit 0 first, without the '0b'
    return [position for position, digit in enumerate(digits) if digit == "1"] if mask > 0 else []


def branches_of(branches: Sequence[str], mask: int) -> tuple[str, ...]:
    """The branches whose bits ``mask`` has set (bit i = ``branches[i]``)."""
    return tuple(branches[b] for b in set_bits(mask))


def branch_set_id(branch_ids: Iterable[str]) -> str:
    """Stable id of a set of branches (independent of order and of the run)."""
    digest = hashlib.sha1("\n".join(sorted(branch_ids)).encode("utf-8")).hexdigest()
    return digest[:16]
