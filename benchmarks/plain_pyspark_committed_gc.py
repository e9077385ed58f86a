"""Reference for the committed-GC benchmark: the same address work in a plain PySpark process.

    python benchmarks/plain_pyspark_committed_gc.py --snapshot DIR --now 2026-01-02T00:00:00Z \
        [--default-days 7] [--branch-days main=30] [--no-retain-tags]

Issue 13's baseline, written apart from lakewarden's code (it imports nothing from it) so that
it checks as well as times: one Python process starts Spark (``local[2]``), reads the snapshot's
Parquet tables where they are (docs/contract.md §2; ``NAME.parquet`` file or folder, ``NAME.jsonl``
also accepted), computes the active commits in Python from ``commits`` and ``branches`` by
lakeFS's rules, then ONE Spark SQL query: ranges grouped by whether any active commit reaches
them, the addresses that only expired ranges reference, minus those of live ranges, minus staged
addresses, minus anything outside the storage namespace, under ``_lakefs/`` or the root
``dummy``; counted. Prints the count and the wall time (process start to end).

Active commits (lakeFS's GetGarbageCollectionCommits, taking the union over walk orders, which
is what lakewarden keeps: lakeFS's early stop can only keep fewer):

* starting points: every branch HEAD, with its branch's retention (else the default); every
  dangling commit (nobody's main parent and no branch's HEAD) with the default retention;
* a HEAD is active; a dangling commit is active when created strictly after its threshold;
* walking a commit's main ancestry (``parents[0]``, or the LAST element for version-0 commits),
  a parent is active when its child was created strictly after the walk's threshold;
* tagged commits are active too (lakewarden keeps tags by default; ``--no-retain-tags``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import NamedTuple

STARTED = time.perf_counter()


def _table_path(snapshot: Path, name: str) -> tuple[str, str]:
    for suffix, kind in ((".parquet", "parquet"), (".jsonl", "json")):
        path = snapshot / f"{name}{suffix}"
        if path.exists():
            return str(path), kind
    raise SystemExit(f"{snapshot}: no table {name} (.parquet or .jsonl)")


def _read(spark, snapshot: Path, name: str, ddl: str):
    path, kind = _table_path(snapshot, name)
    if kind == "parquet":
        return spark.read.parquet(path)
    return spark.read.schema(ddl).json(path)  # JSONL: RFC 3339 timestamps parse as timestamps


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)  # Spark returns session-local naive


def active_commits(
    commits: dict[str, tuple[datetime, list[str], int]],
    branches: list[tuple[str, str]],
    tags: list[str],
    now: datetime,
    default_days: int,
    branch_days: dict[str, int],
) -> set[str]:
    """The active commit ids (see the module docstring for the rules)."""

    def main_parent(commit_id: str) -> str | None:
        _, parents, version = commits[commit_id]
        if not parents:
            return None
        return parents[-1] if version == 0 else parents[0]

    main_parents = {p for c in commits if (p := main_parent(c)) is not None}
    heads = {commit_id for _, commit_id in branches}
    active: set[str] = set()
    # the most lenient (earliest) threshold each commit's ancestry was already walked with:
    # a walk with a later threshold from there on can only mark a subset
    walked: dict[str, datetime] = {}

    def walk(child: str, child_created: datetime, threshold: datetime) -> None:
        while True:
            parent = main_parent(child)
            if parent is None:
                return
            if child_created > threshold:
                active.add(parent)
            if parent in walked and walked[parent] <= threshold:
                return
            walked[parent] = threshold
            child, child_created = parent, commits[parent][0]

    default_threshold = now - timedelta(days=default_days)
    for branch_id, head in branches:
        threshold = now - timedelta(days=branch_days.get(branch_id, default_days))
        active.add(head)
        if head in walked and walked[head] <= threshold:
            continue
        walked[head] = threshold
        walk(head, commits[head][0], threshold)
    for commit_id, (created, _, _) in commits.items():
        if commit_id in main_parents or commit_id in heads:
            continue
        # a hypothetical HEAD, as old as the dangling commit, is its child
        if created > default_threshold:
            active.add(commit_id)
        if commit_id in walked and walked[commit_id] <= default_threshold:
            continue
        walked[commit_id] = default_threshold
        walk(commit_id, created, default_threshold)
    active.update(t for t in tags if t in commits)
    return active


COUNT_SQL = """
with

metarange_ranges as (
    select distinct meta_range_id, range_id from metaranges where range_id is not null
),

commit_ranges as (
    select c.commit_id, m.range_id
    from commits c
    join metarange_ranges m on m.meta_range_id = c.meta_range_id
),

range_groups as (
    select
        cr.range_id,
        max(case when a.commit_id is not null then 1 else 0 end) as reached_by_active
    from commit_ranges cr
    left join active a on a.commit_id = cr.commit_id
    group by cr.range_id
),

