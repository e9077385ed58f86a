"""The runner executes dbt's compiled models itself (lakewarden.runtime.compiled_models): it must do
what ``dbt build`` does for every model of the project, and a cached compilation with the run's
values put in must equal dbt's compilation of those values."""

from __future__ import annotations

import pytest

from lakewarden.errors import BadInput
from lakewarden.runtime.compiled_models import (
    RUN_VALUE_STANDINS,
    SUPPORTED_MATERIALIZATIONS,
    UNSUPPORTED_CONFIG,
    CompiledNode,
    ModelFailed,
    ModelRunner,
    _compiled,
    _in_dependency_order,
    chain_heights,
    collect_lists,
    compile_selection,
    with_range_lists,
)
from lakewarden.runtime.project import compile_nodes, dbt_location, parsed_manifest


def test_every_project_model_is_one_the_runner_executes_as_dbt_does(test_state_dir):
    manifest = parsed_manifest(dbt_location(test_state_dir))
    models = [node for node in manifest.nodes.values() if node.resource_type == "model"]
    assert len(models) > 30
    for node in models:
        config = node.config.to_dict()
        assert config["materialized"] in SUPPORTED_MATERIALIZATIONS, node.name
        for key in UNSUPPORTED_CONFIG:
            assert not config.get(key), f"{node.name}: {key}"
        if str(node.language) in ("python", "ModelLanguage.python"):
            assert config["materialized"] == "table", node.name


def test_only_staging_reads_a_source_and_each_source_has_one_staging_view(test_state_dir):
    """The project's layering (docs/architecture.md): a source is read by its one staging view;
    intermediate steps and marts read staging, other steps and marts, never a source directly."""
    manifest = parsed_manifest(dbt_location(test_state_dir))
    models = [node for node in manifest.nodes.values() if node.resource_type == "model"]
    readers: dict[str, list[str]] = {}
    for node in models:
        sources = [parent for parent in node.depends_on.nodes if parent.startswith("source.")]
        for source in sources:
            readers.setdefault(source, []).append(node.name)
        if sources:
            assert node.name.startswith("stg_"), f"{node.name} reads {sources}: only staging reads a source"
            assert node.config.to_dict()["materialized"] == "view", node.name
    assert readers, "the project reads its sources through staging"
    assert {source: names for source, names in readers.items() if len(names) > 1} == {}


JOB_SELECTIONS = [
    ("+gc_committed_marked_addresses +gc_committed_commits", {"retain_tags": True}),
    ("+gc_committed_marked_addresses +gc_committed_commits", {"retain_tags": False}),
    ("+gc_uncommitted_run +gc_uncommitted_read_ranges", {"gc_uncommitted_mode": "clean", "gc_uncommitted_min_age_seconds": 3600}),
    (
        "+gc_uncommitted_run +gc_uncommitted_read_ranges",
        {
            "gc_uncommitted_mode": "optimized",
            "gc_uncommitted_min_age_seconds": 86400,
            "gc_uncommitted_storage_cutoff": "2026-03-01T00:00:00.000000Z",
            "gc_uncommitted_previous_last_commit_at": "2026-02-28T12:00:00.000000Z",
        },
    ),
    (
        "+lifecycle_marked_addresses +lifecycle_rule_stats +lifecycle_run_figures +new_range_windows",
        {"lifecycle_potential_commits": "complete", "lifecycle_full": False},
    ),
]


@pytest.mark.parametrize("selection,extra", JOB_SELECTIONS)
def test_cached_compilation_with_run_values_equals_dbts_compilation(spark, test_state_dir, selection, extra):
    # ``spark``: dbt's compile opens its session connection, which would otherwise start a
    # session of its own from the profile (no PYSPARK_PYTHON, Derby), as the runner never lets
    # it: every job starts its session before dbt runs
    variables = {
        "now": "2026-03-04T05:06:07.000000Z",
        "run_id": "gc-committed-20260304T050607Z-abc123",
        "snapshot_schema": "lakewarden_snapshot",
        "lakewarden_runner": True,
        **extra,
    }
    through_cache = {n.unique_id: n for n in compile_selection(selection, state=test_state_dir, variables=variables)}
    direct = compile_nodes(
        ["--select", selection, "--indirect-selection", "cautious", "--exclude", "test_type:generic", "test_type:unit"],
        state=test_state_dir,
        variables=variables,
    )
    assert {node.unique_id for node in direct} == set(through_cache)
    for node in direct:
        assert through_cache[node.unique_id].code == node.compiled_code, node.name
        for standin in RUN_VALUE_STANDINS.values():
            assert standin not in through_cache[node.unique_id].code
    # a second call is served from the cache, with another run's values put in
    again = compile_selection(selection, state=test_state_dir, variables={**variables, "run_id": "other-run"})
    assert any("other-run" in node.code for node in again) == any(variables["run_id"] in (n.compiled_code or "") for n in direct)


