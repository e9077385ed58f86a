"""The deletion safety rule on Azure (``https://ACCOUNT.blob.core.windows.net/CONTAINER/PATH``)
and GCS (``gs://BUCKET/PATH``) namespaces: the same rule as S3, plus Azure's container and
case-insensitive host. Checked against an independent model of "inside and not metadata"."""

from __future__ import annotations

import posixpath
from urllib.parse import unquote

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lakewarden.safety import canonical_namespace, is_deletable, parse_uri, resolve_physical, unsafe_reason

AZURE_NS = "https://acct.blob.core.windows.net/container/repo/ns"
GCS_NS = "gs://bucket/repo/ns"

segment = st.sampled_from(
    ["data", "x", ".", "..", "", "_lakefs", "_LAKEFS", "%2e%2e", "%2E", "%2F", "%252e%252e", "dummy", "a\\..\\..", "container", "ns", "%5c"]
)
relative = st.lists(segment, min_size=0, max_size=6).map("/".join)


def _model_safe(relative_path: str, ns_path: str) -> bool:
    """Deletable iff under every reading (raw, decoded up to 4 times, backslashes as slashes) the
    path stays strictly below ``ns_path`` without clamping '..', and is not metadata."""
    raw = [part for part in relative_path.split("/") if part]
    if not raw or raw[0].casefold() == "_lakefs" or (len(raw) == 1 and raw[0].casefold() == "dummy"):
        return False
    readings = [relative_path]
    for _ in range(4):
        decoded = unquote(readings[-1])
        if decoded == readings[-1]:
            break
        readings.append(decoded)
    readings += [r.replace("\\", "/") for r in readings]
    for reading in readings:
        depth = 0  # '..' above the root is an escape, never clamped
        for part in (ns_path + "/" + reading).split("/"):
            if part == "..":
                depth -= 1
                if depth < 0:
                    return False
            elif part not in ("", "."):
                depth += 1
        joined = posixpath.normpath(ns_path + "/" + reading)
        if not joined.startswith(ns_path + "/"):
            return False
        rest = joined[len(ns_path) + 1:].split("/")
        if rest[0].casefold() == "_lakefs" or (len(rest) == 1 and rest[0].casefold() == "dummy"):
            return False
    return True


@settings(max_examples=400, deadline=None)
@given(rel=relative, namespace=st.sampled_from([AZURE_NS, GCS_NS]))
@example(rel="data/../../ns2/x", namespace=AZURE_NS)
@example(rel="../../../other/repo/ns/x", namespace=AZURE_NS)
@example(rel="%2e%2e/%2e%2e/x", namespace=GCS_NS)
def test_relative_addresses_match_the_model(rel: str, namespace: str) -> None:
    uri = resolve_physical(rel, "RELATIVE", namespace)
    ns_path = parse_uri(namespace).path
    assert is_deletable(uri, namespace) == _model_safe(rel, ns_path), unsafe_reason(uri, namespace)


@settings(max_examples=200, deadline=None)
@given(
    rel=relative,
    account=st.sampled_from(["other", "acct2", "acctx", "acct.evil"]),
    container=st.sampled_from(["container2", "containe", "Container", "other"]),
)
def test_other_accounts_and_containers_are_never_deletable(rel: str, account: str, container: str) -> None:
    assert not is_deletable(f"https://{account}.blob.core.windows.net/container/repo/ns/{rel}", AZURE_NS)
    assert not is_deletable(f"https://acct.blob.core.windows.net/{container}/repo/ns/{rel}", AZURE_NS)
    assert not is_deletable(f"https://acct.blob.core.chinacloudapi.cn/container/repo/ns/{rel}", AZURE_NS)
    assert not is_deletable(f"https://x@acct.blob.core.windows.net/container/repo/ns/{rel}", AZURE_NS)
    assert not is_deletable(f"https://acct.blob.core.windows.net:444/container/repo/ns/{rel}", AZURE_NS)


@settings(max_examples=200, deadline=None)
@given(rel=relative, bucket=st.sampled_from(["other", "bucket2", "Bucket", "bucke"]))
def test_other_gcs_buckets_are_never_deletable(rel: str, bucket: str) -> None:
    assert not is_deletable(f"gs://{bucket}/repo/ns/{rel}", GCS_NS)
    assert not is_deletable(f"s3://bucket/repo/ns/{rel}", GCS_NS)
    assert not is_deletable(f"gs://bucket/repo/ns/{rel}", "s3://bucket/repo/ns")


