"""The deletion safety rule: inside the namespace, never the root, never ``_lakefs/``, never
lakeFS's ``dummy`` at the namespace root."""

from __future__ import annotations

import posixpath
from urllib.parse import unquote

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from lakewarden.errors import UnsafeDeletion
from lakewarden.safety import (
    canonical_namespace,
    canonical_uri,
    check_deletable,
    is_deletable,
    parse_uri,
    resolve_physical,
)

NAMESPACES = ["s3://bucket/repo/ns", "file:///data/lake/ns"]

# -- examples -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "address_type", "namespace", "expected"),
    [
        ("data/abc", "RELATIVE", "s3://b/ns", "s3://b/ns/data/abc"),
        ("data/abc", "relative", "s3a://b/ns/", "s3://b/ns/data/abc"),
        ("data/abc", "RELATIVE", "file:/tmp/ns", "file:///tmp/ns/data/abc"),
        ("data/abc", "RELATIVE", "/tmp/ns", "file:///tmp/ns/data/abc"),
        ("s3a://b/ns/x", "FULL", "s3://b/ns", "s3://b/ns/x"),
        ("file://localhost/tmp/ns/x", "FULL", "file:///tmp/ns", "file:///tmp/ns/x"),
        ("data/a b%20c?d#e", "RELATIVE", "s3://b/ns", "s3://b/ns/data/a b%20c?d#e"),
    ],
)
def test_resolve_physical(address: str, address_type: str, namespace: str, expected: str) -> None:
    assert resolve_physical(address, address_type, namespace) == expected


def test_resolve_physical_rejects_unknown_type() -> None:
    with pytest.raises(ValueError, match="address_type"):
        resolve_physical("x", "BY_PREFIX_DEPRECATED", "s3://b/ns")


@pytest.mark.parametrize(
    "uri",
    [
        "s3://bucket/repo/ns/data/x",
        "s3a://bucket/repo/ns/data/x",
        "S3N://bucket/repo/ns/data/x",
        "s3://bucket/repo/ns/_lakefs_not/x",
        "s3://bucket/repo/ns/data/_lakefs/x",
        "s3://bucket/repo/ns/data/%20x",
        "s3://bucket/repo/ns/data/dummy",  # only the root's dummy is lakeFS's
        "s3://bucket/repo/ns/dummy2",
    ],
)
def test_deletable_examples(uri: str) -> None:
    check_deletable(uri, "s3://bucket/repo/ns/")


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("s3://bucket/repo/ns", "root"),
        ("s3://bucket/repo/ns/", "root"),
        ("s3://bucket/repo/ns//", "root"),
        ("s3://bucket/repo/ns/.", "root"),
        ("s3://bucket/repo/ns/data/..", "root"),
        ("s3://bucket/repo/ns%2F", "outside"),
        ("s3://bucket/repo/ns/%2e", "root"),
        ("s3://bucket/repo/nsx/data", "outside"),
        ("s3://bucket/repo/other/x", "outside"),
        ("s3://other/repo/ns/x", "bucket"),
        ("gs://bucket/repo/ns/x", "scheme"),
        ("file:///repo/ns/x", "scheme"),
        ("s3://bucket/repo/ns/_lakefs/x", "_lakefs"),
        ("s3://bucket/repo/ns/_lakefs", "_lakefs"),
        ("s3://bucket/repo/ns/_LAKEFS/x", "_lakefs"),
        ("s3://bucket/repo/ns//_lakefs/x", "_lakefs"),
        ("s3://bucket/repo/ns/./_lakefs/x", "_lakefs"),
        ("s3://bucket/repo/ns/data/../_lakefs/x", "_lakefs"),
        ("s3://bucket/repo/ns/%5Flakefs/x", "_lakefs"),
        ("s3://bucket/repo/ns/%255Flakefs/x", "_lakefs"),
        ("s3://bucket/repo/ns/data%2F..%2F_lakefs/x", "_lakefs"),
        ("s3://bucket/repo/ns/data\\..\\_lakefs\\x", "_lakefs"),
        ("s3://bucket/repo/ns/dummy", "dummy"),
        ("s3://bucket/repo/ns//dummy", "dummy"),
        ("s3://bucket/repo/ns/data/../dummy", "dummy"),
        ("s3://bucket/repo/ns/%64ummy", "dummy"),
        ("s3://bucket/repo/ns/../ns2/x", "outside"),
        ("s3://bucket/repo/ns/data/%2e%2e/%2e%2e/x", "outside"),
        ("s3://bucket/repo/ns/../../../../x", "above the root"),
        ("not a uri", "bad physical address"),
        ("relative/path", "bad physical address"),
        ("file://otherhost/repo/ns/x", "bad physical address"),
    ],
)
def test_unsafe_examples(uri: str, reason: str) -> None:
    with pytest.raises(UnsafeDeletion, match=reason):
        check_deletable(uri, "s3://bucket/repo/ns")


@pytest.mark.parametrize("uri", ["file:///data/ns/x", "file:/data/ns/x", "file://localhost/data/ns/x", "/data/ns/x", "file:///data//ns/./x"])
def test_file_forms(uri: str) -> None:
    for namespace in ("file:///data/ns", "file:/data/ns/", "/data/ns", "file://localhost/data/ns"):
        check_deletable(uri, namespace)


