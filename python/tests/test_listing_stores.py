"""Listing Azure and GCS namespaces in Spark tasks (the storage inventory without a report):
every object strictly inside the namespace, never ``_lakefs/`` or lakeFS's ``dummy``, never
another namespace's objects that share its prefix."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from lakewarden.inventory import list_namespace, plan_listing, storage_inventory
from store_worlds import endpoint, make_world

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def server(request: pytest.FixtureRequest) -> Callable[[str], str]:
    return lambda kind: endpoint(kind, request)


@pytest.mark.parametrize("kind", ["azure", "gcs"])
def test_list_namespace(spark: Any, server: Callable[[str], str], kind: str) -> None:
    world = make_world(kind, server(kind))
    inside = [f"ns/data/g{i % 3}/obj-{i}" for i in range(12)] + ["ns/top", "ns/data/_lakefs/not-metadata"]
    world.put_keys(inside + ["ns/_lakefs/range", "ns/_LAKEFS/x", "ns/dummy", "nsx/outside", "other/x"], b"abc")
    units = plan_listing(world.namespace, store_options=world.options, target_units=4)
    store_root = "/".join(world.root.split("/")[:3]) + "/"  # scheme://bucket-or-host/
    unit_uris = [(store_root + unit.prefix).casefold() for unit in units]
    assert units and not any(uri.startswith(world.uri("ns/_lakefs/").casefold()) for uri in unit_uris), units
    rows = list_namespace(spark, world.namespace + "/", store_options=world.options, parallelism=3).collect()
    assert sorted(row.physical_address for row in rows) == sorted(world.uri(key) for key in inside)
    assert {row.size for row in rows} == {3} and all(row.last_modified is not None for row in rows)
    # the job's entry point: no inventory report -> a listing
    via_inventory = storage_inventory(spark, world.namespace, store_options=world.options).count()
    assert via_inventory == len(inside)