def _node(name, code, *, kind="model", materialized="view", language="sql", depends_on=(), **config):
    return CompiledNode(
        unique_id=f"{kind}.t.{name}",
        name=name,
        resource_type=kind,
        language=language,
        materialized=materialized,
        relation=f"runner_test.{name}" if kind == "model" else None,
        code=code,
        depends_on=tuple(depends_on),
        config={"materialized": materialized, **config},
    )


PYTHON_MODEL = '''
def model(dbt, session):
    frame = dbt.ref("numbers")
    return frame.selectExpr("n * 10 as n")


class dbtObj:
    def __init__(self, load_df_function):
        self.ref = lambda name: load_df_function("runner_test." + name)
'''


@pytest.mark.parametrize("concurrency", [1, 2])
def test_views_tables_python_models_and_tests_run_in_dependency_order(spark, concurrency):
    runner = ModelRunner(spark, concurrency=concurrency)
    numbers = _node("numbers", "select id as n from range(5)", materialized="table", file_format="parquet")
    evens = _node("evens", "select n from runner_test.numbers where n % 2 = 0", depends_on=[numbers.unique_id])
    tens = _node("tens", PYTHON_MODEL, materialized="table", language="python", depends_on=[numbers.unique_id])
    passing = _node("no_odd_evens", "select * from runner_test.evens where n % 2 = 1", kind="test", depends_on=[evens.unique_id])
    ordered = _in_dependency_order([passing, tens, evens, numbers])
    assert [n.name for n in ordered].index("numbers") < [n.name for n in ordered].index("evens")
    result = runner.build(ordered)
    assert set(result.executed) == {"numbers", "evens", "tens", "no_odd_evens"}
    assert sorted(r.n for r in spark.table("runner_test.evens").collect()) == [0, 2, 4]
    assert sorted(r.n for r in spark.table("runner_test.tens").collect()) == [0, 10, 20, 30, 40]
    assert spark.catalog.getTable("runner_test.numbers").tableType != "VIEW"
    assert spark.catalog.getTable("runner_test.evens").tableType == "VIEW"

    # built again with the same code: nothing executed; with new code: that node again
    again = runner.build(ordered)
    assert again.executed == () and again.statements == 0
    changed = _node("evens", "select n from runner_test.numbers where n % 2 = 0 and n > 0", depends_on=[numbers.unique_id])
    third = runner.build([numbers, changed])
    assert third.executed == ("evens",)
    assert sorted(r.n for r in spark.table("runner_test.evens").collect()) == [2, 4]

    # a view becoming a table (and back) replaces the relation of the other kind
    as_table = _node("evens", "select n from runner_test.numbers where n = 4", materialized="table")
    runner.build([as_table])
    assert spark.catalog.getTable("runner_test.evens").tableType != "VIEW"
    runner.build([_node("evens", "select 1 as n")])
    assert spark.catalog.getTable("runner_test.evens").tableType == "VIEW"


HELD_PYTHON_MODEL = PYTHON_MODEL.replace('dbt.ref("numbers")', 'dbt.ref("int_numbers")')


