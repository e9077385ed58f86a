"""The address macros (macros/physical_addresses.sql) as Spark evaluates them.

``is_deletable_address`` runs on every candidate entry of a job, so its conditions are written in
cheap forms (no character counting, the dot-segment pattern tried only where a dot follows a
slash). These tests hold them to the conditions as they were first written, the plain reading of
the rule: strictly inside the namespace (longer than the root and its slash), not under
``_lakefs/``, not ``_lakefs`` itself, not the root's ``dummy`` in any case, no dot segment.
A cheap form that let one more address through would delete data, so the comparison is on the
exact boolean, null included, over generated addresses built from the characters that matter.
"""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

REPO_ROOT = Path(__file__).resolve().parents[2]

ROOTS = ("s3://bucket/ns", "file:///tmp/lake/ns", "s3://bucket", "gs://b/a.b/ns")

#: the rule as first written, one condition per line (the reference the macro must equal)
REFERENCE = """(
    startswith(p, concat(root, '/'))
    and length(p) > length(root) + 1
    and not startswith(p, concat(root, '/_lakefs/'))
    and p != concat(root, '/_lakefs')
    and lower(p) != lower(concat(root, '/dummy'))
    and not p rlike '(^|/)\\\\.{1,2}(/|$)'
)"""


def macros() -> object:
    """The macro file's module, rendered by Jinja as dbt renders it (it uses no dbt context)."""
    source = (Path(REPO_ROOT) / "macros" / "physical_addresses.sql").read_text()
    return jinja2.Environment().from_string(source).module


def deletable_sql() -> str:
    return str(macros().is_deletable_address("p", "root"))


segment = st.sampled_from(["a", "_lakefs", "_LAKEFS", "dummy", "DUMMY", "Dummy", ".", "..", "...", ".a", "a.", "x.y", "", "é", "K"])
relative = st.lists(segment, max_size=5).map("/".join)
suffix = st.one_of(relative, relative.map(lambda r: "/" + r), relative.map(lambda r: r + "/"), st.text(max_size=12))


def verdicts(spark, pairs: list[tuple[str | None, str]]) -> list[tuple[object, object]]:
    rows = spark.createDataFrame(pairs, "p string, root string")
    return [tuple(r) for r in rows.selectExpr(f"{REFERENCE} as reference", f"{deletable_sql()} as macro").collect()]


@pytest.mark.parametrize("root", ROOTS)
def test_examples_agree_with_the_rule(spark, root: str) -> None:
    paths = [
        root, root + "/", root + "/a", root + "/_lakefs", root + "/_lakefs/x", root + "/_LAKEFS/x", root + "/dummy",
        root + "/DUMMY", root + "/dummy/x", root + "/a/dummy", root + "/./a", root + "/a/..", root + "/a/.b",
        root + "/a.b/c", root + "x/a", root[:-1], None, ".", "./a", root + "//a",
    ]
    results = verdicts(spark, [(p, root) for p in paths])
    assert [r[1] for r in results] == [r[0] for r in results]
    by_path = dict(zip(paths, (r[1] for r in results)))
    assert by_path[root + "/a"] is True and by_path[root + "/a/.b"] is True and by_path[root + "/a.b/c"] is True
    for unsafe in (root, root + "/", root + "/_lakefs/x", root + "/dummy", root + "/DUMMY", root + "/./a", root + "/a/.."):
        assert by_path[unsafe] is False, unsafe


#: Each example is one Spark query over its list, which costs about the same whatever the list's
#: length: a few examples of long lists (hypothesis keeps lists short unless told otherwise) check
#: more addresses than many short ones. 12 examples of 60-200: 3,638 addresses and 1,256 keys in a
#: run measured, where 60 examples of 1-40 checked 1,151 and 276 (this file: 17 s against 25 s).
EXAMPLES, SHORTEST, LONGEST = 12, 60, 200


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.data_too_large, HealthCheck.too_slow])
@given(tails=st.lists(suffix, min_size=SHORTEST, max_size=LONGEST), root=st.sampled_from(ROOTS))
@example(tails=["a/../b", ".hidden", "a/./b", "a/.../b", "dummy", "_lakefs"], root="s3://bucket/ns")
def test_macro_equals_the_rule(spark, tails: list[str], root: str) -> None:
    """Generated addresses under the root, beside it and above it: the same verdict, null included."""
    pairs = [(root + "/" + tail, root) for tail in tails] + [(root + tail, root) for tail in tails] + [(tail, root) for tail in tails]
    for (path, _), (reference, macro) in zip(pairs, verdicts(spark, pairs)):
        assert macro == reference, (path, root)


