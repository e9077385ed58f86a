"""``figures.json`` against a worked example small enough to count by hand: every count and
byte of every figure the page draws, for committed GC's and lifecycle's marked marts."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from lakewarden.reports.figures import (
    COMMITTED_REASON,
    DANGLING,
    FIGURES,
    NOT_IN_COMMIT,
    UNRECORDED_RULE,
    Group,
    read_figures,
    write_figures,
)
from lakewarden.snapshot import source_ddl

pytestmark = pytest.mark.spark

SCHEMA = "figures_example"
NOW = datetime(2026, 1, 10, tzinfo=timezone.utc)


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


@pytest.fixture(scope="module")
def snapshot(spark) -> str:
    """main: c1 <- c2 (HEAD); feat: c1 <- c3 (HEAD); c0 no branch reaches.
    c1 lists r1; c2 r1, r2; c3 r3; c0 r4. So r1 is on main and feat, r2 on main, r3 on feat,
    r4 dangling. Entries: r1 a1 a2, r2 a3 a2, r3 a4, r4 a5."""
    spark.sql(f"create database if not exists {SCHEMA}")
    tables = {
        "commits": [
            ("c0", [], ago(50), "m0", "x", "lost", 1),
            ("c1", [], ago(30), "m1", "x", "root", 1),
            ("c2", ["c1"], ago(20), "m2", "x", "main", 1),
            ("c3", ["c1"], ago(10), "m3", "x", "feat", 1),
        ],
        "branches": [("main", "c2", False), ("feat", "c3", False)],
        "metaranges": [("m0", "r4"), ("m1", "r1"), ("m2", "r1"), ("m2", "r2"), ("m3", "r3")],
        "ranges": [
            ("r1", "data/x/1", "a1", "RELATIVE", ago(0.5), 100, "e"),
            ("r1", "logs/2", "a2", "RELATIVE", ago(3), 200, "e"),
            ("r2", "data/3", "a3", "RELATIVE", ago(10), 300, "e"),
            ("r2", "logs/2", "a2", "RELATIVE", ago(3), 200, "e"),
            ("r3", "top.txt", "a4", "RELATIVE", ago(40), 400, "e"),
            ("r4", "data/5", "a5", "RELATIVE", ago(400), 500, "e"),
        ],
    }
    for name, rows in tables.items():
        spark.createDataFrame(rows, source_ddl("lakefs", name)).write.mode("overwrite").saveAsTable(f"{SCHEMA}.{name}")
    return SCHEMA


def committed_marked(spark):
    """a2 (main, feat), a4 (feat), a5 (dangling), a9 (no commit, no timestamp)."""
    return spark.createDataFrame(
        [
            ("a2", 200, ago(3), "logs/2"),
            ("a4", 400, ago(40), "top.txt"),
            ("a5", 500, ago(400), "data/5"),
            ("a9", 50, None, "/x/a9"),
        ],
        "address string, size_bytes bigint, last_modified_at timestamp, example_path string",
    )


@pytest.mark.parametrize("set_bits", [63, 0], ids=["branch-sets-as-bits", "branch-sets-as-arrays"])
def test_committed_figures_count_every_object_and_byte(spark, snapshot: str, tmp_path: Path, monkeypatch, set_bits: int) -> None:
    import lakewarden.reports.figures as figures_module

    monkeypatch.setattr(figures_module, "MAX_SET_BITS", set_bits)
    path = write_figures(tmp_path, spark, job="gc-committed", marked=committed_marked(spark), snapshot_schema=snapshot, now=NOW)
    assert path == tmp_path / FIGURES
    figures = read_figures(tmp_path)
    assert figures is not None
    assert figures.total == Group(4, 1150)
    assert figures.by_prefix.groups == {"data/": Group(1, 500), "(root)": Group(1, 400), "logs/": Group(1, 200), "x/": Group(1, 50)}
    assert list(figures.by_prefix.groups) == ["data/", "(root)", "logs/", "x/"]  # largest bytes first
    assert figures.by_reason.groups == {COMMITTED_REASON: Group(4, 1150)}
    assert figures.by_branch.groups == {
        "feat": Group(2, 600), DANGLING: Group(1, 500), "main": Group(1, 200), NOT_IN_COMMIT: Group(1, 50),
    }
    # bins 0-1, 1-7, 7-14, 14-30, 30-60, 60-90, 90-180, 180-365, 365-730, >730 days; a9 has no age
    marked_ages = [(g.objects, g.bytes) for g in figures.ages_marked]
    assert marked_ages == [(0, 0), (1, 200), (0, 0), (0, 0), (1, 400), (0, 0), (0, 0), (0, 0), (1, 500), (0, 0)]
    kept_ages = [(g.objects, g.bytes) for g in figures.ages_kept]  # a1 (half a day), a3 (10 days)
    assert kept_ages == [(1, 100), (0, 0), (1, 300)] + [(0, 0)] * 7
    assert [(e["address"], e["size_bytes"], e["path"], e["reasons"]) for e in figures.largest] == [
        ("a5", 500, "data/5", [COMMITTED_REASON]),
        ("a4", 400, "top.txt", [COMMITTED_REASON]),
        ("a2", 200, "logs/2", [COMMITTED_REASON]),
        ("a9", 50, "/x/a9", [COMMITTED_REASON]),
    ]
    assert len(json.dumps(json.loads(path.read_text()))) < 5000  # a few hundred numbers, no addresses list


def test_nothing_marked_draws_every_object_as_kept_and_traces_no_branch(spark, snapshot: str, tmp_path: Path, monkeypatch) -> None:
    """A run that marks nothing (a no-op) skips the commit graph: the figures are the kept ages
    of every object and empty marked listings, as the full computation gives them."""
    import lakewarden.runtime.dbt_python as dbt_python

    def no_graph(*_args, **_kwargs):
        raise AssertionError("the commit graph was loaded for an empty mark")

    monkeypatch.setattr(dbt_python, "load_graph", no_graph)
    empty = committed_marked(spark).limit(0)
    write_figures(tmp_path, spark, job="gc-committed", marked=empty, snapshot_schema=snapshot, now=NOW)
    figures = read_figures(tmp_path)
    assert figures is not None
    assert figures.total == Group(0, 0)
    assert figures.by_branch.groups == {} and figures.by_prefix.groups == {} and figures.largest == []
    # every address once, by its oldest entry: a1 (0.5 d), a2 (3 d), a3 (10 d), a4 (40 d), a5 (400 d)
    kept_ages = [(g.objects, g.bytes) for g in figures.ages_kept]
    assert kept_ages == [(1, 100), (1, 200), (1, 300), (0, 0), (1, 400), (0, 0), (0, 0), (0, 0), (1, 500), (0, 0)]


def test_uncommitted_objects_trace_no_commit_and_their_kept_ages_are_the_runs_own(
    spark, snapshot: str, tmp_path: Path, monkeypatch
) -> None:
    """Uncommitted GC marks objects no range lists: the page shows no branch and neither loads
    the commit graph nor reads the snapshot's entries; its kept ages are the objects the run
    considered and kept (given by the job), with the job's note."""
    import lakewarden.runtime.dbt_python as dbt_python

    def no_graph(*_args, **_kwargs):
        raise AssertionError("the commit graph was loaded for uncommitted objects")

    monkeypatch.setattr(dbt_python, "load_graph", no_graph)
    marked = spark.createDataFrame(
        [("u1", 70, NOW - timedelta(days=2), "storage_inventory")],
        "address string, size_bytes long, last_modified_at timestamp, candidate_source string",
    )
    kept = spark.createDataFrame(
        [(NOW - timedelta(hours=2), 5), (NOW - timedelta(days=400), 9)], "earliest_modified_at timestamp, size_bytes long"
    )
    write_figures(
        tmp_path, spark, job="gc-uncommitted", marked=marked, snapshot_schema="no_such_schema", now=NOW, kept=kept,
        kept_note="kept: the run's own", on_commits=False,
    )
    figures = read_figures(tmp_path)
    assert figures is not None
    assert figures.total == Group(1, 70)
    assert figures.by_branch.groups == {NOT_IN_COMMIT: Group(1, 70)}
    assert figures.kept_note == "kept: the run's own"
    assert [(g.objects, g.bytes) for g in figures.ages_kept] == [(1, 5)] + [(0, 0)] * 7 + [(1, 9), (0, 0)]