@pytest.mark.parametrize("concurrency", [1, 2])
def test_the_small_form_holds_intermediates_in_memory_with_the_same_rows(spark, concurrency):
    """hold_intermediates: an int_ table is a local checkpoint under a temporary view the later
    nodes, Python models and tests read; a mart stays a table; an int_ table a view reads stays
    a table (a catalog view cannot read a temporary one), and one held by an earlier build
    becomes a table when a view that reads it comes."""
    for name in ("int_numbers", "int_evens", "int_for_view", "evens_mart", "tens_mart", "a_view", "late_view"):
        if spark.catalog.tableExists(f"runner_test.{name}"):  # the other parameter's
            kind = spark.catalog.getTable(f"runner_test.{name}").tableType
            spark.sql(f"drop {'view' if kind == 'VIEW' else 'table'} runner_test.{name}")
    runner = ModelRunner(spark, concurrency=concurrency, hold_intermediates=True)
    numbers = _node("int_numbers", "select id as n from range(6)", materialized="table")
    evens = _node("int_evens", "select n from runner_test.int_numbers where n % 2 = 0", materialized="table", depends_on=[numbers.unique_id])
    for_view = _node("int_for_view", "select n + 100 as n from runner_test.int_numbers", materialized="table", depends_on=[numbers.unique_id])
    a_view = _node("a_view", "select n from runner_test.int_for_view", depends_on=[for_view.unique_id])
    mart = _node("evens_mart", "select e.n from runner_test.int_evens e join runner_test.int_numbers n on e.n = n.n", materialized="table",
                 depends_on=[evens.unique_id, numbers.unique_id])
    tens = _node("tens_mart", HELD_PYTHON_MODEL, materialized="table", language="python", depends_on=[numbers.unique_id])
    check = _node("no_odd_in_mart", "select * from runner_test.int_evens where n % 2 = 1", kind="test", depends_on=[evens.unique_id])
    result = runner.build([numbers, evens, for_view, a_view, mart, tens, check])
    assert set(result.executed) == {"int_numbers", "int_evens", "int_for_view", "a_view", "evens_mart", "tens_mart", "no_odd_in_mart"}

    assert runner.relation("runner_test.int_numbers") == "runner_test__int_numbers"
    assert not spark.catalog.tableExists("runner_test.int_numbers"), "a held intermediate writes no table"
    assert sorted(r.n for r in spark.table(runner.relation("runner_test.int_evens")).collect()) == [0, 2, 4]
    assert sorted(r.n for r in spark.table("runner_test.evens_mart").collect()) == [0, 2, 4]
    assert spark.catalog.getTable("runner_test.evens_mart").tableType != "VIEW"
    assert sorted(r.n for r in spark.table("runner_test.tens_mart").collect()) == [0, 10, 20, 30, 40, 50]
    assert runner.relation("runner_test.int_for_view") == "runner_test.int_for_view", "a view reads it: a table"
    assert sorted(r.n for r in spark.table("runner_test.a_view").collect()) == [100, 101, 102, 103, 104, 105]

    late = _node("late_view", "select count(*) as n from runner_test.int_evens", depends_on=[evens.unique_id])
    runner.build([late])
    assert runner.relation("runner_test.int_evens") == "runner_test.int_evens"
    assert spark.table("runner_test.late_view").first().n == 3


def test_holding_holds_the_int_tables_built_in_the_block_and_they_stay_held(spark):
    """ModelRunner.holding: a large snapshot's runner holds the int_ tables of a stretch that
    reads few rows (lakewarden.jobs.lifecycle); before and after the block it writes them."""
    for name in ("int_h_first", "int_h_held", "int_h_after"):
        if spark.catalog.tableExists(f"runner_test.{name}"):
            spark.sql(f"drop table runner_test.{name}")
    runner = ModelRunner(spark)
    first = _node("int_h_first", "select id as n from range(4)", materialized="table")
    held = _node("int_h_held", "select n * 2 as n from runner_test.int_h_first", materialized="table", depends_on=[first.unique_id])
    after = _node("int_h_after", "select n + 1 as n from runner_test.int_h_held", materialized="table", depends_on=[held.unique_id])
    runner.build([first])
    with runner.holding(True):
        runner.build([held])
    with runner.holding(False):
        runner.build([after])
    assert spark.catalog.tableExists("runner_test.int_h_first") and runner.hold_intermediates is False
    assert not spark.catalog.tableExists("runner_test.int_h_held"), "held in the block: no table"
    assert runner.relation("runner_test.int_h_held") == "runner_test__int_h_held", "still held after it"
    assert sorted(r.n for r in spark.table("runner_test.int_h_after").collect()) == [1, 3, 5, 7]


def test_a_model_counted_as_it_is_held_gives_its_rows_without_a_query_of_its_own(spark):
    """holding(counting=...): the held model's rows are counted by the job that computes them
    (lifecycle's pass over every entry: the rest's form is taken from that count); the rows
    are kept once counted (the held view's plan reads them, not their query); a model held
    without being named is not counted."""
    runner = ModelRunner(spark)
    counted = _node("int_c_counted", "select id as n from range(10) where id % 3 = 0", materialized="table")
    plain = _node("int_c_plain", "select n from runner_test.int_c_counted", materialized="table", depends_on=[counted.unique_id])
    sent: list[int] = []
    runner._count = sent.append  # the statements the runner sends, one each
    with runner.holding(True, counting=("int_c_counted",)):
        runner.build([counted])
    with runner.holding(True):
        runner.build([plain])
    assert runner.held_rows("int_c_counted") == 4 and runner.held_rows("int_c_plain") is None
    assert len(sent) == 2  # one statement each: the count was no query of its own
    view = runner.relation("runner_test.int_c_counted")
    assert sorted(row.n for row in spark.table(view).collect()) == [0, 3, 6, 9]
    assert "ExistingRDD" in spark.table(view)._jdf.queryExecution().executedPlan().toString()
    assert spark.table(view)._jdf.queryExecution().optimizedPlan().rdd().isCheckpointed()  # computed once, kept


