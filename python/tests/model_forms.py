"""The two forms a job run may take for the same rows, chosen by the repository's size, forced
in tests so both meet the oracles on the suite's small repositories:

* range lists: a list query's ids put in as literals, or the subquery as written, and
  intermediate tables written, or held in the session's memory;
* an optimized uncommitted run's listing kept to the considered objects before it is written
  (lakewarden.jobs.gc_uncommitted.KEEP_CONSIDERED_OF_LISTINGS), or written as listed;
* expressions in Spark's generated code, or interpreted.

The first and the last switch at one size (lakewarden.runtime.spark_session.SMALL_SNAPSHOT_BYTES).
On a large repository a stretch of a run that reads few rows takes the small form again
(spark_session.small_form_for: lifecycle's steps after its pass over every entry, in a run that
read a few ranges), and a stretch of up to spark_session.HELD_ROWS rows holds its intermediate
tables in memory in the large form's settings too. ``few_rows`` chooses what such a stretch
does here: ``small`` (the default, as on a large repository), ``held`` (the large form's
settings, its tables held: a stretch of 100,000 to 500,000 rows) or ``written`` (the large
form, its tables written: a run that reads millions of rows).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator
from unittest import mock

from lakewarden.runtime import spark_session
from lakewarden.jobs import gc_uncommitted


@contextmanager
def large_repository_forms(on: bool = True, *, few_rows: str = "small") -> Iterator[None]:
    """Within the block, jobs run in the forms of a large repository (``on``) or of a small one;
    a stretch that reads few rows as ``few_rows`` says (the module's docstring)."""
    if few_rows not in ("small", "held", "written"):
        raise ValueError(f"few_rows must be small, held or written, not {few_rows!r}")
    with (
        mock.patch.object(spark_session, "SMALL_SNAPSHOT_BYTES", 0 if on else 1 << 62),
        mock.patch.object(spark_session, "SMALL_FORM_ROWS", spark_session.SMALL_FORM_ROWS if few_rows == "small" else -1),
        mock.patch.object(spark_session, "HELD_ROWS", -1 if few_rows == "written" else spark_session.HELD_ROWS),
        mock.patch.object(gc_uncommitted, "KEEP_CONSIDERED_OF_LISTINGS", on),
    ):
        yield