def test_kept_in_ranges_takes_the_ids_a_caller_gathered_and_asks_for_none(spark, snapshot: str, monkeypatch) -> None:
    """The kept objects of some ranges (lifecycle's read ranges): given the ids its read decision
    gathered, no query asks for them again, and the rows are those of the ids asked for."""
    import lakewarden.runtime.compiled_models as compiled_models
    from lakewarden.reports.figures import kept_in_ranges

    marked = spark.createDataFrame([("a2",)], "address string")
    ranges = spark.createDataFrame([("r1",), ("r2",)], "range_id string")

    from lakewarden.timestamps import from_spark

    def rows(frame) -> list[tuple]:
        return sorted((from_spark(row["earliest_modified_at"]), row["size_bytes"]) for row in frame.collect())

    asked = rows(kept_in_ranges(spark, snapshot, ranges, marked))
    assert asked == sorted([(ago(0.5), 100), (ago(10), 300)])  # a1 and a3: a2 is marked

    def refused(*_args, **_kwargs):
        raise AssertionError("the ids were asked for again")

    monkeypatch.setattr(compiled_models, "collect_range_ids", refused)
    assert rows(kept_in_ranges(spark, snapshot, ranges, marked, gathered=["r1", "r2"])) == asked
    assert rows(kept_in_ranges(spark, snapshot, ranges, marked, gathered=[])) == []  # none read: no entry


