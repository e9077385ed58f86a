"""Read a lakeFS refs dump: every commit, branch and tag, as lakeFS stores them.

A refs dump (``POST /repositories/{repo}/dump``) makes lakeFS write three metaranges under
``<namespace>/_lakefs/``, one per kind, in the same SSTable format as object listings: a
metarange lists ranges, a range holds records keyed by commit/branch/tag id whose values are
graveler ``CommitData`` / ``BranchData`` / ``TagData`` protobufs. The commits dump lists every
commit of the repository, those no branch or tag reaches any more included (the tips of deleted
branches, which lakeFS's GC keeps for the default retention), with ``parents`` in lakeFS's
stored order and each commit's ``version``: nothing is reordered here (for a version-0 commit
the main parent is the *last* element; the jobs interpret that).

Records are decoded by :mod:`lakewarden.lakefs.records` (the one decoder of these messages).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lakewarden.errors import BadInput
from lakewarden.extract.api import CommitRow, RefsDumpIds
from lakewarden.extract.ranges import read_metarange
from lakewarden.extract.storage import MetadataStore
from lakewarden.lakefs.records import (
    RecordError,
    decode_branch_record,
    decode_commit_record,
    decode_tag_record,
)
from lakewarden.lakefs.sstable import SSTableReader

__all__ = ["DumpedRefs", "InconsistentDump", "keep_deleted_branches", "read_refs_dump"]


class InconsistentDump(BadInput):
    """A dumped branch or tag points at a commit the commits dump lacks.

    lakeFS dumps commits, then branches, then tags: a commit made in between can be a branch's
    head without being in the commits dump. Dumping again settles it.
    """


@dataclass
class DumpedRefs:
    commits: dict[str, CommitRow]
    branches: dict[str, str]  # branch_id -> commit_id (hidden branches included)
    tags: dict[str, str]  # tag_id -> commit_id


def _records(
    store: MetadataStore, metarange_id: str, what: str, decode: Callable[[bytes, bytes], dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    """Every record of one dumped metarange, decoded, in key order."""
    if not metarange_id:
        raise BadInput(f"lakeFS returned no metarange id for the {what}")
    for range_id in read_metarange(store.read(metarange_id, f"{what} metarange"), store.location(metarange_id)):
        reader = SSTableReader(store.read(range_id, f"{what} range"), name=store.location(range_id))
        for key, value in reader.iter_records():
            try:
                yield decode(key, value)
            except RecordError as exc:
                raise RecordError(str(exc), source=reader.name) from None


def read_refs_dump(store: MetadataStore, dump: RefsDumpIds) -> DumpedRefs:
    """Decode the three dumped metaranges into snapshot rows."""
    commits: dict[str, CommitRow] = {}
    for record in _records(store, dump.commits, "commits dump", decode_commit_record):
        commit_id = record["commit_id"]
        commits[commit_id] = CommitRow(
            commit_id=commit_id,
            parents=list(record["parents"]),
            creation_date=datetime.fromisoformat(record["creation_date"]),
            meta_range_id=record["meta_range_id"] or None,
            committer=record["committer"],
            message=record["message"],
            version=int(record["version"]),
        )
    branches = {r["branch_id"]: r["commit_id"] for r in _records(store, dump.branches, "branches dump", decode_branch_record)}
    tags = {r["tag_id"]: r["commit_id"] for r in _records(store, dump.tags, "tags dump", decode_tag_record)}
    for name, target, known in (("branch", branches, commits), ("tag", tags, commits)):
        for ref, commit_id in target.items():
            if commit_id not in known:
                raise InconsistentDump(
                    f"{name} {ref!r} points at commit {commit_id!r}, which the commits dump does not hold",
                    source=store.location(dump.branches if name == "branch" else dump.tags),
                )
    return DumpedRefs(commits=commits, branches=branches, tags=tags)


def keep_deleted_branches(refs: DumpedRefs, listed: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Put back, at the head they had then, the branches listed before lakeFS was asked for its
    GC answer that the later dump no longer holds (deleted while extract ran, lakeFS #9772);
    return them (branch_id -> commit_id).

    Why keep a deleted branch: lakeFS computed its GC answer while the branch existed, so it
    keeps that head as a branch head, at any age; dropped from the snapshot, the head would be
    a dangling commit under the default retention only, and an old one would expire here while
    lakeFS keeps it. Keeping it protects exactly what lakeFS's answer protects, for this run;
    the next extract sees the branch gone and treats its tip as lakeFS then does.
    """
    kept: dict[str, str] = {}
    for branch_id, commit_id in listed:
        if branch_id in refs.branches:
            continue
        if commit_id not in refs.commits:
            raise InconsistentDump(
                f"branch {branch_id!r} was deleted while extract ran and its head {commit_id!r} is not in the "
                "commits dump; run extract again",
                field="branches",
            )
        refs.branches[branch_id] = commit_id
        kept[branch_id] = commit_id
    return kept
