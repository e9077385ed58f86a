"""S3 backend against a real S3 HTTP endpoint on 127.0.0.1 (moto server mode)."""

from __future__ import annotations

import json

import pytest

from lakewarden.deleters.s3 import S3Deleter
from test_sweep_support import ThrottlingProxy, list_keys, moto_endpoint, new_bucket, put_keys, s3_client_for, s3_options


@pytest.fixture(scope="session")
def s3_endpoint(request: pytest.FixtureRequest) -> str:
    return moto_endpoint(request)


def _deleter(bucket: str, endpoint: str, **kwargs: object) -> S3Deleter:
    return S3Deleter(f"s3://{bucket}/ns", sleep=lambda _s: None, **s3_options(endpoint), **kwargs)  # type: ignore[arg-type]


def test_batch_of_1000_in_one_request(s3_endpoint: str) -> None:
    bucket = new_bucket(s3_endpoint)
    keys = [f"ns/data/{i:05d}" for i in range(1000)] + ["ns/_lakefs/meta", "other/x"]
    put_keys(s3_endpoint, bucket, keys)
    deleter = _deleter(bucket, s3_endpoint)
    outcomes = deleter.delete_batch([f"s3://{bucket}/{k}" for k in keys[:1000]])
    assert deleter.requests == 1
    assert {o.status for o in outcomes} == {"deleted"} and len(outcomes) == 1000
    assert list_keys(s3_endpoint, bucket) == {"ns/_lakefs/meta", "other/x"}
    with pytest.raises(ValueError, match="max_batch"):
        deleter.delete_batch([f"s3://{bucket}/ns/data/{i}" for i in range(1001)])


def test_missing_keys_count_as_deleted(s3_endpoint: str) -> None:
    bucket = new_bucket(s3_endpoint)
    put_keys(s3_endpoint, bucket, ["ns/a"])
    deleter = _deleter(bucket, s3_endpoint)
    uris = [f"s3://{bucket}/ns/a", f"s3a://{bucket}/ns/never"]
    assert [o.status for o in deleter.delete_batch(uris)] == ["deleted", "deleted"]
    assert [o.status for o in deleter.delete_batch(uris)] == ["deleted", "deleted"]


def test_unsafe_uris_are_never_sent(s3_endpoint: str) -> None:
    bucket = new_bucket(s3_endpoint)
    other = new_bucket(s3_endpoint)
    put_keys(s3_endpoint, bucket, ["ns/_lakefs/meta", "ns2/x", "ns/data/ok"])
    put_keys(s3_endpoint, other, ["ns/data/ok"])
    deleter = _deleter(bucket, s3_endpoint)
    uris = [
        f"s3://{bucket}/ns/_lakefs/meta",
        f"s3://{bucket}/ns/../ns2/x",
        f"s3://{bucket}/ns2/x",
        f"s3://{other}/ns/data/ok",
        f"s3://{bucket}/ns",
        f"s3://{bucket}/ns/data/ok",
    ]
    outcomes = deleter.delete_batch(uris)
    assert [o.status for o in outcomes] == ["failed"] * 5 + ["deleted"]
    assert list_keys(s3_endpoint, bucket) == {"ns/_lakefs/meta", "ns2/x"}
    assert list_keys(s3_endpoint, other) == {"ns/data/ok"}