def test_lifecycle_figures_count_each_rule_and_fold_small_groups(spark, snapshot: str, tmp_path: Path, monkeypatch) -> None:
    import lakewarden.reports.figures as figures_module

    marked = spark.createDataFrame(
        [
            ("a2", 200, ago(3), ["logs/2", "logs/2b"], ["logs", "tmp"]),
            ("a4", 400, ago(40), ["top.txt"], []),
            ("a5", 500, ago(400), ["data/5"], ["logs"]),
        ],
        "address string, size_bytes bigint, last_modified_at timestamp, paths array<string>, matched_rules array<string>",
    )
    monkeypatch.setattr(figures_module, "TOP_GROUPS", 2)
    write_figures(tmp_path, spark, job="lifecycle", marked=marked, snapshot_schema=snapshot, now=NOW)
    figures = read_figures(tmp_path)
    assert figures is not None and figures.total == Group(3, 1100)
    # an object under two rules counts under each; two largest kept, the third folded into other
    assert figures.by_reason.groups == {"rule logs": Group(2, 700), UNRECORDED_RULE: Group(1, 400)}
    assert (figures.by_reason.other_groups, figures.by_reason.other) == (1, Group(1, 200))
    assert figures.by_prefix.groups == {"data/": Group(1, 500), "(root)": Group(1, 400)}
    assert (figures.by_prefix.other_groups, figures.by_prefix.other) == (1, Group(1, 200))
    assert figures.largest[2]["reasons"] == ["rule logs", "rule tmp"] and figures.largest[2]["path"] == "logs/2"


def test_figures_never_fail_the_run(spark, tmp_path: Path, caplog) -> None:
    marked = spark.createDataFrame([("a1", 1, None, "p")], "address string, size_bytes bigint, last_modified_at timestamp, example_path string")
    assert write_figures(tmp_path, spark, job="gc-committed", marked=marked, snapshot_schema="no_such_schema", now=NOW) is None
    assert "report figures not computed" in caplog.text and not (tmp_path / FIGURES).exists()
    assert read_figures(tmp_path) is None


def test_figures_drawn_beside_a_block_are_saved_only_when_it_succeeds(tmp_path: Path) -> None:
    """The figures are computed beside a job's safety tests and writes: a block that raises
    (a safety test found a protected address) leaves no figures.json; one that ends saves them,
    after the block (the run's outputs are written first)."""
    import threading

    from lakewarden.reports.figures import drawn_beside, save_figures

    passed, failed = tmp_path / "passed", tmp_path / "failed"
    passed.mkdir()
    failed.mkdir()
    drawing = threading.Event()
    seen_in_block: list[bool] = []

    def draw() -> dict[str, object]:
        drawing.set()
        return {"format": "x", "marked": {"objects": 1, "bytes": 2}}

    with drawn_beside(draw, lambda document: save_figures(passed, document)):
        assert drawing.wait(10)  # computed while the block runs
        seen_in_block.append((passed / FIGURES).exists())
    assert seen_in_block == [False] and json.loads((passed / FIGURES).read_text())["marked"] == {"objects": 1, "bytes": 2}
    with pytest.raises(RuntimeError, match="a safety test failed"):
        with drawn_beside(draw, lambda document: save_figures(failed, document)):
            raise RuntimeError("a safety test failed")
    assert not (failed / FIGURES).exists()


