"""``lakewarden extract`` of an ``s3://`` repository: ``_lakefs/`` (ranges, refs dump, GC
preparations) on a local S3 server (moto, 127.0.0.1), lakeFS faked by fake_lakefs.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from fake_lakefs import KEY, SECRET, S3Namespace, Scenario, build_scenario
from lakewarden.cli import main
from lakewarden.s3client import s3_client, s3_options
from test_sweep_support import S3_ENV, moto_endpoint, new_bucket, s3_client_for


@pytest.fixture
def s3_endpoint(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    for name, value in S3_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    return moto_endpoint(request)


@pytest.fixture
def s3_scenario(s3_endpoint: str) -> Iterator[tuple[Scenario, str]]:
    bucket = new_bucket(s3_endpoint)
    scenario = build_scenario(S3Namespace(s3_client_for(s3_endpoint), bucket, "repos/repo1"))
    server = scenario.fake.serve()
    try:
        yield scenario, server.endpoint
    finally:
        server.stop()


@pytest.fixture
def creds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAKECTL_CREDENTIALS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("LAKECTL_CONFIG_FILE", str(tmp_path / "no-lakectl.yaml"))


def _extract(endpoint: str, out: Path, cache: Path, *extra: str) -> int:
    return main(["extract", "--lakefs-endpoint", endpoint, "--repo", "repo1", "--out", str(out), "--cache-dir", str(cache), *extra])


def test_extract_from_s3_honours_s3_endpoint_and_region(
    s3_scenario: tuple[Scenario, str], s3_endpoint: str, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario, lakefs = s3_scenario
    fake = scenario.fake
    out = tmp_path / "snap"
    code = _extract(lakefs, out, tmp_path / "cache", "--s3-endpoint", s3_endpoint, "--s3-region", "us-east-1")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert fake.ns.uri.startswith("s3://")
    commits = {c["commit_id"]: c for c in pq.read_table(out / "commits.parquet").to_pylist()}
    assert set(commits) == set(fake.commits)
    assert commits[scenario.commits["M"]]["parents"] == [scenario.commits["s1"], scenario.commits["m2"]]
    assert {r["address"] for r in pq.read_table(out / "ranges.parquet").to_pylist()} == fake.addresses()
    staged = {r["address"] for r in pq.read_table(out / "staged.parquet").to_pylist()}
    assert staged == {scenario.addresses["D1"], scenario.addresses["B2"]}
    assert (out / "lakefs_gc_commits.csv").read_text().splitlines()[0] == "commit_id,expired,metarange_id"
    empty = fake.commits[scenario.commits["w1"]].meta_range_id
    rows = pq.read_table(out / "metaranges.parquet").to_pylist()
    assert {"meta_range_id": empty, "range_id": None} in rows


def test_extract_from_s3_takes_the_endpoint_from_the_environment(
    s3_scenario: tuple[Scenario, str], s3_endpoint: str, creds: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    scenario, lakefs = s3_scenario
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    assert _extract(lakefs, tmp_path / "snap", tmp_path / "cache") == 0
    assert pq.read_table(tmp_path / "snap" / "commits.parquet").num_rows == len(scenario.fake.commits)


def test_missing_s3_range_is_bad_input(
    s3_scenario: tuple[Scenario, str], s3_endpoint: str, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lakewarden.extract.ranges import read_metarange

    scenario, lakefs = s3_scenario
    metarange = scenario.fake.commits[scenario.commits["X"]].meta_range_id
    victim = read_metarange(scenario.fake.ns.get(f"_lakefs/{metarange}"), metarange)[0]
    scenario.fake.ns.delete(f"_lakefs/{victim}")
    out = tmp_path / "snap"
    code = _extract(lakefs, out, tmp_path / "cache", "--s3-endpoint", s3_endpoint)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"s3://{scenario.fake.ns.bucket}/repos/repo1/_lakefs/{victim}" in err and "missing from storage" in err  # type: ignore[attr-defined]
    assert not out.exists()


def test_s3_client_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in S3_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    client: Any = s3_client(s3_options())
    assert client.meta.region_name == "eu-west-3"
    assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": 5}
    custom: Any = s3_client(s3_options("http://127.0.0.1:9", "us-west-2"), max_attempts=1)
    assert custom.meta.region_name == "us-west-2" and custom.meta.endpoint_url == "http://127.0.0.1:9"
    assert custom.meta.config.s3["addressing_style"] == "path"
    assert custom.meta.config.retries["total_max_attempts"] == 1
    assert s3_client(s3_options("http://127.0.0.1:9", "us-west-2"), max_attempts=1) is custom  # cached
    assert s3_options() == {}