@pytest.mark.parametrize("hold", [False, True])
def test_a_view_named_in_as_tables_is_computed_once_as_a_table_with_the_same_rows(spark, hold):
    """as_tables (an optimized uncommitted GC run's candidates): the view's rows are computed
    once and the nodes reading it read them; a build without it keeps the view. In the small
    form an int_ view so named is held in memory like an int_ table, unless a view reads it."""
    for name in ("int_base", "int_shared", "int_by_view", "reads_shared", "reads_by_view"):
        if spark.catalog.tableExists(f"runner_test.{name}"):
            kind = spark.catalog.getTable(f"runner_test.{name}").tableType
            spark.sql(f"drop {'view' if kind == 'VIEW' else 'table'} runner_test.{name}")
    base = _node("int_base", "select id as n from range(6)", materialized="table")
    shared = _node("int_shared", "select n from runner_test.int_base where n % 2 = 0", depends_on=[base.unique_id])
    by_view = _node("int_by_view", "select n + 1 as n from runner_test.int_base", depends_on=[base.unique_id])
    reads_shared = _node("reads_shared", "select sum(n) as n from runner_test.int_shared", materialized="table", depends_on=[shared.unique_id])
    reads_by_view = _node("reads_by_view", "select max(n) as n from runner_test.int_by_view", depends_on=[by_view.unique_id])
    nodes = [base, shared, by_view, reads_shared, reads_by_view]

    runner = ModelRunner(spark, hold_intermediates=hold)
    runner.build(nodes, as_tables=("int_shared", "int_by_view"))
    assert spark.table("runner_test.reads_shared").first().n == 6
    assert spark.table("runner_test.reads_by_view").first().n == 6
    by_view_relation = runner.relation("runner_test.int_by_view")
    assert spark.catalog.getTable(by_view_relation).tableType != "VIEW", "read by a view: a table"
    if hold:
        assert runner.relation("runner_test.int_shared") == "runner_test__int_shared", "held in memory"
    else:
        assert spark.catalog.getTable("runner_test.int_shared").tableType != "VIEW"

    plain = ModelRunner(spark)
    plain.build(nodes)
    assert spark.catalog.getTable("runner_test.int_shared").tableType == "VIEW"
    assert spark.table("runner_test.reads_shared").first().n == 6


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_failing_safety_test_fails_the_build_and_a_warning_one_does_not(spark, concurrency):
    runner = ModelRunner(spark, concurrency=concurrency)
    rows = _node("rows3", "select id from range(3)")
    failing = _node("finds_rows", "select * from runner_test.rows3", kind="test", depends_on=[rows.unique_id])
    with pytest.raises(ModelFailed, match="test finds_rows failed: 3 rows"):
        runner.build([rows, failing])
    warning = _node("finds_rows_warn", "select * from runner_test.rows3", kind="test", severity="warn")
    assert runner.build([rows, warning]).warnings == ("test finds_rows_warn: 3 rows",)
    threshold = _node("finds_many", "select * from runner_test.rows3", kind="test", error_if="> 5", warn_if="> 5")
    assert runner.build([rows, threshold]).warnings == ()


class RecordingRunner(ModelRunner):
    """Records when each node starts and ends (the runner's threads call _execute)."""

    def __init__(self, spark, **options) -> None:
        super().__init__(spark, **options)
        self.events: list[tuple[str, str]] = []

    def _execute(self, node):
        with self._lock:
            self.events.append(("start", node.name))
        try:
            return super()._execute(node)
        finally:
            with self._lock:
                self.events.append(("end", node.name))


