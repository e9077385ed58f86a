"""The sweep (in-process engine) on Azure and GCS namespaces, through a proxy that throttles a
share of the batch deletes (ServerBusy / 429): every marked address recorded, nothing outside the
namespace or under ``_lakefs/`` touched (stray files there included, lakeFS#9055)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from lakewarden.sweep import sweep_report
from store_emulators import ThrottleProxy
from store_worlds import endpoint, make_world
from test_sweep import read_outcomes_csv, write_report


@pytest.fixture(scope="session")
def server(request: pytest.FixtureRequest) -> Callable[[str], str]:
    return lambda kind: endpoint(kind, request)


@pytest.mark.parametrize("kind", ["azure", "gcs"])
def test_sweep_with_throttling(kind: str, server: Callable[[str], str], tmp_path: Path) -> None:
    world = make_world(kind, server(kind))
    keys = [f"ns/data/{i:04d}" for i in range(300)]
    kept = ["ns/_lakefs/stray-parquet", "ns/_lakefs/range", "ns/dummy", "nsx/outside"]
    world.put_keys(keys + kept)
    rows = [(key.removeprefix("ns/"), "RELATIVE", world.uri(key)) for key in keys]
    rows += [
        ("_lakefs/stray-parquet", "RELATIVE", world.uri("ns/_lakefs/stray-parquet")),
        ("dummy", "RELATIVE", world.uri("ns/dummy")),
        (world.uri("nsx/outside"), "FULL", world.uri("nsx/outside")),
        ("data/../../nsx/outside", "RELATIVE", world.uri("ns/data/../../nsx/outside")),
    ]
    report = write_report(tmp_path / "report", world.namespace + "/", rows)
    with ThrottleProxy(world.endpoint, kind, share=0.3) as proxy:
        options = world.via(proxy.url).deleter_options()
        result = sweep_report(None, report, deleter_options=options, engine="process", threads=4)
    assert (result.num_deleted, result.num_failed) == (300, 4)
    assert proxy.throttled > 0 and set(proxy.forwarded.values()) == {1} and len(proxy.forwarded) == 300
    assert world.list_keys() == set(kept)
    failed = {o["address"]: o["reason"] for o in read_outcomes_csv(report) if o["status"] == "failed"}
    assert len(failed) == 4 and all("unsafe" in reason or "outside" in reason or "_lakefs" in reason for reason in failed.values()), failed