@settings(max_examples=200, deadline=None)
@given(
    rel=relative,
    scheme=st.sampled_from(["https", "HTTPS", "http", "Http"]),
    host=st.sampled_from(["acct.blob.core.windows.net", "ACCT.BLOB.CORE.WINDOWS.NET", "Acct.Blob.Core.Windows.Net"]),
    ns_slashes=st.sampled_from(["", "/", "//"]),
)
def test_azure_scheme_and_host_case_do_not_matter(rel: str, scheme: str, host: str, ns_slashes: str) -> None:
    spelled = f"{scheme}://{host}/container/repo/ns/{rel}"
    canonical = f"https://acct.blob.core.windows.net/container/repo/ns/{rel}"
    assert is_deletable(spelled, AZURE_NS + ns_slashes) == is_deletable(canonical, AZURE_NS)
    assert is_deletable(canonical, f"{scheme}://{host}/container/repo/ns{ns_slashes}") == is_deletable(canonical, AZURE_NS)


@settings(max_examples=100, deadline=None)
@given(rel=relative, scheme=st.sampled_from(["gs", "GS", "Gs"]))
def test_gcs_scheme_case_does_not_matter(rel: str, scheme: str) -> None:
    assert is_deletable(f"{scheme}://bucket/repo/ns/{rel}", GCS_NS) == is_deletable(f"gs://bucket/repo/ns/{rel}", GCS_NS)


@pytest.mark.parametrize(
    "namespace",
    [
        "https://acct.blob.core.windows.net",
        "https://acct.blob.core.windows.net/",
        "https://acct.blob.core.windows.net//container/ns",
        "https://acct.blob.core.windows.net/..",
        "https://acct.blob.core.windows.net/%63ontainer/ns",
        "https://acct.blob.core.windows.net/Container/ns",
        "https://acct.blob.core.windows.net/_lakefs/ns",
    ],
)
def test_azure_namespace_without_a_valid_container_deletes_nothing(namespace: str) -> None:
    for uri in (
        "https://acct.blob.core.windows.net/container/ns/x",
        "https://acct.blob.core.windows.net/Container/ns/x",
        namespace.rstrip("/") + "/ns/data/x",
        namespace.rstrip("/") + "/x",
    ):
        assert not is_deletable(uri, namespace), uri


@pytest.mark.parametrize(
    ("uri", "namespace", "deletable"),
    [
        ("https://acct.blob.core.windows.net/container/ns/data/x", "https://acct.blob.core.windows.net/container/ns", True),
        ("https://acct.blob.core.windows.net/container/data/x", "https://acct.blob.core.windows.net/container", True),
        ("https://acct.blob.core.windows.net/container/_lakefs/x", "https://acct.blob.core.windows.net/container", False),
        ("https://acct.blob.core.windows.net/container/dummy", "https://acct.blob.core.windows.net/container", False),
        ("https://acct.blob.core.windows.net/container", "https://acct.blob.core.windows.net/container", False),
        ("https://acct.blob.core.windows.net/container2/x", "https://acct.blob.core.windows.net/container", False),
        ("https://acct.blob.core.windows.net/container/ns/%5F%6Cakefs/x", "https://acct.blob.core.windows.net/container/ns", False),
        ("https://acct.blob.core.windows.net/container/ns/a?b#c", "https://acct.blob.core.windows.net/container/ns", True),
        ("gs://bucket/ns/data/x", "gs://bucket/ns", True),
        ("gs://bucket/ns/_lakefs/x", "gs://bucket/ns", False),
        ("gs://bucket/ns/data\\..\\..\\_lakefs/x", "gs://bucket/ns", False),
        ("gs://bucket/x", "gs://bucket", True),
        ("gs://bucket/_lakefs", "gs://bucket", False),
    ],
)
def test_examples(uri: str, namespace: str, deletable: bool) -> None:
    assert is_deletable(uri, namespace) is deletable, unsafe_reason(uri, namespace)


def test_canonical_forms() -> None:
    assert canonical_namespace("HTTP://ACCT.blob.core.windows.net/container/ns/") == "https://acct.blob.core.windows.net/container/ns"
    assert canonical_namespace("GS://bucket/ns//") == "gs://bucket/ns"
    assert resolve_physical("data/x", "RELATIVE", "gs://b/ns/") == "gs://b/ns/data/x"
