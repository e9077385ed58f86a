"""A mark's safety test, run on the honest mark and on a mark with addresses slipped in.

The safety tests under ``tests/`` run with every build; a test that never fails proves nothing.
:func:`safety_verdicts` runs one of them as its job compiles it, twice: on the mart the job's
run just built, then on a copy of that mart with one row per given physical address added (a
copy of an honest row with only ``physical_address`` changed). The caller asserts the first
finds nothing and the second finds exactly the addresses slipped in."""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping
from unittest import mock

from pyspark.sql import SparkSession


@contextmanager
def held_views_kept() -> Iterator[None]:
    """Runs within the block keep the views of the intermediates they held when they end (a
    run drops them: ModelRunner.drop_held), so that :func:`safety_verdicts` and
    :func:`with_held_intermediates` read this run's rows afterwards, not a table an earlier
    test's run left under the same name."""
    from lakewarden.runtime.compiled_models import ModelRunner

    with mock.patch.object(ModelRunner, "drop_held", lambda runner: None):
        yield


def safety_verdicts(
    spark: SparkSession,
    *,
    state: Path,
    selection: str,
    variables: Mapping[str, Any],
    test_name: str,
    mart: str,
    slipped_in: set[str],
) -> tuple[list[str], list[str]]:
    """(offending addresses on the honest mart, offending addresses on the tampered one). The
    job's run must have kept its held views (:func:`held_views_kept`)."""
    from lakewarden.runtime.compiled_models import compile_selection

    honest_table = spark.table(f"lakewarden.{mart}")
    assert honest_table.count() > 0, "the run should mark something to copy a row from"
    tampered = honest_table
    for address in sorted(slipped_in):
        tampered = tampered.unionByName(
            honest_table.limit(1).selectExpr(
                *[f"'{address}' as physical_address" if c == "physical_address" else c for c in honest_table.columns]
            )
        )
    tampered.write.mode("overwrite").saveAsTable(f"lakewarden.{mart}_tampered")
    nodes = compile_selection(selection, state=state, variables={**variables, "lakewarden_runner": True})
    (test,) = [node for node in nodes if node.name == test_name]
    reference = f"lakewarden.{mart}\n"
    assert reference in test.code, f"{test_name} no longer reads {mart} as this helper expects"
    code = with_held_intermediates(spark, test.code)
    honest = [row["physical_address"] for row in spark.sql(code).collect()]
    caught = [row["physical_address"] for row in spark.sql(code.replace(reference, f"lakewarden.{mart}_tampered\n")).collect()]
    return honest, caught


def with_held_intermediates(spark: SparkSession, code: str) -> str:
    """``code`` reading the intermediates a small snapshot's run held in memory (temporary views
    named as ``ModelRunner`` names them) where it holds them, as the run's test read them."""
    from lakewarden.runtime.compiled_models import HELD_REFERENCE, held_view

    temporary = {row["tableName"] for row in spark.sql("show tables").collect() if row["isTemporary"]}

    def held(match: "re.Match[str]") -> str:
        view = held_view(match.group(0))
        return view if view in temporary else match.group(0)

    return HELD_REFERENCE.sub(held, code)
