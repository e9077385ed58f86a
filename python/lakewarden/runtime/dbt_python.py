"""Bodies of the dbt Python models: move commit-graph data between Spark and commit_graph.

Only commit-level data (ids, parents, dates: tens of bytes a commit) is brought to the driver,
via Arrow; entry and address lists never are. Results go back to Spark as Arrow tables.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator

import pyarrow as pa

from lakewarden.commit_graph import CommitGraph, Reachability, StartPoint

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession


def _epoch_seconds(column: pa.ChunkedArray) -> list[float | None]:
    """Timestamps (any unit, UTC) as epoch seconds, keeping nulls."""
    as_us = column.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    return [None if v is None else v / 1_000_000 for v in as_us.to_pylist()]


def load_graph(commits: "DataFrame") -> CommitGraph:
    """Build the commit graph from ``stg_lakefs__commits``."""
    table = commits.select("commit_id", "parent_commit_ids", "created_at", "version").toArrow()
    created = _epoch_seconds(table.column("created_at"))
    return CommitGraph(
        table.column("commit_id").to_pylist(),
        table.column("parent_commit_ids").to_pylist(),
        [c if c is not None else 0.0 for c in created],
        table.column("version").to_pylist(),
    )


def active_commits_frame(session: "SparkSession", commits: "DataFrame", start_points: "DataFrame") -> "DataFrame":
    """Rows of ``int_gc_committed__active_commits``: commit_id, activated_by_commit_id, activated_by_branch_id,
    activation_kind (``start`` for the start point itself, ``first_parent_walk`` otherwise)."""
    graph = load_graph(commits)
    starts_table = start_points.select("start_commit_id", "branch_id", "expiration_threshold").toArrow()
    thresholds = _epoch_seconds(starts_table.column("expiration_threshold"))
    starts = [
        StartPoint(commit_id=c, branch_id=b, threshold=t)
        for c, b, t in zip(
            starts_table.column("start_commit_id").to_pylist(),
            starts_table.column("branch_id").to_pylist(),
            thresholds,
        )
    ]
    # Branch HEADs first: a commit reached by both a branch and a dangling walk is reported
    # as kept by the branch, which is the reason users recognise.
    starts.sort(key=lambda s: (s.branch_id is None, s.branch_id or "", s.commit_id))
    activations = graph.active_commits(starts)
    table = pa.table(
        {
            "commit_id": pa.array([a.commit_id for a in activations], pa.string()),
            "activated_by_commit_id": pa.array([a.start_commit_id for a in activations], pa.string()),
            "activated_by_branch_id": pa.array([a.branch_id for a in activations], pa.string()),
            "activation_kind": pa.array(
                ["start" if a.is_start else "first_parent_walk" for a in activations], pa.string()
            ),
        }
    )
    return session.createDataFrame(table)


def commit_branch_sets_frame(session: "SparkSession", commits: "DataFrame", branches: "DataFrame") -> "DataFrame":
    """Rows of ``int_graph__commit_branch_sets``: commit_id, branch_set_id."""
    reach = _reachability(commits, branches)
    table = pa.table(
        {
            "commit_id": pa.array(reach.commit_ids, pa.string()),
            "branch_set_id": pa.array(reach.set_ids, pa.string()),
        }
    )
    return session.createDataFrame(table)


def branch_set_members_frame(session: "SparkSession", commits: "DataFrame", branches: "DataFrame") -> "DataFrame":
    """Rows of ``int_graph__branch_set_members``: branch_set_id, branch_id (none for the empty set)."""
    reach = _reachability(commits, branches)
    set_ids: list[str] = []
    branch_ids: list[str | None] = []
    for set_id, members in sorted(reach.members.items()):
        for branch_id in members or (None,):
            set_ids.append(set_id)
            branch_ids.append(branch_id)
    table = pa.table(
        {
            "branch_set_id": pa.array(set_ids, pa.string()),
            "branch_id": pa.array(branch_ids, pa.string()),
            "branch_count": pa.array(
                [len(reach.members[s]) for s in set_ids], pa.int32()
            ),
        }
    )
    return session.createDataFrame(table)


class SharedReachability:
    """One run's branch reachability, computed once for every reader of the run's commits and
    branches: ``int_graph__commit_branch_sets``, ``int_graph__branch_set_members`` and the
    report's figures each computed it again, two Spark queries and a walk of the whole commit
    graph each time (a lifecycle run on the tests' 900-entry sample sent 81 Spark jobs, 6 of
    them these collects).

    Keyed by the relations the frames are (a model's ``dbt.ref`` of ``stg_lakefs__commits`` and
    ``stg_lakefs__branches``: lakewarden's runner builds each relation once a run, so a name
    holds the same rows for the whole run; a relation it builds again is forgotten,
    :meth:`forget`). The first key asked about is the run's; another key gets its own
    computation, as without sharing (and so does a frame that is not a bare relation, filtered
    say: :func:`_reachability`). Why names and not plans: the staging views are CTEs, and Spark
    numbers a view's CTEs anew each time it resolves it, so two frames of one view are never the
    "same semantics". A caller asking while the first computes waits for its answer."""

    def __init__(self) -> None:
        self._key: tuple[str, str] | None = None
        self._reach: Reachability | None = None
        self._lock = threading.Lock()

    def reachability(self, commits: "DataFrame", branches: "DataFrame", key: tuple[str, str]) -> Reachability:
        """:func:`compute_reachability` of ``commits`` and ``branches``, once per run for the
        relations ``key`` names."""
        with self._lock:
            if self._reach is None:
                self._reach, self._key = compute_reachability(commits, branches), key
                return self._reach
            if key == self._key:
                return self._reach
        return compute_reachability(commits, branches)

    def forget(self, relation: str) -> None:
        """``relation`` is being built again: a walk of it is no longer the run's."""
        with self._lock:
            if self._key is not None and relation in self._key:
                self._key, self._reach = None, None

    def computed(self) -> Reachability | None:
        """The run's reachability when a model of the run has computed it, else None."""
        with self._lock:
            return self._reach