def test_more_branch_sets_than_bits_in_a_long(spark, tmp_path: Path) -> None:
    """70 branches, each on its own commit over a shared root: 71 distinct branch sets, more than
    a long's 63 bits, so the arrays path counts them (a history of 100,000 commits and 2,000 open
    branches has thousands; the bit of a 64th set once overflowed and the page lost its figures)."""
    schema = "figures_many_sets"
    spark.sql(f"create database if not exists {schema}")
    branches = [f"b{n:02d}" for n in range(70)]
    tables = {
        "commits": [("root", [], ago(30), "m-root", "x", "root", 1)]
        + [(f"c-{b}", ["root"], ago(20), f"m-{b}", "x", b, 1) for b in branches],
        "branches": [(b, f"c-{b}", False) for b in branches],
        "metaranges": [("m-root", "r-root")] + [(f"m-{b}", f"r-{b}") for b in branches],
        "ranges": [("r-root", "shared/0", "a-root", "RELATIVE", ago(30), 10, "e")]
        + [(f"r-{b}", f"own/{b}", f"a-{b}", "RELATIVE", ago(20), 1, "e") for b in branches],
    }
    for name, rows in tables.items():
        spark.createDataFrame(rows, source_ddl("lakefs", name)).write.mode("overwrite").saveAsTable(f"{schema}.{name}")
    marked = spark.createDataFrame(
        [("a-b07", 1, ago(20), "own/b07"), ("a-b42", 1, ago(20), "own/b42")],
        "address string, size_bytes bigint, last_modified_at timestamp, example_path string",
    )
    assert write_figures(tmp_path, spark, job="gc-committed", marked=marked, snapshot_schema=schema, now=NOW) is not None
    figures = read_figures(tmp_path)
    assert figures is not None and figures.total == Group(2, 2)
    assert figures.by_branch.groups == {"b07": Group(1, 1), "b42": Group(1, 1)}
    kept = [(g.objects, g.bytes) for g in figures.ages_kept]  # a-root (30 days) and 68 branches' own (20 days)
    assert kept == [(0, 0), (0, 0), (0, 0), (68, 68), (1, 10)] + [(0, 0)] * 5


def stg_frames(spark, schema: str):
    """The snapshot's commits and branches as stg_lakefs__commits and stg_lakefs__branches shape them."""
    commits = spark.sql(
        f"select commit_id, coalesce(parents, array()) as parent_commit_ids, creation_date as created_at, version from {schema}.commits"
    )
    branches = spark.sql(f"select branch_id, commit_id as head_commit_id from {schema}.branches")
    return commits, branches


def test_a_runs_graph_models_share_one_reachability_and_other_frames_get_their_own(spark, snapshot: str, monkeypatch) -> None:
    """The run's relations are walked once: a second model given the same relations (frames of
    its own) is served that answer; a frame that is not a bare relation (a filter) is walked on
    its own, as is every frame outside a runner's block (dbt's own materializations)."""
    import lakewarden.runtime.dbt_python as dbt_python

    loads: list[int] = []
    load_graph = dbt_python.load_graph
    monkeypatch.setattr(dbt_python, "load_graph", lambda commits: (loads.append(1), load_graph(commits))[1])
    shared = dbt_python.SharedReachability()
    assert shared.computed() is None
    given: dict[int, str] = {}

    def refs():  # what a model's dbt.ref gives: one frame per relation, named
        commits, branches = stg_frames(spark, snapshot)
        given.update({id(commits): "stg_lakefs__commits", id(branches): "stg_lakefs__branches"})
        return commits, branches

    with dbt_python.reachability_shared_by(shared, lambda frame: given.get(id(frame))):
        first = dbt_python._reachability(*refs())
        again = dbt_python._reachability(*refs())  # the second graph model's own frames
        assert again is first and len(loads) == 1 and shared.computed() is first
        commits, branches = refs()
        main_only = dbt_python._reachability(commits, branches.where("branch_id = 'main'"))
    assert len(loads) == 2 and main_only is not first
    assert first.branches_reaching("c1") == ("feat", "main") and main_only.branches_reaching("c1") == ("main",)
    dbt_python._reachability(*refs())
    assert len(loads) == 3
    # a relation built again (another build of the runner) is walked again
    shared.forget("stg_lakefs__metaranges")
    assert shared.computed() is first
    shared.forget("stg_lakefs__branches")
    assert shared.computed() is None
    with dbt_python.reachability_shared_by(shared, lambda frame: given.get(id(frame))):
        assert dbt_python._reachability(*refs()) is not first and len(loads) == 4