def test_bucket_root_namespace() -> None:
    check_deletable("s3://bucket/x", "s3://bucket")
    check_deletable("s3://bucket/x", "s3://bucket/")
    for uri in ("s3://bucket", "s3://bucket/", "s3://bucket/_lakefs/x", "s3://bucket//"):
        assert not is_deletable(uri, "s3://bucket")


def test_canonical_forms() -> None:
    assert canonical_namespace("s3a://b/p//") == "s3://b/p"
    assert canonical_uri("file:/x/y") == "file:///x/y"
    assert canonical_uri("s3n://b/a//b") == "s3://b/a//b"
    assert parse_uri("s3://b/k?x#y").path == "/k?x#y"


# -- properties -----------------------------------------------------------------------------

_SEGMENT_CHARS = st.sampled_from(list("abcXYZ019-_.~ %+@=:,'\"") + ["é", "∂", "_lakefs", "%2F", "%2e", "%5F", "..", "\\"])
segment = st.lists(_SEGMENT_CHARS, min_size=1, max_size=6).map("".join)
relative = st.lists(st.one_of(segment, st.sampled_from(["", ".", "..", "_lakefs", "_LakeFS"])), min_size=0, max_size=6).map("/".join)


def _oracle_safe(relative_path: str, *, object_store: bool) -> bool:
    """Independent model: safe iff no reading (raw, decoded up to 4x, '\\' as '/') escapes.

    An object store also deletes the raw key literally, so there the raw text must not start
    with a ``_lakefs`` segment or be empty either.
    """
    if object_store:
        raw_segments = [part for part in relative_path.split("/") if part]
        if not raw_segments or raw_segments[0].casefold() == "_lakefs":
            return False
    readings = [relative_path]
    current = relative_path
    for _ in range(4):
        decoded = unquote(current)
        if decoded == current:
            break
        readings.append(decoded)
        current = decoded
    readings += [r.replace("\\", "/") for r in readings]
    for reading in readings:
        joined = posixpath.normpath("/ns/" + reading)
        if joined in ("/ns", "/") or not joined.startswith("/ns/"):
            return False
        # normpath clamps '..' at the root; a path that needs clamping escaped
        depth = 1
        for part in ("ns/" + reading).split("/"):
            if part == "..":
                depth -= 1
                if depth < 0:
                    return False
            elif part not in ("", "."):
                depth += 1
        if joined[len("/ns/"):].split("/")[0].casefold() == "_lakefs":
            return False
    return True


@settings(max_examples=400, deadline=None)
@given(rel=relative, namespace=st.sampled_from(NAMESPACES))
@example(rel="data/../_lakefs/x", namespace=NAMESPACES[0])
@example(rel="%2e%2e/x", namespace=NAMESPACES[0])
def test_relative_addresses_match_the_oracle(rel: str, namespace: str) -> None:
    """Whatever a RELATIVE address holds, deletable iff the independent model says safe."""
    uri = resolve_physical(rel, "RELATIVE", namespace)
    if _oracle_safe(rel, object_store=namespace.startswith("s3:")):
        check_deletable(uri, namespace)
    else:
        with pytest.raises(UnsafeDeletion):
            check_deletable(uri, namespace)


@settings(max_examples=300, deadline=None)
@given(rel=relative)
def test_deletable_implies_inside_under_every_reading(rel: str) -> None:
    """Soundness, stated directly: a deletable URI is below the namespace and not in _lakefs."""
    namespace = "s3://bucket/repo/ns"
    uri = resolve_physical(rel, "RELATIVE", namespace)
    assume(is_deletable(uri, namespace))
    for reading in (rel, unquote(rel), unquote(unquote(rel))):
        normal = posixpath.normpath("/repo/ns/" + reading)
        assert normal.startswith("/repo/ns/")
        assert normal[len("/repo/ns/"):].split("/")[0].casefold() != "_lakefs"


@settings(max_examples=200, deadline=None)
@given(
    rel=relative,
    scheme=st.sampled_from(["s3", "s3a", "s3n", "S3A"]),
    ns_slashes=st.sampled_from(["", "/", "//"]),
)
def test_scheme_aliases_and_trailing_slashes_do_not_matter(rel: str, scheme: str, ns_slashes: str) -> None:
    canonical = f"s3://bucket/ns/{rel}"
    aliased = f"{scheme}://bucket/ns/{rel}"
    assert is_deletable(aliased, "s3a://bucket/ns" + ns_slashes) == is_deletable(canonical, "s3://bucket/ns")


@settings(max_examples=200, deadline=None)
@given(
    suffix=st.lists(st.sampled_from(["", ".", "%2e", "%2E", "%2F", "data/..", "data/%2e%2e", "a/b/../.."]), max_size=5).map("/".join),
    namespace=st.sampled_from(NAMESPACES + ["s3://bucket", "s3://bucket/"]),
)
def test_namespace_root_is_never_deletable(suffix: str, namespace: str) -> None:
    root = canonical_namespace(namespace)
    assert not is_deletable(root + suffix, namespace)
    assert not is_deletable(root + "/" + suffix, namespace)


@settings(max_examples=200, deadline=None)
@given(rel=relative, bucket=st.sampled_from(["other", "bucket2", "Bucket"]))
def test_other_buckets_are_never_deletable(rel: str, bucket: str) -> None:
    assert not is_deletable(f"s3://{bucket}/repo/ns/{rel}", "s3://bucket/repo/ns")