def test_nodes_at_once_start_only_after_what_they_depend_on_and_a_failure_starts_nothing_more(spark):
    base = _node("c_base", "select id as n from range(20)", materialized="table", file_format="parquet")
    left = _node("c_left", "select n from runner_test.c_base where n < 10", materialized="table", depends_on=[base.unique_id])
    right = _node("c_right", "select n from runner_test.c_base where n >= 10", materialized="table", depends_on=[base.unique_id])
    other = _node("c_other", "select id as n from range(3)", materialized="table")
    joined = _node("c_all", "select n from runner_test.c_left union all select n from runner_test.c_right",
                   depends_on=[left.unique_id, right.unique_id])
    warn_a = _node("c_warn_a", "select * from runner_test.c_other", kind="test", severity="warn", depends_on=[other.unique_id])
    warn_b = _node("c_warn_b", "select * from runner_test.c_all", kind="test", severity="warn", depends_on=[joined.unique_id])
    nodes = _in_dependency_order([warn_b, joined, right, warn_a, left, other, base])
    runner = RecordingRunner(spark, concurrency=2)
    result = runner.build(nodes)
    assert set(result.executed) == {n.name for n in nodes}
    assert spark.table("runner_test.c_all").count() == 20
    position = {event: index for index, event in enumerate(runner.events)}
    for node in nodes:
        for dependency in node.depends_on:
            name = dependency.rsplit(".", 1)[-1]
            assert position[("end", name)] < position[("start", node.name)], (name, node.name)
    # the warnings come in the compiled order, as one node at a time gives them
    assert result.warnings == tuple(f"test {n.name}: {3 if n is warn_a else 20} rows" for n in nodes if n.resource_type == "test")

    # a failure: nothing that depends on it starts, and the build raises that failure
    broken = _node("c_broken", "select no_such_column from range(1)", materialized="table")
    after = _node("c_after", "select * from runner_test.c_broken", depends_on=[broken.unique_id])
    runner = RecordingRunner(spark, concurrency=2)
    with pytest.raises(ModelFailed, match="model c_broken failed"):
        runner.build([broken, after, _node("c_beside", "select 1 as n")])
    assert ("start", "c_after") not in runner.events
    assert not runner.built("c_after") and not runner.built("c_broken")


def test_chain_heights_count_the_longest_chain_to_the_end_of_the_build():
    first = _node("h_first", "select 1 as n")
    second = _node("h_second", "select 1 as n", depends_on=[first.unique_id])
    third = _node("h_third", "select 1 as n", depends_on=[second.unique_id, "source.t.outside"])
    beside = _node("h_beside", "select 1 as n", depends_on=[first.unique_id])
    alone = _node("h_alone", "select 1 as n")
    heights = chain_heights([alone, beside, third, second, first])  # any order: placed by dependency first
    assert {n.rsplit(".", 1)[-1]: h for n, h in heights.items()} == {"h_first": 3, "h_second": 2, "h_third": 1, "h_beside": 1, "h_alone": 1}


