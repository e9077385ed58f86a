"""A job on a small snapshot evaluates expressions interpreted, without adaptive execution and
on one shuffle partition, on a large one in Spark's generated code with adaptive execution
(lakewarden.runtime.spark_session.suit_session_to_size): the same rows either way, each job its
own settings in a shared session, and a user's own settings kept."""

from __future__ import annotations

import pytest

from lakewarden.runtime import spark_session
from lakewarden.runtime.spark_session import SMALL_SNAPSHOT_BYTES, suit_session_to_size

pytestmark = pytest.mark.spark

#: joins, an aggregate, a window, string and date functions, a CASE: what the models use
QUERY = """
with entries as (
    select id, concat('data/', cast(id % 97 as string), '/', cast(id as string)) as address,
           timestamp_seconds(1700000000 + id * 3600) as last_modified, id % 7 as branch
    from range(0, 5000)
),
branches as (select id as branch, concat('b', cast(id as string)) as name from range(0, 7))
select b.name, regexp_extract(e.address, '^data/([0-9]+)/', 1) as bucket,
       count(*) as n, max(e.last_modified) as newest,
       sum(case when e.id % 2 = 0 then 1 else 0 end) as even,
       row_number() over (partition by b.name order by count(*) desc, regexp_extract(e.address, '^data/([0-9]+)/', 1)) as rank
from entries e join branches b on e.branch = b.branch
group by b.name, regexp_extract(e.address, '^data/([0-9]+)/', 1)
"""


def rows_and_plan(spark) -> tuple[list[tuple], str]:
    frame = spark.sql(QUERY)
    rows = sorted(tuple(row) for row in frame.collect())
    return rows, frame._jdf.queryExecution().executedPlan().toString()  # noqa: SLF001 - the plan's text


def test_small_is_interpreted_large_is_generated_and_the_rows_are_the_same(spark):
    try:
        assert suit_session_to_size(spark, 1024) is True
        assert spark.conf.get("spark.sql.codegen.wholeStage") == "false"
        assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
        assert spark.conf.get("spark.sql.adaptive.enabled") == "false"
        assert spark.conf.get("spark.sql.shuffle.partitions") == "1"
        small_rows, small_plan = rows_and_plan(spark)

        assert suit_session_to_size(spark, SMALL_SNAPSHOT_BYTES) is False
        assert spark.conf.get("spark.sql.codegen.wholeStage") == "true"
        assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
        own = spark_session._settings_before["spark.sql.shuffle.partitions"] or "200"  # noqa: SLF001 - what came back
        assert spark.conf.get("spark.sql.shuffle.partitions") == own != "1", "the session's own (spark_conf: 8)"
        large_rows, large_plan = rows_and_plan(spark)
    finally:
        suit_session_to_size(spark, None)

    assert small_rows == large_rows and len(small_rows) == 7 * 97
    assert "*(" not in small_plan, "a small job's plan has no whole-stage generated code"
    assert "*(" in large_plan, "a large job's plan runs in whole-stage generated code"
    assert "AdaptiveSparkPlan" not in small_plan and "AdaptiveSparkPlan" in large_plan


def test_unknown_size_is_generated_code(spark):
    assert suit_session_to_size(spark, None) is False
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "FALLBACK"


def test_the_sessions_own_settings_come_back_after_a_small_job(spark, monkeypatch):
    """Settings given to the session before any job (spark-submit --conf) are the large jobs' settings."""
    monkeypatch.setattr(spark_session, "_settings_before", {})
    spark.conf.set("spark.sql.codegen.wholeStage", "false")
    own_partitions = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "5")
    try:
        suit_session_to_size(spark, 10)
        assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
        assert spark.conf.get("spark.sql.shuffle.partitions") == "1"
        suit_session_to_size(spark, 1 << 40)
        assert spark.conf.get("spark.sql.codegen.wholeStage") == "false", "the user's setting, not Spark's default"
        assert spark.conf.get("spark.sql.shuffle.partitions") == "5", "the user's setting, not the small form's"
        assert spark.conf.get("spark.sql.codegen.factoryMode") == "FALLBACK"
    finally:
        spark.conf.set("spark.sql.codegen.wholeStage", "true")
        spark.conf.set("spark.sql.shuffle.partitions", own_partitions)


def test_records_larger_than_a_page_sort_aggregate_and_join(spark):
    """The suite's session has 1 MB pages (spark_session.page_size, as every job's with the
    default heap): a record of 3 MB still sorts, aggregates and joins (Spark gives it a page of
    its own size)."""
    assert spark.sparkContext.getConf().get("spark.buffer.pageSize") == "1m"
    try:
        suit_session_to_size(spark, 1024)
        rows = spark.sql(
            """
            with big as (select id, repeat(cast(id as string), 3 * 1024 * 1024) as blob from range(0, 4)),
            grouped as (select id % 2 as k, max(blob) as blob, count(*) as n from big group by id % 2)
            select g.k, length(g.blob) as size, g.n, b.id
            from grouped g join big b on g.blob = b.blob
            order by g.blob
            """
        ).collect()
    finally:
        suit_session_to_size(spark, None)
    assert [tuple(row) for row in rows] == [(0, 3 * 1024 * 1024, 2, 2), (1, 3 * 1024 * 1024, 2, 3)]


def test_the_dbt_hook_sets_the_runners_small_form() -> None:
    """`dbt build` from a shell takes the small form by the same settings as the runner (the
    on-run-start hook macros/suit_session_to_size.sql holds its own list: the two agree), and
    the hook runs after the one that declares the snapshot's tables it counts."""
    import re

    from lakewarden.runtime.project import project_dir

    macro = (project_dir() / "macros" / "suit_session_to_size.sql").read_text(encoding="utf-8")
    hooked = dict(re.findall(r"'(spark\.[\w.]+)': '([^']*)'", macro))
    assert hooked == {key: small for key, (small, _) in spark_session._SMALL_FORM_SETTINGS.items()}  # noqa: SLF001 - the list itself
    project = (project_dir() / "dbt_project.yml").read_text(encoding="utf-8")
    hooks = project[project.index("on-run-start:"):]
    assert hooks.index("create_snapshot_tables_if_missing()") < hooks.index("suit_session_to_size()")


def test_a_stretch_of_few_rows_takes_the_small_form_and_gives_the_session_its_own_back(spark):
    """small_form_for: at most SMALL_FORM_ROWS rows, the small form's settings for the block and
    the session's own after it, error or not; more rows, or an unknown count, change nothing."""
    from lakewarden.runtime.spark_session import SMALL_FORM_ROWS, small_form_for

    suit_session_to_size(spark, None)  # the large form: the session's own settings
    own = {key: spark.conf.get(key) for key in spark_session._SMALL_FORM_SETTINGS}  # noqa: SLF001 - the keys
    with small_form_for(spark, SMALL_FORM_ROWS) as small:
        assert small is True
        assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
        assert spark.conf.get("spark.sql.adaptive.enabled") == "false"
        small_rows, small_plan = rows_and_plan(spark)
    assert {key: spark.conf.get(key) for key in own} == own
    large_rows, large_plan = rows_and_plan(spark)
    assert small_rows == large_rows and "*(" not in small_plan and "*(" in large_plan

    for rows in (SMALL_FORM_ROWS + 1, None):
        with small_form_for(spark, rows) as small:
            assert small is False
            assert {key: spark.conf.get(key) for key in own} == own

    with pytest.raises(RuntimeError, match="in the block"):
        with small_form_for(spark, 0):
            raise RuntimeError("in the block")
    assert {key: spark.conf.get(key) for key in own} == own