def test_per_key_errors_are_recorded(s3_endpoint: str) -> None:
    """A bucket policy denies some keys: DeleteObjects answers 200 with per-key AccessDenied."""
    bucket = new_bucket(s3_endpoint)
    keys = [f"ns/data/{i}" for i in range(6)] + [f"ns/locked/{i}" for i in range(4)]
    put_keys(s3_endpoint, bucket, keys)
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject", "Resource": f"arn:aws:s3:::{bucket}/ns/locked/*"}
        ],
    }
    s3_client_for(s3_endpoint).put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
    deleter = _deleter(bucket, s3_endpoint)
    outcomes = deleter.delete_batch([f"s3://{bucket}/{k}" for k in keys])
    by_uri = {o.uri.rsplit(bucket + "/", 1)[1]: o for o in outcomes}
    assert all(by_uri[k].status == "deleted" for k in keys[:6])
    assert all(by_uri[k].status == "failed" and "AccessDenied" in by_uri[k].reason for k in keys[6:])
    assert deleter.requests == 1, "a non-retryable per-key error is not retried"
    assert list_keys(s3_endpoint, bucket) == set(keys[6:])


def test_backoff_on_503_slowdown(s3_endpoint: str) -> None:
    bucket = new_bucket(s3_endpoint)
    keys = [f"ns/data/{i}" for i in range(50)]
    put_keys(s3_endpoint, bucket, keys)
    sleeps: list[float] = []
    with ThrottlingProxy(s3_endpoint, reject_requests=3) as proxy:
        deleter = S3Deleter(f"s3://{bucket}/ns", sleep=sleeps.append, base_delay=0.01, **s3_options(proxy.url))
        outcomes = deleter.delete_batch([f"s3://{bucket}/{k}" for k in keys])
        assert proxy.delete_requests == 4
    assert {o.status for o in outcomes} == {"deleted"}
    assert len(sleeps) == 3 and all(0 <= s <= 0.01 * 2**i for i, s in enumerate(sleeps, start=1))
    assert list_keys(s3_endpoint, bucket) == set()


def test_per_key_slowdown_is_retried_then_succeeds(s3_endpoint: str) -> None:
    bucket = new_bucket(s3_endpoint)
    keys = [f"ns/data/{i}" for i in range(20)]
    put_keys(s3_endpoint, bucket, keys)
    with ThrottlingProxy(s3_endpoint, slowdown_keys=2) as proxy:
        deleter = _deleter(bucket, proxy.url)
        outcomes = deleter.delete_batch([f"s3://{bucket}/{k}" for k in keys])
        assert proxy.delete_requests == 3
    assert {o.status for o in outcomes} == {"deleted"}
    assert list_keys(s3_endpoint, bucket) == set()


def test_gives_up_after_max_attempts_and_records_why(s3_endpoint: str) -> None:
    bucket = new_bucket(s3_endpoint)
    put_keys(s3_endpoint, bucket, ["ns/a", "ns/b"])
    with ThrottlingProxy(s3_endpoint, reject_requests=10) as proxy:
        deleter = _deleter(bucket, proxy.url, max_attempts=3)
        outcomes = deleter.delete_batch([f"s3://{bucket}/ns/a", f"s3://{bucket}/ns/b"])
        assert proxy.delete_requests == 3
    assert [o.status for o in outcomes] == ["failed", "failed"]
    assert "SlowDown" in outcomes[0].reason and "3 attempts" in outcomes[0].reason
    assert list_keys(s3_endpoint, bucket) == {"ns/a", "ns/b"}


def test_unreachable_endpoint_fails_every_key_without_raising() -> None:
    deleter = S3Deleter("s3://b/ns", sleep=lambda _s: None, max_attempts=2, connect_timeout=1, **s3_options("http://127.0.0.1:9"))
    outcomes = deleter.delete_batch(["s3://b/ns/a"])
    assert outcomes[0].status == "failed" and "connection" in outcomes[0].reason


def test_odd_keys_round_trip(s3_endpoint: str) -> None:
    bucket = new_bucket(s3_endpoint)
    keys = ["ns/sp ace", "ns/plus+sign", "ns/pct%20", "ns/q?x#y", "ns/ünï/çødé", "ns/amp&<lt>", "ns/ctl\x01char"]
    put_keys(s3_endpoint, bucket, keys)
    outcomes = _deleter(bucket, s3_endpoint).delete_batch([f"s3://{bucket}/{k}" for k in keys])
    assert [o.status for o in outcomes] == ["deleted"] * len(keys), outcomes
    assert list_keys(s3_endpoint, bucket) == set()