def test_of_the_nodes_ready_the_head_of_the_longest_chain_starts_first(spark):
    """Two places, three nodes ready at once: two alone come first in the compiled order, the
    head of a chain of three last. The head starts in the first two places (the longest chain
    first), so the chain is not held up behind the nodes only the end of the build needs."""
    alone_a = _node("o_alone_a", "select id as n from range(3)", materialized="table")
    alone_b = _node("o_alone_b", "select id as n from range(3)", materialized="table")
    head = _node("o_head", "select id as n from range(3)", materialized="table")
    middle = _node("o_middle", "select n from runner_test.o_head", materialized="table", depends_on=[head.unique_id])
    tail = _node("o_tail", "select n from runner_test.o_middle", materialized="table", depends_on=[middle.unique_id])
    runner = RecordingRunner(spark, concurrency=2)
    runner.build([alone_a, alone_b, head, middle, tail])
    starts = [name for kind, name in runner.events if kind == "start"]
    assert starts.index("o_head") < 2 and starts[0] == "o_head", starts
    assert starts.index("o_alone_a") < starts.index("o_alone_b")  # ties keep the compiled order
    assert spark.table("runner_test.o_tail").count() == 3


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_node_reading_an_awaited_source_starts_once_it_is_written_the_others_meanwhile(spark, concurrency):
    """awaiting: a source the caller is still writing (uncommitted GC's storage inventory). The
    node reading it starts after the write; a node that does not read it runs before the write
    ends; a failed write fails the build with its own error and starts nothing that reads it."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    source = "source.t.runner_test.a_written"
    reader = _node("a_reader", "select n from runner_test.a_written", materialized="table", depends_on=[source])
    beside = _node("a_beside", "select 1 as n", materialized="table")
    nodes = [reader, beside]
    spark.sql("create database if not exists runner_test")
    spark.sql("drop table if exists runner_test.a_written")
    release = threading.Event()
    seen_before_write: list[bool] = []

    def write() -> None:
        # the caller's write, held back until the node beside it has run (with one node at a
        # time the order is the compiled one, so the write goes on when it is awaited)
        release.wait(timeout=30)
        seen_before_write.append(runner.built("a_beside"))
        spark.range(3).selectExpr("id as n").write.mode("overwrite").saveAsTable("runner_test.a_written")

    runner = RecordingRunner(spark, concurrency=concurrency)
    with ThreadPoolExecutor(max_workers=1) as pool:
        written = pool.submit(write)
        if concurrency > 1:
            threading.Timer(2.0, release.set).start()  # the node beside has had its chance by then
        else:
            release.set()
        result = runner.build(nodes, awaiting={source: written})
    assert set(result.executed) == {"a_reader", "a_beside"}
    assert spark.table("runner_test.a_reader").count() == 3
    if concurrency > 1:
        assert seen_before_write == [True], "the node that does not read the source waited for its write"

    def broken_write() -> None:
        raise BadInput("a data file is missing", field="files")

    runner = RecordingRunner(spark, concurrency=concurrency)
    fresh = [_node("a_reader2", "select n from runner_test.a_written", materialized="table", depends_on=[source])]
    with ThreadPoolExecutor(max_workers=1) as pool:
        failed = pool.submit(broken_write)
        with pytest.raises(BadInput, match="data file is missing"):
            runner.build(fresh, awaiting={source: failed})
    assert ("start", "a_reader2") not in runner.events


def test_a_short_range_list_becomes_literals_a_long_one_stays_its_subquery(spark):
    spark.sql("select concat('r', cast(id % 4 as string)) as range_id from range(40)").createOrReplaceTempView("range_list_ids")
    code = (
        "select id from range(3) where cast(id as string) in "
        "(/* lakewarden range list */ select range_id from range_list_ids where range_id < 'r2' /* end of lakewarden range list */)"
    )
    replaced, count = with_range_lists(spark, code)
    assert count == 1
    assert "in ('r0', 'r1')" in replaced and "range_list_ids" not in replaced

    # more ids than the limit: the subquery stays as written (same ranges, no literals)
    kept, count = with_range_lists(spark, code.replace("where range_id < 'r2'", ""), limit=3)
    assert count == 0 and kept == code.replace("where range_id < 'r2'", "")

    # no id at all: a null, which no range_id equals, so the statement selects nothing
    empty, count = with_range_lists(spark, code.replace("'r2'", "'a'"))
    assert count == 1 and "in (null)" in empty
    assert spark.sql(empty).count() == 0

    # 64-bit keys (key_list): a query of a local view holding them, the same rows as the subquery
    keys = (
        "select id from range(10) where xxhash64(cast(id as string)) in "
        "(/* lakewarden key list, up to 5000 */ select xxhash64(cast(id as string)) from range(3) /* end of lakewarden key list */)"
    )
    in_view, count = with_range_lists(spark, keys)
    assert count == 1 and "range(3)" not in in_view and "lakewarden_key_list_" in in_view
    assert sorted(row.id for row in spark.sql(in_view).collect()) == [0, 1, 2]
    # the same list twice in a statement: one view, read by both
    listed = "/* lakewarden key list, up to 5000 */ select xxhash64(cast(id as string)) from range(3) /* end of lakewarden key list */"
    statement = (f"select id from range(10) where xxhash64(cast(id as string)) in ({listed}) "
                 f"or xxhash64(cast(id - 5 as string)) in ({listed})")
    views: list[str] = []
    twice, count = with_range_lists(spark, statement, views=views)
    assert count == 2 and len(views) == 1 and twice.count(f"select key from {views[0]}") == 2
    assert sorted(row.id for row in spark.sql(twice).collect()) == [0, 1, 2, 5, 6, 7]
    # and no key: a null, as for range ids
    none, count = with_range_lists(spark, keys.replace("range(3)", "range(0)"))
    assert count == 1 and "in (null)" in none and spark.sql(none).count() == 0


def test_a_key_list_is_a_local_view_planned_as_a_broadcast_semi_join(spark):
    """A key list's keys come back as a query of a temporary view of a local relation: the
    statement reads no other table for them, and Spark plans the test as a broadcast semi join
    (no shuffle of the side tested)."""
    code = (
        "select id from range(100) where xxhash64(id) in "
        "(/* lakewarden key list, up to 50 */ select xxhash64(id) from range(40) where id % 3 = 0 /* end of lakewarden key list */)"
    )
    replaced, count = with_range_lists(spark, code)
    assert count == 1
    view = replaced.split("select key from ")[1].split(")")[0]
    assert spark.table(view).schema.simpleString() == "struct<key:bigint>"
    assert sorted(row.key for row in spark.table(view).collect()) == sorted(row[0] for row in spark.sql("select xxhash64(id) from range(40) where id % 3 = 0").collect())
    frame = spark.sql(replaced)
    plan = frame._jdf.queryExecution().executedPlan().toString()
    assert "LocalTableScan" in plan and "Exchange hashpartitioning" not in plan and "SortMergeJoin" not in plan, plan
    assert sorted(row.id for row in frame.collect()) == list(range(0, 40, 3))


def test_a_key_list_with_a_limit_of_its_own(spark):
    """key_list(query, limit): its markers carry the site's limit, which holds whatever the
    range lists' limit is: the keys in a local view up to it, the subquery above it; the same
    rows either way."""

    def keys(limit: int) -> str:
        return (
            "select id from range(12) where xxhash64(cast(id as string)) in "
            f"(/* lakewarden key list, up to {limit} */ select xxhash64(cast(id as string)) from range(6) "
            "/* end of lakewarden key list */)"
        )

    expected = sorted(row.id for row in spark.sql(keys(6)).collect())
    assert expected == list(range(6))
    in_view, count = with_range_lists(spark, keys(6), limit=3)
    assert count == 1 and "range(6)" not in in_view and "key list" not in in_view
    kept, count = with_range_lists(spark, keys(5), limit=10)
    assert count == 0 and kept == keys(5)
    for statement in (in_view, kept):
        assert sorted(row.id for row in spark.sql(statement).collect()) == expected
    # a key list and a range list of one statement, each against its own limit
    both = keys(6) + (
        " and cast(id as string) in (/* lakewarden range list */ select cast(id as string) from range(4) "
        "/* end of lakewarden range list */)"
    )
    replaced, count = with_range_lists(spark, both, limit=3)
    assert count == 1 and "lakewarden range list" in replaced and "key list" not in replaced
    assert sorted(row.id for row in spark.sql(replaced).collect()) == [0, 1, 2, 3]


def test_a_statements_lists_come_from_one_query_each_in_its_own_type(spark):
    """Several lists in one statement: one Spark query gathers them all (a union, values carried
    as strings), each given back in its column's type; a subquery written twice is one list; a
    list over the limit keeps its subquery while the others become literals."""
    spark.sql("select concat('r', cast(id % 4 as string)) as range_id from range(40)").createOrReplaceTempView("many_list_ids")
    keys = "select xxhash64(cast(id as string)) from range(3)"
    ranges = "select range_id from many_list_ids where range_id < 'r2'"
    longer = "select range_id from many_list_ids"
    assert collect_lists(spark, [keys, ranges, longer], limit=3) == [
        sorted(row[0] for row in spark.sql(keys).collect()),
        ["r0", "r1"],
        None,
    ]
    code = (
        "select id from range(10) where "
        f"(xxhash64(cast(id as string)) in (/* lakewarden range list */ {keys} /* end of lakewarden range list */) "
        f"or xxhash64(cast(id + 1 as string)) in (/* lakewarden range list */ {keys} /* end of lakewarden range list */)) "
        f"and concat('r', cast(id % 4 as string)) in (/* lakewarden range list */ {ranges} /* end of lakewarden range list */) "
        f"and concat('r', cast(id % 4 as string)) in (/* lakewarden range list */ {longer} /* end of lakewarden range list */)"
    )
    queries, sent = [], []
    recording = _QueryRecorder(spark, queries)
    replaced, count = with_range_lists(recording, code, limit=3, sent=sent.append)
    assert len(queries) == 3  # keys once, ranges, longer (the frames the Spark queries are made of)
    # sent: the union as given, cut short (63 rows over 36), then the distinct query of the two
    # lists the cut may have shortened (longer showed 4 values already: over a limit of 3)
    assert sent == [1, 1]
    assert count == 3 and replaced.count("/* lakewarden range list */") == 1  # only the long one kept
    assert "'r0', 'r1'" in replaced
    unsent = []
    assert with_range_lists(spark, "select 1", sent=unsent.append) == ("select 1", 0) and unsent == []
    assert sorted(row.id for row in spark.sql(replaced).collect()) == sorted(row.id for row in spark.sql(code).collect())


def test_lists_are_the_same_gathered_as_the_subqueries_give_them_or_distinct_in_spark(spark, monkeypatch):
    """collect_lists takes the subqueries' rows as they come while they are few (duplicates made
    distinct in the driver, no shuffle) and asks Spark for each list's distinct values when more
    come: the same lists either way, nulls left out, over the limit None."""
    import lakewarden.runtime.compiled_models as compiled_models

    repeated = "select concat('r', cast(id % 2 as string)) as range_id from range(10)"  # 10 rows, 2 values
    many = "select concat('r', cast(id % 2 as string)) as range_id from range(100)"  # 100 rows, 2 values
    keys = "select xxhash64(cast(id % 3 as string)) from range(9)"
    with_null = "select if(id = 0, null, cast(id as string)) from range(3)"
    over = "select cast(id as string) from range(4)"  # 4 values: over a limit of 3
    far_over = "select cast(id as string) from range(100)"  # over the limit within the rows first taken
    cases = [[repeated], [many], [keys, repeated], [keys, many, with_null], [over, keys], [far_over, repeated], [far_over]]
    key_values = sorted({row[0] for row in spark.sql(keys).collect()})
    expected = {
        repeated: ["r0", "r1"], many: ["r0", "r1"], keys: key_values, with_null: ["1", "2"], over: None, far_over: None,
    }
    for case in cases:
        as_given = collect_lists(spark, case, limit=3)
        monkeypatch.setattr(compiled_models, "RAW_ROWS_PER_LIST", 0)  # every row over: distinct in Spark
        in_spark = collect_lists(spark, case, limit=3)
        monkeypatch.undo()
        assert as_given == in_spark == [expected[query] for query in case], case


class _QueryRecorder:
    """A session whose ``sql`` records each statement it is given (the rest is the session's)."""

    def __init__(self, spark, queries):
        self._spark, self._queries = spark, queries

    def sql(self, statement):
        self._queries.append(statement)
        return self._spark.sql(statement)

    def __getattr__(self, name):
        return getattr(self._spark, name)


def test_a_list_of_ranges_a_join_selects_already_is_dropped_when_long(spark):
    """skip_to_ranges: literals while short; a long list becomes `true` (the join selects the
    same rows), never a subquery Spark would plan as a second join of every entry."""
    spark.sql("select concat('r', cast(id % 4 as string)) as range_id from range(40)").createOrReplaceTempView("joined_list_ids")
    code = (
        "select entries.range_id from joined_list_ids as entries "
        "left semi join (select 'r1' as range_id union all select 'r2') as chosen on entries.range_id = chosen.range_id "
        "where entries.range_id in "
        "(/* lakewarden range list, also joined */ select 'r1' union all select 'r2' /* end of lakewarden range list */)"
    )
    expected = sorted(row.range_id for row in spark.sql(code).collect())
    assert expected == ["r1"] * 10 + ["r2"] * 10

    short, count = with_range_lists(spark, code)
    assert count == 1 and "entries.range_id in ('r1', 'r2')" in short and "also joined" not in short
    long, count = with_range_lists(spark, code, limit=1)
    assert count == 0 and "where true" in long and "also joined" not in long
    for statement in (short, long):
        assert sorted(row.range_id for row in spark.sql(statement).collect()) == expected


def test_a_broken_model_is_one_line_naming_it(spark):
    runner = ModelRunner(spark)
    with pytest.raises(ModelFailed, match=r"^model broken failed: .*no_such_column") as caught:
        runner.build([_node("broken", "select no_such_column from range(1)")])
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "node,message",
    [
        (_node("inc", "select 1", materialized="incremental"), "materialized=incremental"),
        (_node("part", "select 1", materialized="table", partition_by=["x"]), "partition_by"),
        (_node("py", "def model(dbt, s): pass", language="python"), "Python model must be materialized as a table"),
    ],
)
def test_what_the_runner_would_execute_differently_is_refused(spark, node, message):
    with pytest.raises(ModelFailed, match=message):
        ModelRunner(spark).build([node])


