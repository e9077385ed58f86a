"""Nothing under a namespace's ``_lakefs/`` is ever read as a range, marked or deleted.

lakeFS's own GC failed on files under ``_lakefs/`` that are not ranges or metaranges it wrote
(lakeFS issues #9055 and #8518: refs dumps saved there, as lakeFS's docs once suggested; other
tools' output). Here ``_lakefs/`` holds such strays, leftovers in the directory
prepare_uncommited writes to, and lakewarden's own ``_lakefs/retention/...`` outputs; extract
must read past all of them, uncommitted GC (listing or any inventory) must never mark one, and
a sweep must refuse one even when a report names it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fake_lakefs import SCENARIO_NOW, LocalNamespace, Namespace, S3Namespace, Scenario, build_scenario, use_scenario_credentials
from lakewarden.cli import main
from lakewarden.extract.gc_prepared import is_hidden_file
from lakewarden.extract.ranges import read_metarange

NOW = SCENARIO_NOW.isoformat().replace("+00:00", "Z")
OLD = SCENARIO_NOW - timedelta(days=30)  # strays old enough for any --min-age


def _parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


#: Files under _lakefs/ that lakeFS did not write as ranges or metaranges.
STRAYS: dict[str, bytes] = {
    "_lakefs/refs_dump/commits.json": b'{"commits_meta_range_id": "x"}\n',  # lakeFS #9055
    "_lakefs/tmp/upload-0001.tmp": b"partial upload",
    "_lakefs/" + "e" * 64: b"named like a range id, not an SSTable",
    "_lakefs/retention/gc/uncommitted/lakewarden-run/uncommitted/part-0.parquet": _parquet(
        pa.table({"physical_address": ["data/not-staged"], "size": [1], "last_modified": [1]})
    ),
    "_lakefs/retention/gc/unified/lakewarden-run/deleted/part-0.parquet": _parquet(pa.table({"address": ["data/x"]})),
    "_lakefs/retention/lc/lakewarden-run/summary.json": b"{}",
}
#: Leftovers inside the directory prepare_uncommited named: what Hadoop/Spark readers skip.
LEFTOVERS = ["_SUCCESS", ".part-0.parquet.crc", "_temporary/0/part-9.parquet"]


def _plant(fake_ns: Namespace, fake: Any, *, directory_marker: bool) -> None:
    """Strays in _lakefs/, and leftovers in each directory prepare_uncommited writes."""
    for key, data in STRAYS.items():
        fake_ns.put(key, data, OLD)
    original = fake._prepare_uncommitted

    def with_leftovers(token: str | None) -> Any:
        answer = original(token)
        directory = answer.gc_uncommitted_location[len(fake_ns.uri) + 1 :].rstrip("/") + "/"
        for name in LEFTOVERS:
            fake_ns.put(directory + name, b"not parquet", OLD)
        if directory_marker:  # what "create folder" tools leave on S3
            fake_ns.put(directory, b"", OLD)
        return answer

    fake._prepare_uncommitted = with_leftovers


@pytest.fixture
def creds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_scenario_credentials(monkeypatch, tmp_path)


def _extract(scenario: Scenario, out: Path, *extra: str) -> int:
    server = scenario.fake.serve()
    try:
        code = main(["extract", "--lakefs-endpoint", server.endpoint, "--repo", "repo1", "--out", str(out),
                     "--cache-dir", str(out.parent / "cache"), *extra])
    finally:
        server.stop()
    return code


def _assert_snapshot_ignores_strays(scenario: Scenario, out: Path) -> None:
    fake = scenario.fake
    listed = set()
    for commit in fake.commits.values():
        if commit.meta_range_id:
            listed |= set(read_metarange(fake.ns.get(f"_lakefs/{commit.meta_range_id}"), commit.meta_range_id))
    ranges = pq.read_table(out / "ranges.parquet").to_pylist()
    assert {r["range_id"] for r in ranges} == listed and "e" * 64 not in listed
    assert {r["address"] for r in ranges} == fake.addresses()
    staged = {r["address"] for r in pq.read_table(out / "staged.parquet").to_pylist()}
    assert staged == {scenario.addresses["D1"], scenario.addresses["B2"]}


def test_hidden_files_are_what_spark_skips() -> None:
    prefix = "_lakefs/retention/gc/uncommitted/run/uncommitted/"
    for name in LEFTOVERS + [""]:
        assert is_hidden_file(prefix + name, prefix), name
    assert not is_hidden_file(prefix + "01HXYZ", prefix)
    assert not is_hidden_file(prefix + "sub/part-0.parquet", prefix)


def test_extract_reads_past_strays_on_a_local_namespace(creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = build_scenario(LocalNamespace(tmp_path / "storage" / "ns"))
    _plant(scenario.fake.ns, scenario.fake, directory_marker=False)
    code = _extract(scenario, tmp_path / "snap")
    assert code == 0, capsys.readouterr().err
    _assert_snapshot_ignores_strays(scenario, tmp_path / "snap")


def test_extract_refuses_a_foreign_file_among_lakefs_staged_files(
    creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A visible file in prepare_uncommited's directory that is not Parquet could be a staged list
    lakeFS failed to write whole: skipping it could leave staged objects unprotected. One line."""
    scenario = build_scenario(LocalNamespace(tmp_path / "storage" / "ns"))
    fake = scenario.fake
    original = fake._prepare_uncommitted

    def with_foreign(token: str | None) -> Any:
        answer = original(token)
        fake.ns.put(answer.gc_uncommitted_location[len(fake.ns.uri) + 1 :].rstrip("/") + "/notes.txt", b"hello")
        return answer

    fake._prepare_uncommitted = with_foreign
    code = _extract(scenario, tmp_path / "snap")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "notes.txt" in err[0] and "not a Parquet file" in err[0], err
    assert not (tmp_path / "snap").exists()


