"""Read a snapshot directory (docs/contract.md §2) with pyarrow, without Spark.

``report.html`` and ``lakewarden explain`` look at the snapshot a run used after the run, often
in another process and without a warehouse. The small tables (commits, branches, tags,
metaranges) are read whole; ``ranges`` and ``staged`` are only ever streamed in record batches,
optionally filtered, so memory stays bounded by the batch size whatever the repository's size.
"""

from __future__ import annotations

from collections import defaultdict, deque
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.dataset as ds

from lakewarden.commit_graph import DANGLING
from lakewarden.errors import BadInput
from lakewarden.snapshot import _table_path

BATCH_ROWS = 64 * 1024


def dataset(snapshot_dir: Path, name: str) -> ds.Dataset | None:
    """The table as a pyarrow dataset (JSON Lines or Parquet), None when it has no rows."""
    path = _table_path(Path(snapshot_dir), name)
    if path.is_file() and path.stat().st_size == 0:
        return None
    try:
        return ds.dataset(str(path), format="json" if path.suffix == ".jsonl" else "parquet")
    except (pa.ArrowInvalid, OSError) as exc:
        raise BadInput(f"unreadable ({str(exc).splitlines()[0]})", source=str(path)) from None


def batches(
    snapshot_dir: Path, name: str, columns: Sequence[str], where: ds.Expression | None = None
) -> Iterator[dict[str, list[Any]]]:
    """Stream ``columns`` of table ``name`` (rows matching ``where``) as column lists per batch."""
    table = dataset(snapshot_dir, name)
    if table is None:
        return
    present = [c for c in columns if c in table.schema.names]
    try:
        for batch in table.to_batches(columns=present, filter=where, batch_size=BATCH_ROWS):
            if batch.num_rows:
                data = batch.to_pydict()
                for missing in set(columns) - set(present):
                    data[missing] = [None] * batch.num_rows
                yield data
    except pa.ArrowInvalid as exc:
        raise BadInput(f"unreadable ({str(exc).splitlines()[0]})", source=str(snapshot_dir / name)) from None


def rows(snapshot_dir: Path, name: str, columns: Sequence[str], where: ds.Expression | None = None) -> Iterator[dict[str, Any]]:
    """Rows of ``name`` as dicts, streamed."""
    for data in batches(snapshot_dir, name, columns, where):
        for values in zip(*(data[c] for c in columns)):
            yield dict(zip(columns, values))


def timestamp(value: Any) -> datetime | None:
    """A snapshot timestamp (RFC 3339 text or an Arrow timestamp) as an aware UTC datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        moment = value
    else:
        moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


class CommitIndex:
    """Commits, their metaranges, and which branches (and tags) reach each commit.

    "Reaches" follows every parent, as the lifecycle rules and a person reading a history do:
    a commit is on branch X when X's HEAD is it or descends from it. Sized by the commit graph
    (as the jobs' own walks), never by the number of objects.
    """

    def __init__(self, snapshot_dir: Path) -> None:
        self.snapshot_dir = Path(snapshot_dir)
        self.commits: dict[str, dict[str, Any]] = {
            row["commit_id"]: row
            for row in rows(self.snapshot_dir, "commits", ["commit_id", "parents", "creation_date", "meta_range_id", "message"])
        }
        self.heads: dict[str, str] = {
            row["branch_id"]: row["commit_id"] for row in rows(self.snapshot_dir, "branches", ["branch_id", "commit_id"])
        }
        self.tags: dict[str, list[str]] = defaultdict(list)
        for row in rows(self.snapshot_dir, "tags", ["tag_id", "commit_id"]):
            self.tags[row["commit_id"]].append(row["tag_id"])
        self.branches_of: dict[str, set[str]] = defaultdict(set)
        for branch, head in self.heads.items():
            self._mark_reachable(head, branch)
        self.ranges_of_metarange: dict[str, list[str]] = defaultdict(list)
        for row in rows(self.snapshot_dir, "metaranges", ["meta_range_id", "range_id"]):
            if row["range_id"]:
                self.ranges_of_metarange[row["meta_range_id"]].append(row["range_id"])
        self.commits_of_range: dict[str, list[str]] = defaultdict(list)
        for commit_id, commit in self.commits.items():
            for range_id in self.ranges_of_metarange.get(commit.get("meta_range_id") or "", ()):
                self.commits_of_range[range_id].append(commit_id)

    def _mark_reachable(self, head: str, branch: str) -> None:
        queue = deque([head])
        while queue:
            commit_id = queue.popleft()
            if commit_id in self.branches_of and branch in self.branches_of[commit_id]:
                continue
            self.branches_of[commit_id].add(branch)
            queue.extend((self.commits.get(commit_id) or {}).get("parents") or ())

    def branch_labels(self, commit_ids: Iterable[str]) -> set[str]:
        """Branches reaching any of ``commit_ids``; commits no branch reaches get ``DANGLING``."""
        labels: set[str] = set()
        for commit_id in commit_ids:
            labels |= self.branches_of.get(commit_id) or {DANGLING}
        return labels

    def range_branches(self) -> dict[str, frozenset[str]]:
        """range_id -> the branch labels of the commits listing it (computed once per report)."""
        return {
            range_id: frozenset(self.branch_labels(commit_ids)) for range_id, commit_ids in self.commits_of_range.items()
        }
