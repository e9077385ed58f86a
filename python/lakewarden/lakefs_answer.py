"""lakeFS's own answer, kept with the snapshot, checked before any job marks anything.

When ``extract`` reads a live lakeFS that has GC rules, it asks lakeFS to prepare its GC commits
(``POST /repositories/{repo}/gc/prepare_commits``) and keeps lakeFS's CSV beside the snapshot:
``lakefs_gc_commits.csv`` (``commit_id,expired,metarange_id``: the commits lakeFS's GC keeps) and
``lakefs_gc_commits.json`` (``run_id``, ``prepared_at``, ``gc_rules``).

Why: lakewarden reimplements lakeFS's retention; the only proof that it agrees on a real
repository is lakeFS's answer on that repository. lakewarden may keep *more* than lakeFS (its
walk keeps the union of all retention walks), never less. So a job refuses to mark anything
(exit 1, naming the commits) when a commit lakeFS keeps is missing from the snapshot, has another
metarange there, or (committed GC) is not active in lakewarden's computation.

lakeFS computed its answer at ``prepared_at`` with the repository's rules; a committed GC run
with a later ``--now`` or shorter ``--rules`` can legitimately expire more, and is refused the
same way: re-extract, or run at the extract's clock.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lakewarden.errors import BadInput, LakewardenError
from lakewarden.timestamps import parse_rfc3339

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

COMMITS_FILE = "lakefs_gc_commits.csv"
META_FILE = "lakefs_gc_commits.json"
CSV_HEADER = ["commit_id", "expired", "metarange_id"]
#: How many disagreeing commits an error names (the count says how many there are).
NAMED = 5


class LakeFSDisagrees(LakewardenError):
    """lakewarden would keep less than lakeFS's own GC keeps: nothing is marked (exit 1)."""


@dataclass(frozen=True)
class LakeFSKept:
    """The commits lakeFS's GC keeps, as lakeFS wrote them."""

    path: Path
    run_id: str | None
    prepared_at: str | None
    commits: tuple[tuple[str, str], ...]  # (commit_id, metarange_id)


def read_lakefs_kept(snapshot_dir: Path) -> LakeFSKept | None:
    """lakeFS's kept commits from the snapshot directory; None when extract kept none (a
    snapshot not extracted from lakeFS, or a repository without GC rules)."""
    path = Path(snapshot_dir) / COMMITS_FILE
    if not path.exists():
        return None
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header != CSV_HEADER:
                raise BadInput(f"header must be {','.join(CSV_HEADER)} (lakeFS's), got {header}", source=str(path))
            rows: list[tuple[str, str]] = []
            for number, row in enumerate(reader, start=2):
                if not row:
                    continue
                if len(row) != 3 or not row[0]:
                    raise BadInput(f"line {number}: expected commit_id,expired,metarange_id", source=str(path), field="commit_id")
                if row[1].strip().lower() not in ("true", "false"):
                    raise BadInput(f"line {number}: {row[1]!r} is not true or false", source=str(path), field="expired")
                if row[1].strip().lower() == "false":  # lakeFS writes its active commits as expired=false
                    rows.append((row[0], row[2]))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise BadInput(f"unreadable ({exc})", source=str(path)) from None
    meta_path = Path(snapshot_dir) / META_FILE
    run_id = prepared_at = None
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadInput(f"unreadable ({exc})", source=str(meta_path)) from None
        if not isinstance(meta, dict):
            raise BadInput("must be a JSON object", source=str(meta_path))
        run_id, prepared_at = meta.get("run_id"), meta.get("prepared_at")
        if prepared_at is not None:
            parse_rfc3339(prepared_at, source=str(meta_path), field="prepared_at")
    return LakeFSKept(path=path, run_id=run_id, prepared_at=prepared_at, commits=tuple(rows))


def _frame(spark: "SparkSession", kept: LakeFSKept) -> "DataFrame":
    return spark.createDataFrame(list(kept.commits), "commit_id string, lakefs_metarange_id string")


def _refuse(kept: LakeFSKept, problem: str, rows: list, count: int, advice: str) -> LakeFSDisagrees:
    named = ", ".join(f"{row[0]} ({row[1]})" for row in rows[:NAMED])
    more = f" and {count - NAMED} more" if count > NAMED else ""
    when = f" at {kept.prepared_at}" if kept.prepared_at else ""
    return LakeFSDisagrees(
        f"refusing to mark anything: {count} commit(s) lakeFS's GC keeps{when} ({kept.path.name}) {problem}: "
        f"{named}{more}; {advice}"
    )


def check_snapshot_holds_kept(spark: "SparkSession", kept: LakeFSKept, commits: "DataFrame") -> None:
    """Every commit lakeFS keeps is in the snapshot with the same metarange (``commits`` is the
    snapshot's commits table: ``commit_id``, ``meta_range_id``)."""
    from pyspark.sql import functions as F

    present = commits.select("commit_id", "meta_range_id", F.lit(True).alias("present"))
    joined = _frame(spark, kept).join(present, "commit_id", "left")
    lakefs_mr = F.coalesce(F.col("lakefs_metarange_id"), F.lit(""))
    ours_mr = F.coalesce(F.col("meta_range_id"), F.lit(""))
    missing = F.col("present").isNull()
    bad = joined.where(missing | (ours_mr != lakefs_mr)).select(
        "commit_id",
        F.when(missing, F.lit("not in the snapshot")).otherwise(
            F.concat(F.lit("metarange '"), ours_mr, F.lit("' in the snapshot, '"), lakefs_mr, F.lit("' in lakeFS"))
        ),
    )
    count = bad.count()
    if count:
        raise _refuse(kept, "are missing from the snapshot or differ there", bad.limit(NAMED).collect(), count, "re-extract the repository")


def check_active_covers_kept(spark: "SparkSession", kept: LakeFSKept, gc_committed_commits: "DataFrame") -> None:
    """Every commit lakeFS keeps is active in lakewarden's committed GC (``gc_committed_commits``:
    ``commit_id``, ``is_active``, ``reason``)."""
    from pyspark.sql import functions as F

    joined = _frame(spark, kept).join(gc_committed_commits.select("commit_id", "is_active", "reason"), "commit_id", "left")
    bad = joined.where(F.col("is_active").isNull() | ~F.col("is_active")).select(
        "commit_id", F.coalesce(F.col("reason"), F.lit("not in the snapshot"))
    )
    count = bad.count()
    if count:
        raise _refuse(
            kept,
            "would expire here",
            bad.limit(NAMED).collect(),
            count,
            "run with --now no later than the extract and the repository's GC rules (extract writes gc_rules.json), or re-extract",
        )