_serving = threading.local()


@contextmanager
def reachability_shared_by(shared: SharedReachability, relation_of: "Callable[[DataFrame], str | None]") -> Iterator[None]:
    """Python models run in the block (on this thread) take their reachability from ``shared``
    (:meth:`SharedReachability.reachability`); ``relation_of`` names the relation a frame the
    model was given is (None for any other frame). lakewarden's model runner puts each Python
    model of a run in one; under dbt's own materializations there is none."""
    previous = getattr(_serving, "shared", None)
    _serving.shared = (shared, relation_of)
    try:
        yield
    finally:
        _serving.shared = previous


def _reachability(commits: "DataFrame", branches: "DataFrame") -> "Reachability":
    serving: "tuple[SharedReachability, Callable[[DataFrame], str | None]] | None" = getattr(_serving, "shared", None)
    if serving is None:
        return compute_reachability(commits, branches)
    shared, relation_of = serving
    commits_relation, branches_relation = relation_of(commits), relation_of(branches)
    if commits_relation is None or branches_relation is None:
        return compute_reachability(commits, branches)  # not the run's relations as they are
    return shared.reachability(commits, branches, (commits_relation, branches_relation))


def compute_reachability(commits: "DataFrame", branches: "DataFrame") -> "Reachability":
    """Which branches reach each commit (:meth:`CommitGraph.reachability`), from
    ``stg_lakefs__commits``-shaped ``commits`` and ``stg_lakefs__branches``-shaped ``branches``."""
    graph = load_graph(commits)
    heads = branches.select("branch_id", "head_commit_id").toArrow()
    return graph.reachability(
        dict(zip(heads.column("branch_id").to_pylist(), heads.column("head_commit_id").to_pylist()))
    )
