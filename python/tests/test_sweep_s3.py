"""The sweep against a real S3 HTTP endpoint on 127.0.0.1 (moto server), deleting from Spark tasks."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

import report_files
import test_sweep
from lakewarden.sweep import SweepFailed
from test_sweep import Recording, read_outcomes_csv, sweep, write_report  # noqa: F401 - sweep is a fixture
from test_sweep_support import ThrottlingProxy, list_keys, moto_endpoint, new_bucket, put_keys, s3_client_for, s3_options

cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(test_sweep)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def s3_endpoint(request: pytest.FixtureRequest) -> str:
    return moto_endpoint(request)


def _marked(bucket: str, keys: list[str]) -> list[tuple[str, str, str]]:
    return [(key.removeprefix("ns/"), "RELATIVE", f"s3://{bucket}/{key}") for key in keys]


def test_sweep_s3_in_batches_with_throttling(sweep: Any, s3_endpoint: str, tmp_path: Path) -> None:
    bucket = new_bucket(s3_endpoint)
    keys = [f"ns/data/{i:05d}" for i in range(2100)]
    put_keys(s3_endpoint, bucket, keys + ["ns/_lakefs/meta", "ns/keep"])
    # one FULL s3a:// spelling of an in-namespace object, and one outside the namespace
    rows = _marked(bucket, keys[:-1]) + [(f"s3a://{bucket}/{keys[-1]}", "FULL", f"s3://{bucket}/{keys[-1]}")]
    rows.append((f"s3://{bucket}/elsewhere", "FULL", f"s3://{bucket}/elsewhere"))
    report = write_report(tmp_path / "report", f"s3a://{bucket}/ns/", rows)

    with ThrottlingProxy(s3_endpoint, reject_requests=2, slowdown_keys=1) as proxy:
        result = sweep(report, deleter_options=s3_options(proxy.url), parallelism=2, batch_size=1000)
        requests = proxy.delete_requests
    # 2100 safe keys in batches of <= 1000 keys: in one process 3 batches, over 2 Spark tasks 4;
    # plus 3 throttled attempts
    assert requests == (3 if sweep.keywords["engine"] == "process" else 4) + 3
    assert (result.num_deleted, result.num_failed) == (2100, 1)
    assert list_keys(s3_endpoint, bucket) == {"ns/_lakefs/meta", "ns/keep"}
    [failed] = [o for o in read_outcomes_csv(report) if o["status"] == "failed"]
    assert failed["address"].endswith("/elsewhere") and "outside" in failed["reason"]


def test_per_key_errors_recorded_then_retried_by_a_rerun(sweep: Any, s3_endpoint: str, tmp_path: Path) -> None:
    bucket = new_bucket(s3_endpoint)
    keys = [f"ns/data/{i}" for i in range(30)] + [f"ns/locked/{i}" for i in range(5)]
    put_keys(s3_endpoint, bucket, keys)
    client = s3_client_for(s3_endpoint)
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject", "Resource": f"arn:aws:s3:::{bucket}/ns/locked/*"}],
    }
    client.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
    report = write_report(tmp_path / "report", f"s3://{bucket}/ns", _marked(bucket, keys))

    first = sweep(report, deleter_options=s3_options(s3_endpoint), parallelism=2, batch_size=8)
    assert (first.num_deleted, first.num_failed, first.success) == (30, 5, False)
    failed = [o for o in read_outcomes_csv(report) if o["status"] == "failed"]
    assert {o["address"] for o in failed} == {f"locked/{i}" for i in range(5)}
    assert all("AccessDenied" in o["reason"] for o in failed)

    client.delete_bucket_policy(Bucket=bucket)
    second = sweep(report, deleter_options=s3_options(s3_endpoint))
    assert (second.num_attempted, second.num_deleted, second.num_failed, second.success) == (5, 35, 0, True)
    assert list_keys(s3_endpoint, bucket) == set()


def test_s3_sweep_killed_mid_way_resumes(sweep: Any, s3_endpoint: str, tmp_path: Path) -> None:
    bucket = new_bucket(s3_endpoint)
    keys = [f"ns/data/{i:04d}" for i in range(400)]
    put_keys(s3_endpoint, bucket, keys)
    report = write_report(tmp_path / "report", f"s3://{bucket}/ns", _marked(bucket, keys))
    options = s3_options(s3_endpoint)
    crash = Recording(str(tmp_path / "log1"), fail_after=3)
    Path(crash.log_dir).mkdir()

    with pytest.raises(SweepFailed):
        sweep(report, deleter_options=options, parallelism=2, batch_size=25, threads=4, deleter_factory=crash)

    recorded = {o["physical_address"] for o in read_outcomes_csv(report) if o["status"] == "deleted"}
    left = list_keys(s3_endpoint, bucket)
    assert recorded and left, "stopped part-way"
    assert {f"s3://{bucket}/{k}" for k in left}.isdisjoint(recorded)

    resume = Recording(str(tmp_path / "log2"))
    Path(resume.log_dir).mkdir()
    result = sweep(report, deleter_options=options, parallelism=2, batch_size=25, deleter_factory=resume)
    assert not set(resume.requested()) & recorded
    assert (result.num_deleted, result.num_failed, result.success) == (400, 0, True)
    assert list_keys(s3_endpoint, bucket) == set()
    assert report_files.summary(report)["num_deleted"] == 400