@pytest.fixture
def s3_endpoint(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    from test_sweep_support import S3_ENV, moto_endpoint

    for name, value in S3_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    yield moto_endpoint(request)


def test_extract_reads_past_strays_on_s3(s3_endpoint: str, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same on S3, with a directory-marker object (a key ending in ``/``) among the leftovers."""
    from test_sweep_support import new_bucket, s3_client_for

    bucket = new_bucket(s3_endpoint)
    scenario = build_scenario(S3Namespace(s3_client_for(s3_endpoint), bucket, "repos/repo1"))
    _plant(scenario.fake.ns, scenario.fake, directory_marker=True)
    code = _extract(scenario, tmp_path / "snap", "--s3-endpoint", s3_endpoint, "--s3-region", "us-east-1")
    assert code == 0, capsys.readouterr().err
    _assert_snapshot_ignores_strays(scenario, tmp_path / "snap")


# -- uncommitted GC: listing, inventories, sweep (embedded Spark) --------------------------------


def _report_rows(report: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(report / "addresses.csv", newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def _under_lakefs(address: str) -> bool:
    from urllib.parse import unquote

    text = unquote(unquote(address)).replace("\\", "/").casefold()
    return "_lakefs" in text.split("/") or "/_lakefs/" in text


@pytest.mark.spark
def test_listing_never_marks_lakefs_and_the_sweep_refuses_it(
    spark: Any, test_state_dir: Path, creds: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A local namespace with strays in _lakefs/ (old enough for any --min-age): the listing
    leaves them out, so the dry run marks exactly the abandoned objects; a report edited to name
    them anyway (plainly and dot-segment-disguised) gets them refused by the sweep, one by one,
    while the abandoned objects go."""
    scenario = build_scenario(LocalNamespace(tmp_path / "storage" / "ns"))
    fake = scenario.fake
    _plant(fake.ns, fake, directory_marker=False)
    assert _extract(scenario, tmp_path / "snap") == 0, capsys.readouterr().err
    report = tmp_path / "report"
    code = main(["gc", "uncommitted", "--snapshot", str(tmp_path / "snap"), "--state", str(test_state_dir),
                 "--report", str(report), "--now", NOW, "--dry-run", "--clean"])
    assert code == 0, capsys.readouterr().err
    header, rows = _report_rows(report)
    assert {r["address"] for r in rows} == scenario.abandoned
    assert not any(_under_lakefs(r["physical_address"]) for r in rows)

    lakefs_keys = sorted(k for k in fake.ns.root.rglob("*") if k.is_file() and "_lakefs" in k.parts)  # type: ignore[attr-defined]
    assert len(lakefs_keys) > len(STRAYS)  # strays, leftovers, lakeFS's ranges and GC files
    named = [str(k.relative_to(fake.ns.root)) for k in lakefs_keys]  # type: ignore[attr-defined]
    named += ["data/../_lakefs/tmp/upload-0001.tmp", "data//..//_lakefs/refs_dump/commits.json"]
    with open(report / "addresses.csv", "a", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        for address in named:
            writer.writerow({**dict.fromkeys(header, ""), "address": address, "address_type": "RELATIVE",
                             "physical_address": f"{fake.ns.uri}/{address}"})
    capsys.readouterr()
    assert main(["sweep", "--report", str(report)]) == 1
    assert all(k.is_file() for k in lakefs_keys)  # nothing under _lakefs/ went
    assert not any(fake.ns.exists(a) for a in scenario.abandoned)  # the marked objects did
    with open(report / "sweep" / "outcomes.csv", newline="", encoding="utf-8") as handle:
        outcomes = {row["address"]: row for row in csv.DictReader(handle)}
    assert {a for a, o in outcomes.items() if o["status"] == "deleted"} == scenario.abandoned
    assert all(outcomes[a]["status"] == "failed" and outcomes[a]["reason"].startswith("unsafe:") for a in named)


@pytest.mark.spark
@pytest.mark.parametrize("kind", ["azure", "gcs"])
def test_cloud_inventories_listing_lakefs_mark_none_of_it(spark: Any, test_state_dir: Path, tmp_path: Path, kind: str) -> None:
    """An Azure Blob Inventory or a GCS inventory report lists _lakefs/ like any prefix (in several
    spellings here): the job marks the abandoned object and none of those."""
    from test_gc_uncommitted_support import Repo
    from test_inventories import AZ_NS, GS_NS, _azure, _gcs

    namespace, prefix = {"azure": (AZ_NS, "container/repo/ns/"), "gcs": (GS_NS, "repo/ns/")}[kind]
    lakefs = ["_lakefs/range", "_LAKEFS/x", "%5Flakefs/y", "data/../_lakefs/z", "_lakefs", "_lakefs/retention/gc/uncommitted/r/uncommitted/p"]
    names = ["data/abandoned", *lakefs]
    if kind == "azure":
        rows: list[dict[str, Any]] = [
            {"Name": prefix + n, "Content-Length": "5", "Last-Modified": "2026-01-01T00:00:00Z", "Deleted": "false",
             "Snapshot": "", "IsCurrentVersion": "true"} for n in names
        ]
        manifest = _azure(tmp_path, "csv", rows)
    else:
        rows = [{"project": "p", "bucket": "bucket", "name": prefix + n, "size": "5", "updated": "2026-01-01T00:00:00Z"} for n in names]
        manifest = _gcs(tmp_path, "csv", rows)
    repo = Repo(tmp_path / "repo", namespace=namespace, write_objects=False, genesis=False)
    repo.write_snapshot()
    report = tmp_path / "report"
    code = main(["gc", "uncommitted", "--snapshot", str(repo.snapshot_dir), "--state", str(test_state_dir), "--report",
                 str(report), "--inventory", str(manifest), "--now", "2026-01-02T15:04:05Z", "--dry-run", "--clean"])
    assert code == 0
    _, marked = _report_rows(report)
    assert [r["physical_address"] for r in marked] == [f"{namespace}/data/abandoned"]
