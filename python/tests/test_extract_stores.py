"""``lakewarden extract`` of repositories on Azure and GCS namespaces: lakeFS's ``_lakefs/``
range and metarange files read from Azurite / gcp-storage-emulator (127.0.0.1), lakeFS faked
by fake_lakefs.py. Endpoints come from the SDKs' own variables (``AZURE_STORAGE_CONNECTION_STRING``,
``STORAGE_EMULATOR_HOST``), as on a machine configured for those clouds."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Callable

import pyarrow.parquet as pq
import pytest

from fake_lakefs import KEY, SECRET, Namespace, Scenario, build_scenario
from lakewarden.cli import main
from store_emulators import AZURITE_ACCOUNT, AZURITE_KEY
from store_worlds import World, endpoint, make_world


class WorldNamespace(Namespace):
    """A repository's namespace ``<bucket or container>/repos/repo1`` on an emulator."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.uri = f"{world.root}/repos/repo1"

    def _key(self, key: str) -> str:
        return f"repos/repo1/{key}"

    def put(self, key: str, data: bytes, at: datetime | None = None) -> None:
        self.world.put(self._key(key), data)

    def get(self, key: str) -> bytes:
        return bytes(self.world.get(self._key(key)))

    def exists(self, key: str) -> bool:
        return self._key(key) in self.world.list_keys()

    def delete(self, key: str) -> None:
        self.world.delete(self._key(key))


@pytest.fixture(scope="session")
def server(request: pytest.FixtureRequest) -> Callable[[str], str]:
    return lambda kind: endpoint(kind, request)


@pytest.fixture(params=["azure", "gcs"])
def scenario(request: pytest.FixtureRequest, server: Callable[[str], str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[Scenario, str]]:
    kind = request.param
    world = make_world(kind, server(kind))
    if kind == "azure":
        monkeypatch.setenv(
            "AZURE_STORAGE_CONNECTION_STRING",
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};BlobEndpoint={world.endpoint};",
        )
    else:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", world.endpoint)
    monkeypatch.setenv("LAKECTL_CREDENTIALS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("LAKECTL_CONFIG_FILE", str(tmp_path / "no-lakectl.yaml"))
    built = build_scenario(WorldNamespace(world))
    served = built.fake.serve()
    try:
        yield built, served.endpoint
    finally:
        served.stop()


def _extract(endpoint_url: str, out: Path, cache: Path) -> int:
    return main(["extract", "--lakefs-endpoint", endpoint_url, "--repo", "repo1", "--out", str(out), "--cache-dir", str(cache)])


def test_extract_reads_ranges_from_the_store(scenario: tuple[Scenario, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    built, lakefs = scenario
    out = tmp_path / "snap"
    code = _extract(lakefs, out, tmp_path / "cache")
    assert code == 0, capsys.readouterr().err
    assert {c["commit_id"] for c in pq.read_table(out / "commits.parquet").to_pylist()} == set(built.fake.commits)
    assert {r["address"] for r in pq.read_table(out / "ranges.parquet").to_pylist()} == built.fake.addresses()


def test_missing_range_is_one_line_of_bad_input(scenario: tuple[Scenario, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lakewarden.extract.ranges import read_metarange

    built, lakefs = scenario
    metarange = built.fake.commits[built.commits["X"]].meta_range_id
    victim = read_metarange(built.fake.ns.get(f"_lakefs/{metarange}"), metarange)[0]
    built.fake.ns.delete(f"_lakefs/{victim}")
    code = _extract(lakefs, tmp_path / "snap", tmp_path / "cache")
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert f"{built.fake.ns.uri}/_lakefs/{victim}" in err and "missing from storage" in err