#: physical_address as first written (the type upper-cased on every row, no fast path first)
PHYSICAL_REFERENCE_TEMPLATE = """case
    when upper(t) = 'FULL' then {normalized}
    when startswith(a, '/') or contains(a, '//')
        then concat(root, '/', regexp_replace(regexp_replace(a, '^/+', ''), '/{{2,}}', '/'))
    else concat(root, '/', a)
end"""


#: address_key as first written: the key of the absolute URI physical_address gives
KEY_REFERENCE_TEMPLATE = """case
    when upper(t) != 'FULL' and not startswith(a, '/') and not contains(a, '//') then xxhash64(a)
    else {physical_key}
end"""


def key_sql() -> tuple[str, str]:
    """(the reference key, the macro's key) over columns ``a`` (address), ``t`` (type), ``root``."""
    module = macros()
    reference = KEY_REFERENCE_TEMPLATE.format(
        physical_key=module.physical_key(module.physical_address("a", "t", "root"), "root")
    )
    return reference, str(module.address_key("a", "t", "root"))


address_type = st.sampled_from(["RELATIVE", "FULL", "relative", "full", "Full", "", None])
full_address = st.builds(
    lambda scheme, tail: scheme + tail,
    st.sampled_from(["s3://bucket/ns", "S3A://bucket/ns", "s3n://bucket", "file:///tmp/lake/ns", "gs://b/a.b/ns", "", "x"]),
    suffix,
)
#: (address, type) rows: relative and full spellings, odd types and nulls
address_rows = st.lists(st.tuples(st.one_of(suffix, full_address, st.none()), address_type), min_size=SHORTEST, max_size=LONGEST)


def assert_macro_equals_reference(spark, rows: list[tuple[str | None, str | None]], root: str, reference: str, macro: str) -> None:
    """Both expressions over columns ``a`` (address), ``t`` (type) and ``root``: equal on every row, null included."""
    frame = spark.createDataFrame([(a, t, root) for a, t in rows], "a string, t string, root string")
    for row in frame.selectExpr("a", "t", f"{reference} as reference", f"{macro} as macro").collect():
        assert row["macro"] == row["reference"], (row["a"], row["t"], root)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.data_too_large, HealthCheck.too_slow])
@given(rows=address_rows, root=st.sampled_from(ROOTS))
@example(
    rows=[("a/b", "RELATIVE"), ("/a//b", "RELATIVE"), ("//a", None), ("s3a://bucket/ns//a", "FULL"), ("s3://bucket/ns", "FULL"),
          ("s3://bucket/ns/", "FULL"), ("s3://other/x", "full"), (None, "FULL"), (None, None), ("a", "")],
    root="s3://bucket/ns",
)
def test_address_key_equals_the_key_of_the_physical_address(spark, rows: list[tuple[str | None, str | None]], root: str) -> None:
    """The key macro (one absolute URI, built only for FULL addresses) gives every address the key
    of its absolute URI, as the key was first written: equal objects keep equal keys whatever
    the spelling, relative or full, null included."""
    reference, macro = key_sql()
    assert_macro_equals_reference(spark, rows, root, reference, macro)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.data_too_large, HealthCheck.too_slow])
@given(rows=address_rows, root=st.sampled_from(ROOTS))
@example(
    rows=[("a/b", "RELATIVE"), ("a/b", "relative"), ("/a//b", "RELATIVE"), ("a//b", "RELATIVE"), ("//a", None),
          ("s3a://bucket/ns//a", "FULL"), ("s3://bucket/ns/a", "RELATIVE"), (None, "RELATIVE"), (None, None), ("a", "")],
    root="s3://bucket/ns",
)
def test_physical_address_equals_its_first_form(spark, rows: list[tuple[str | None, str | None]], root: str) -> None:
    """The physical address macro, with its fast path for plain RELATIVE addresses tested first,
    gives every address the absolute URI its first form gave, null included: every comparison
    of addresses (a live reference protecting an object) rests on it."""
    module = macros()
    reference = PHYSICAL_REFERENCE_TEMPLATE.format(normalized=module.normalize_uri("a"))
    macro = str(module.physical_address("a", "t", "root"))
    assert_macro_equals_reference(spark, rows, root, reference, macro)


def test_upper_address_type_is_upper(spark) -> None:
    """The staging models' address type is upper(), whichever spelling (the stored RELATIVE and
    FULL are returned as they are, any other upper-cased), null included."""
    spellings = ["RELATIVE", "FULL", "relative", "full", "Full", "BY_PREFIX_DEPRECATED", "by_prefix", "", "RELATIVE ", None]
    macro = str(macros().upper_address_type("t"))
    frame = spark.createDataFrame([(t,) for t in spellings], "t string")
    for row in frame.selectExpr("t", "upper(t) as reference", f"{macro} as macro").collect():
        assert row["macro"] == row["reference"], row["t"]