def test_figures_take_the_runs_reachability_and_load_no_commit_graph(spark, snapshot: str, tmp_path: Path, monkeypatch) -> None:
    """Given the reachability the run's graph models computed, the figures trace branches with it
    (the same answer as their own walk) and never load the commit graph again."""
    import lakewarden.runtime.dbt_python as dbt_python

    reach = dbt_python.compute_reachability(*stg_frames(spark, snapshot))

    def no_graph(commits):
        raise AssertionError("the figures loaded the commit graph although the run's reachability was given")

    monkeypatch.setattr(dbt_python, "load_graph", no_graph)
    write_figures(tmp_path, spark, job="gc-committed", marked=committed_marked(spark), snapshot_schema=snapshot, now=NOW, reachability=reach)
    figures = read_figures(tmp_path)
    assert figures is not None and figures.total == Group(4, 1150)
    assert figures.by_branch.groups == {
        "feat": Group(2, 600), DANGLING: Group(1, 500), "main": Group(1, 200), NOT_IN_COMMIT: Group(1, 50),
    }


def test_figures_in_one_query_equal_the_two_query_answer(spark, snapshot: str, tmp_path: Path) -> None:
    """With the run's reachability given and each marked object's ranges in the mart (as
    lifecycle's has them), the marked rows' listings and the snapshot's figures come back in one
    query; the document is the one the two-query path (the graph loaded, the entries read for
    the holding ranges) gives for the same marked objects."""
    from pyspark.sql import functions as F

    import lakewarden.runtime.dbt_python as dbt_python

    marked = committed_marked(spark)
    holding = spark.table(f"{snapshot}.ranges").groupBy("address").agg(F.array_sort(F.collect_set("range_id")).alias("range_ids"))
    with_ranges = marked.join(holding, "address", "left")
    reach = dbt_python.compute_reachability(*stg_frames(spark, snapshot))
    one, two = tmp_path / "one", tmp_path / "two"
    write_figures(one, spark, job="gc-committed", marked=with_ranges, snapshot_schema=snapshot, now=NOW, reachability=reach)
    write_figures(two, spark, job="gc-committed", marked=marked, snapshot_schema=snapshot, now=NOW)
    documents = [json.loads((directory / "figures.json").read_text()) for directory in (one, two)]
    for document in documents:
        document.pop("seconds")
    assert documents[0] == documents[1]
    assert documents[0]["marked"] == {"objects": 4, "bytes": 1150}


def test_a_counted_csv_of_few_rows_is_the_file_a_range_sort_writes(spark, tmp_path: Path) -> None:
    """write_single_csv(rows=...) sorts and writes a few counted rows in one task instead of a
    range sort (which samples the rows in a job of its own first): the same bytes, from a frame
    spread over several partitions, with ties on the first key, nulls and quoting."""
    from lakewarden.reports.directory import ONE_TASK_CSV_ROWS, write_single_csv

    rows = [(f"a{i % 7}", None if i % 5 == 0 else i, 'x,"y"' if i % 3 == 0 else "z") for i in range(200)]
    frame = spark.createDataFrame(rows, "address string, n long, note string").repartition(6)
    ranged, one_task = tmp_path / "ranged.csv", tmp_path / "one_task.csv"
    write_single_csv(frame, ranged, sort_by=["address", "n", "note"])
    write_single_csv(frame, one_task, sort_by=["address", "n", "note"], rows=len(rows))
    assert len(rows) <= ONE_TASK_CSV_ROWS
    assert one_task.read_bytes() == ranged.read_bytes()
    lines = ranged.read_text().splitlines()
    assert lines[0] == "address,n,note" and len(lines) == 1 + len(rows)
    assert lines[1].startswith("a0,,")  # nulls first within a0, as Spark's ascending sort puts them