physical as (
    select
        r.range_id,
        case when r.address_type = 'FULL' then r.address else '{namespace}/' || r.address end as address
    from ranges r
),

expired_only as (
    select distinct p.address
    from physical p
    join range_groups g on g.range_id = p.range_id and g.reached_by_active = 0
),

live as (
    select distinct p.address
    from physical p
    join range_groups g on g.range_id = p.range_id and g.reached_by_active = 1
),

staged_addresses as (
    select distinct case when address_type = 'FULL' then address else '{namespace}/' || address end as address
    from staged
)

select count(*) as marked
from expired_only e
left anti join live l on l.address = e.address
left anti join staged_addresses s on s.address = e.address
where startswith(e.address, '{namespace}/')
  and not startswith(e.address, '{namespace}/_lakefs/')
  and e.address <> '{namespace}/dummy'
"""

DDL = {
    "commits": "commit_id string, parents array<string>, creation_date timestamp, meta_range_id string, "
    "committer string, message string, version int",
    "branches": "branch_id string, commit_id string, hidden boolean",
    "tags": "tag_id string, commit_id string",
    "metaranges": "meta_range_id string, range_id string",
    "ranges": "range_id string, key string, address string, address_type string, last_modified timestamp, "
    "size bigint, etag string",
    "staged": "branch_id string, key string, address string, address_type string, last_modified timestamp",
}


def _parse_now(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise SystemExit(f"--now: {text!r} has no UTC offset")
    return moment


def _parse_branch_days(items: list[str]) -> dict[str, int]:
    out = {}
    for item in items:
        name, _, days = item.partition("=")
        out[name] = int(days)
    return out


class Counted(NamedTuple):
    active: int  # active commits
    commits: int
    marked: int  # addresses marked
    walk_seconds: float  # the tables read and the active commits walked
    query_seconds: float


def count_marked(
    spark, snapshot: Path, now: datetime, default_days: int, branch_days: dict[str, int], retain_tags: bool = True
) -> Counted:
    """The baseline's work on ``spark``: the snapshot's tables read where they are, the active
    commits walked in Python, then the one query. Its tables are temporary views of ``spark``:
    where other code shares the JVM (the test suite's session), give it a session of its own
    (``SparkSession.newSession()``)."""
    started = time.perf_counter()
    namespace = json.loads((snapshot / "repository.json").read_text())["storage_namespace"].rstrip("/")
    for name, ddl in DDL.items():
        frame = _read(spark, snapshot, name, ddl)
        if name == "branches" and "hidden" not in frame.columns:
            frame = frame.selectExpr("*", "false as hidden")
        frame.createOrReplaceTempView(name)

    commits = {
        row.commit_id: (_utc(row.creation_date), list(row.parents or []), int(row.version or 0))
        for row in spark.table("commits").select("commit_id", "creation_date", "parents", "version").collect()
    }
    branches = [(row.branch_id, row.commit_id) for row in spark.table("branches").collect()]
    tags = [row.commit_id for row in spark.table("tags").collect()] if retain_tags else []
    active = active_commits(commits, branches, tags, now, default_days, branch_days)
    spark.createDataFrame([(c,) for c in sorted(active)], "commit_id string").createOrReplaceTempView("active")
    walked = time.perf_counter()
    marked = spark.sql(COUNT_SQL.format(namespace=namespace.replace("'", "''"))).collect()[0]["marked"]
    return Counted(len(active), len(commits), int(marked), walked - started, time.perf_counter() - walked)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshot", type=Path, required=True, help="repository snapshot directory (docs/contract.md section 2)")
    parser.add_argument("--now", required=True, help="the clock, RFC 3339 with offset")
    parser.add_argument("--default-days", type=int, default=7, help="default retention in days (default 7)")
    parser.add_argument("--branch-days", action="append", default=["main=30"], metavar="BRANCH=DAYS",
                        help="a branch's retention (default main=30; repeatable)")
    parser.add_argument("--no-retain-tags", action="store_true", help="tagged commits are not kept active")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    now = _parse_now(args.now)
    snapshot = args.snapshot.resolve()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(args.master)
        .appName("plain-pyspark-committed-gc")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark_started = time.perf_counter()
    counted = count_marked(
        spark, snapshot, now, args.default_days, _parse_branch_days(args.branch_days), retain_tags=not args.no_retain_tags
    )
    spark.stop()
    print(f"active commits {counted.active} of {counted.commits}")
    print(f"marked {counted.marked}")
    print(f"seconds: spark start {spark_started - STARTED:.1f}, active commits {counted.walk_seconds:.1f}, "
          f"query {counted.query_seconds:.1f}, total {time.perf_counter() - STARTED:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
