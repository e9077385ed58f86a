"""The store options on the command line (no Spark): every job, ``extract`` and ``lakewarden
sweep`` take them; a malformed option, or one that cannot address the namespace, is exit 2 with
one line naming it and nothing written or deleted; the S3 options keep their names; and a sweep
says when its deletes leave recoverable versions (S3 versioning here, on the local S3 server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakewarden.cli import build_parser, main
import report_files
from store_emulators import AZURITE_KEY
from test_sweep import write_report
from test_sweep_support import S3_ENV, list_keys, moto_endpoint, new_bucket, put_keys, s3_client_for

JOBS = (["gc", "committed"], ["gc", "uncommitted"], ["lifecycle"])
STORE_FLAGS = (
    "--s3-endpoint", "--s3-region", "--azure-endpoint", "--azure-connection-string", "--azure-account-key",
    "--gcs-endpoint", "--gcs-project", "--local-blockstore",
)


@pytest.mark.parametrize("command", [*JOBS, ["extract"], ["sweep"]], ids=lambda c: " ".join(c))
def test_every_command_takes_every_store_option(command: list[str]) -> None:
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices[command[0]]  # noqa: SLF001 - argparse has no public lookup
    if len(command) > 1:
        sub = sub._subparsers._group_actions[0].choices[command[1]]  # noqa: SLF001
    flags = set(sub._option_string_actions)  # noqa: SLF001
    assert set(STORE_FLAGS) <= flags


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--s3-endpoint", "localhost:9000/x"),  # no scheme: boto3 would fail deep inside a task
        ("--azure-endpoint", "ftp://127.0.0.1/devstoreaccount1"),
        ("--gcs-endpoint", "http://:80"),
        ("--azure-account-key", " "),
    ],
)
def test_malformed_option_is_one_line_naming_it(flag: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = write_report(tmp_path / "report", (tmp_path / "ns").as_uri(), [("a", "RELATIVE", (tmp_path / "ns" / "a").as_uri())])
    (tmp_path / "ns").mkdir()
    (tmp_path / "ns" / "a").write_bytes(b"x")
    commands = [
        ["sweep", "--report", str(report), "--state", str(tmp_path / "state")],
        ["extract", "--lakefs-endpoint", "http://127.0.0.1:9", "--repo", "r", "--out", str(tmp_path / "snap")],
        # a job stops before Spark starts and before the snapshot is read
        ["gc", "committed", "--snapshot", str(tmp_path / "no-snapshot"), "--state", str(tmp_path / "state"), "--dry-run"],
    ]
    for command in commands:
        capsys.readouterr()
        assert main([*command, flag, value]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and flag in err, err
    assert (tmp_path / "ns" / "a").exists() and not (report / "sweep").exists()
    assert not (tmp_path / "snap").exists()


def test_azure_endpoint_of_another_account_stops_the_sweep_before_it_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    namespace = "https://acct.blob.core.windows.net/container/ns"
    report = write_report(tmp_path / "report", namespace, [("a", "RELATIVE", f"{namespace}/a")])
    code = main(["sweep", "--report", str(report), "--azure-endpoint", "http://127.0.0.1:9/otheraccount", "--azure-account-key", AZURITE_KEY])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "--azure-endpoint" in err and "account 'otheraccount'" in err
    assert not (report / "sweep").exists(), "nothing started: no lock, no outcome, no summary change"
    assert report_files.summary(report)["num_deleted"] == 0


@pytest.fixture
def s3_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in S3_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


@pytest.mark.parametrize("versioned", [False, True])
def test_sweep_says_when_deletes_leave_recoverable_versions(
    versioned: bool, s3_env: None, request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint = moto_endpoint(request)
    bucket = new_bucket(endpoint)
    if versioned:
        s3_client_for(endpoint).put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    keys = [f"ns/data/{i}" for i in range(5)]
    put_keys(endpoint, bucket, [*keys, "ns/keep"])
    rows = [(key.removeprefix("ns/"), "RELATIVE", f"s3://{bucket}/{key}") for key in keys]
    report = write_report(tmp_path / "report", f"s3://{bucket}/ns", rows)

    # the S3 options keep their names (docs/contract.md §1)
    code = main(["sweep", "--report", str(report), "--state", str(tmp_path / "state"), "--s3-endpoint", endpoint, "--s3-region", "us-east-1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.strip().splitlines()
    result = json.loads(lines[-1])
    assert result["num_deleted"] == 5 and list_keys(endpoint, bucket) == {"ns/keep"}
    summary = report_files.summary(report)
    sweep_summary = report_files.summary(report / "sweep")
    if versioned:
        assert result["recoverable"] is True and summary["recoverable"] is True and sweep_summary["recoverable"] is True
        message = result["recoverability"]
        assert f"bucket {bucket}" in message and "NoncurrentVersionExpiration" in message
        assert summary["recoverability"] == sweep_summary["recoverability"] == message
        assert lines[:-1] == [f"note: deleted objects stay recoverable and still cost storage: {message}"]
        # as the note says: the objects are still there, as noncurrent versions
        versions = s3_client_for(endpoint).list_object_versions(Bucket=bucket, Prefix="ns/data/")
        assert {v["Key"] for v in versions.get("Versions", [])} == set(keys)
    else:
        assert result["recoverable"] is False and result["recoverability"] == ""
        assert summary["recoverable"] is False and lines[:-1] == []



@pytest.mark.parametrize(
    "argv, expected",
    [
        # the S3 options keep the names the S3 deleter has always taken
        (["--s3-endpoint", "http://127.0.0.1:9000", "--s3-region", "eu-west-1"], {"endpoint_url": "http://127.0.0.1:9000", "region_name": "eu-west-1"}),
        (["--azure-endpoint", "http://127.0.0.1:10000/devstoreaccount1", "--azure-account-key", AZURITE_KEY],
         {"azure_endpoint": "http://127.0.0.1:10000/devstoreaccount1", "azure_account_key": AZURITE_KEY}),
        (["--gcs-endpoint", "127.0.0.1:4443", "--gcs-project", "p"], {"gcs_endpoint": "127.0.0.1:4443", "gcs_project": "p"}),
        (["--local-blockstore", "/srv/lakefs"], {"local_blockstore": "/srv/lakefs"}),
        ([], {}),
    ],
)
def test_a_job_hands_its_sweep_the_store_options(argv: list[str], expected: dict[str, str]) -> None:
    """What a job run without --dry-run gives the sweep (lakewarden.jobs.shape), from the
    options the command line builds (jobs.common.run_options_from_args)."""
    from lakewarden.jobs.common import run_options_from_args
    from lakewarden.jobs.gc_committed import CommittedGc
    from lakewarden.jobs.gc_uncommitted import UncommittedGc
    from lakewarden.jobs.gc_unified import UnifiedGc
    from lakewarden.jobs.lifecycle import Lifecycle

    jobs = (
        (["gc", "committed"], CommittedGc()), (["gc", "uncommitted"], UncommittedGc()), (["gc"], UnifiedGc()),
        (["lifecycle", "--policy", "p.json"], Lifecycle()),
    )
    for command, job in jobs:
        args = build_parser().parse_args([*command, "--snapshot", "snap", *argv])
        assert job.deleter_options(None, run_options_from_args(args)) == expected