def test_compiled_node_keeps_what_the_runner_needs(test_state_dir):
    manifest = parsed_manifest(dbt_location(test_state_dir))
    node = next(n for n in manifest.nodes.values() if n.name == "gc_committed_marked_addresses")
    compiled = _compiled(node)
    assert compiled.relation == "lakewarden.gc_committed_marked_addresses"
    assert compiled.materialized == "table" and compiled.resource_type == "model" and compiled.language == "sql"
    assert "model.lakewarden.int_gc_committed__expired_entries" in compiled.depends_on


def test_upstream_of_keeps_a_models_ancestors_and_the_tests_they_cover() -> None:
    from lakewarden.runtime.compiled_models import CompiledNode, upstream_of

    def node(name: str, *parents: str, kind: str = "model") -> CompiledNode:
        return CompiledNode(
            unique_id=f"{kind}.p.{name}", name=name, resource_type=kind, language="sql", materialized="table",
            relation=None if kind == "test" else f"s.{name}", code=f"select '{name}'",
            depends_on=tuple(f"model.p.{parent}" for parent in parents),
        )

    nodes = [
        node("a"), node("b", "a"), node("c", "b"), node("d", "c"), node("other"),
        node("checks_b", "b", kind="test"), node("checks_d", "d", kind="test"),
    ]
    assert [n.name for n in upstream_of(nodes, ["c", "other"])] == ["a", "b", "c", "other", "checks_b"]
    with pytest.raises(ValueError, match="missing_model"):
        upstream_of(nodes, ["missing_model"])
