"""Every store through the one interface, on real local servers: S3 (moto), Azure (Azurite) and
GCS (gcp-storage-emulator), each started on 127.0.0.1 and stopped at the end of the session.

Read (lakeFS's ``_lakefs/`` range files), list (streamed, deep and shallow), batch deletes that
re-check every address, recoverability (versioning / soft delete), and throttling through a proxy
answering SlowDown / ServerBusy / 429 to a share of the deletes: nothing lost, nothing deleted
twice, nothing outside the namespace or under ``_lakefs/`` touched.
"""

from __future__ import annotations

from typing import Callable

import pytest

from lakewarden.deleters import deleter_for
from lakewarden.errors import BadInput
from lakewarden.stores import ObjectMissing, StoreOptions, store_for
from store_emulators import ThrottleProxy
from store_worlds import STORES, World, endpoint, make_world


@pytest.fixture(scope="session")
def server(request: pytest.FixtureRequest) -> Callable[[str], str]:
    return lambda kind: endpoint(kind, request)


@pytest.fixture(params=STORES)
def world(request: pytest.FixtureRequest, server: Callable[[str], str]) -> World:
    return make_world(request.param, server(request.param))


def test_read_list_and_children(world: World) -> None:
    world.put_keys(["ns/_lakefs/range1", "ns/data/a/1", "ns/data/a/2", "ns/data/b/3", "ns/top", "nsx/outside"], b"payload")
    with store_for(world.namespace + "/", world.options) as store:
        assert store.read(world.uri("ns/_lakefs/range1")) == b"payload"
        assert store.read_key("_lakefs/range1") == b"payload"
        with pytest.raises(ObjectMissing):
            store.read(world.uri("ns/_lakefs/absent"))
        deep = sorted(store.list(world.namespace + "/"))
        assert [row.uri for row in deep] == [world.uri(k) for k in ["ns/_lakefs/range1", "ns/data/a/1", "ns/data/a/2", "ns/data/b/3", "ns/top"]]
        assert {row.size for row in deep} == {7} and all(row.last_modified.tzinfo is not None for row in deep)
        assert [row.uri for row in store.list(world.namespace + "/", deep=False)] == [world.uri("ns/top")]
        assert store.children(world.namespace + "/") == [world.uri("ns/_lakefs/"), world.uri("ns/data/")]
        assert store.children(world.uri("ns/data/")) == [world.uri("ns/data/a/"), world.uri("ns/data/b/")]
        assert store.children(world.namespace + "/", max_entries=1) is None


def test_batch_delete_rechecks_every_address(world: World) -> None:
    keep = ["ns/_lakefs/meta", "ns/dummy", "nsx/outside", "ns2/x"]
    world.put_keys(["ns/data/1", "ns/data/2", *keep])
    store = store_for(world.namespace, world.options)
    uris = [
        world.uri("ns/data/1"),
        world.uri("ns/data/never-written"),
        world.uri("ns/_lakefs/meta"),
        world.uri("ns/dummy"),
        world.uri("nsx/outside"),
        world.uri("ns/../ns2/x"),
        world.uri("ns/data/%2e%2e/%2e%2e/ns2/x"),
        world.namespace,
        world.uri("ns/data/2"),
    ]
    outcomes = store.delete_batch(uris)
    assert [o.uri for o in outcomes] == uris
    assert [o.status for o in outcomes] == ["deleted", "deleted"] + ["failed"] * 6 + ["deleted"]
    assert all(o.reason.startswith("unsafe") for o in outcomes[2:8])
    assert world.list_keys() == set(keep)
    with pytest.raises(ValueError, match="max_batch"):
        store.delete_batch([world.uri(f"ns/data/{i}") for i in range(store.max_batch + 1)])
    store.close()


def test_batch_limits() -> None:
    assert deleter_for("s3://b/ns").max_batch == 1000
    assert deleter_for("https://acct.blob.core.windows.net/container/ns").max_batch == 256
    assert deleter_for("gs://b/ns").max_batch == 100


def test_other_bucket_or_container_is_refused(world: World, server: Callable[[str], str]) -> None:
    other = make_world(world.kind, server(world.kind))
    other.put_keys(["ns/data/1"])
    outcomes = store_for(world.namespace, world.options).delete_batch([other.uri("ns/data/1")])
    assert outcomes[0].status == "failed" and "unsafe" in outcomes[0].reason
    assert other.list_keys() == {"ns/data/1"}


@pytest.mark.parametrize("kind", STORES)
def test_throttled_deletes_back_off_lose_nothing_and_delete_once(kind: str, server: Callable[[str], str]) -> None:
    world = make_world(kind, server(kind))
    total = {"s3": 2500, "azure": 600, "gcs": 250}[kind]  # several batches each
    keys = [f"ns/data/{i:05d}" for i in range(total)]
    world.put_keys(keys + ["ns/_lakefs/meta"])
    with ThrottleProxy(world.endpoint, kind, share=0.35) as proxy:
        deleter = deleter_for(world.namespace, **world.via(proxy.url).deleter_options(), max_concurrency=4, base_delay=0.001, max_delay=0.01, max_attempts=30)
        from concurrent.futures import ThreadPoolExecutor

        uris = [world.uri(k) for k in keys]
        batches = [uris[i : i + deleter.max_batch] for i in range(0, len(uris), deleter.max_batch)]
        with ThreadPoolExecutor(4) as pool:
            outcomes = [o for batch in pool.map(deleter.delete_batch, batches) for o in batch]
    assert [o.status for o in outcomes] == ["deleted"] * total, {o.reason for o in outcomes if o.status != "deleted"}
    assert proxy.throttled > 0
    assert deleter.throttle.throttled == proxy.throttled and deleter.throttle.lowest_limit < 4  # type: ignore[attr-defined]
    # every key reached the server exactly once: none lost, none deleted twice
    assert len(proxy.forwarded) == total and set(proxy.forwarded.values()) == {1}
    assert world.list_keys() == {"ns/_lakefs/meta"}


@pytest.mark.parametrize("kind", STORES)
def test_gives_up_loudly_when_always_throttled(kind: str, server: Callable[[str], str]) -> None:
    world = make_world(kind, server(kind))
    world.put_keys(["ns/data/1"])
    with ThrottleProxy(world.endpoint, kind, share=1.0) as proxy:
        deleter = deleter_for(world.namespace, **world.via(proxy.url).deleter_options(), base_delay=0.001, max_delay=0.002, max_attempts=3)
        [outcome] = deleter.delete_batch([world.uri("ns/data/1")])
    assert outcome.status == "failed" and outcome.reason.startswith("gave up after 3 attempts")
    assert proxy.throttled == 3 and world.list_keys() == {"ns/data/1"}


def test_recoverability(world: World) -> None:
    store = store_for(world.namespace, world.options)
    plain = store.recoverability()
    if world.kind == "gcs":
        # new buckets keep deleted objects 7 days (soft delete), as GCS does by default
        assert plain.recoverable is True and "soft delete" in plain.message
    else:
        assert plain.recoverable is False and plain.message == ""
    _turn_on_recoverability(world)
    turned_on = store_for(world.namespace, world.options).recoverability()
    assert turned_on.recoverable is True
    assert {"s3": "NoncurrentVersionExpiration", "azure": "soft delete", "gcs": "versioning"}[world.kind] in turned_on.message


def _turn_on_recoverability(world: World) -> None:
    if world.kind == "s3":
        from test_sweep_support import s3_client_for

        bucket = world.root.removeprefix("s3://")
        s3_client_for(world.endpoint).put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    elif world.kind == "azure":
        from azure.storage.blob import RetentionPolicy

        from store_emulators import azure_container

        service = azure_container(world.endpoint)._get_blob_service_client()  # noqa: SLF001
        service.set_service_properties(delete_retention_policy=RetentionPolicy(enabled=True, days=7))
    else:
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        client = storage.Client(project="test", credentials=AnonymousCredentials(), client_options={"api_endpoint": world.endpoint})
        bucket = client.get_bucket(world.root.removeprefix("gs://"))
        bucket.versioning_enabled = True
        bucket.patch()


def test_azure_endpoint_of_another_account_is_refused() -> None:
    store = store_for("https://acct.blob.core.windows.net/container/ns", StoreOptions(azure_endpoint="http://127.0.0.1:1/otheraccount", azure_account_key="a2V5"))
    with pytest.raises(BadInput, match="account 'otheraccount'"):
        store.read("https://acct.blob.core.windows.net/container/ns/_lakefs/x")
    cs = "DefaultEndpointsProtocol=http;AccountName=other;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:1/other;"
    store = store_for("https://acct.blob.core.windows.net/container/ns", StoreOptions(azure_connection_string=cs))
    with pytest.raises(BadInput, match="connection string is for account 'other'"):
        store.read("https://acct.blob.core.windows.net/container/ns/_lakefs/x")


def test_unknown_scheme_is_bad_input() -> None:
    with pytest.raises(BadInput, match="unsupported storage namespace"):
        store_for("wasb://x/y", StoreOptions())
    with pytest.raises(BadInput, match="not an Azure Blob Storage URI"):
        store_for("https://example.com/container/ns", StoreOptions())




@pytest.mark.parametrize(
    ("namespace", "options"),
    [
        ("s3://b/ns", StoreOptions(s3_endpoint="http://127.0.0.1:1")),
        ("https://acct.blob.core.windows.net/container/ns", StoreOptions(azure_endpoint="http://127.0.0.1:1/acct", azure_account_key="a2V5")),
        ("gs://b/ns", StoreOptions(gcs_endpoint="http://127.0.0.1:1")),
    ],
)
def test_deleters_travel_to_spark_tasks(namespace: str, options: StoreOptions) -> None:
    """Deleters are pickled into tasks: no client, lock or socket may travel, the settings must."""
    import pickle

    deleter = deleter_for(namespace, **options.deleter_options(), max_concurrency=3)
    deleter.throttle.on_throttled()  # type: ignore[attr-defined]
    copy = pickle.loads(pickle.dumps(deleter))
    assert copy.max_concurrency == 3 and copy.storage_namespace == namespace
    with copy.throttle.slot():  # type: ignore[attr-defined]
        pass
    assert "a2V5" not in repr(options)  # secrets never shown


def test_store_options_from_the_command_line() -> None:
    import argparse

    from lakewarden.stores import add_store_arguments, store_options_from_args

    parser = argparse.ArgumentParser()
    parser.add_argument("--local-blockstore")  # a job's own option (lakeFS's) is kept, not redefined
    add_store_arguments(parser)
    add_store_arguments(parser)  # idempotent: jobs may add S3's options themselves too
    args = parser.parse_args(["--s3-endpoint", "http://s3", "--azure-endpoint", "http://az/acct", "--gcs-endpoint", "http://gcs", "--gcs-project", "p", "--local-blockstore", "/x"])
    options = store_options_from_args(args)
    assert options == StoreOptions(s3_endpoint="http://s3", azure_endpoint="http://az/acct", gcs_endpoint="http://gcs", gcs_project="p", local_blockstore="/x")
    assert options.deleter_options() == {"endpoint_url": "http://s3", "azure_endpoint": "http://az/acct", "gcs_endpoint": "http://gcs", "gcs_project": "p", "local_blockstore": "/x"}
    assert StoreOptions.from_deleter_options(options.deleter_options()) == options


def test_sdk_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:9023")
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", "AccountName=a;AccountKey=k")
    monkeypatch.setenv("AZURE_STORAGE_KEY", "k2")
    options = StoreOptions()
    assert options.resolved_gcs_endpoint() == "http://127.0.0.1:9023"
    assert options.resolved_azure_connection_string() == "AccountName=a;AccountKey=k"
    assert options.resolved_azure_account_key() == "k2"
    assert StoreOptions(gcs_endpoint="http://x:1/").resolved_gcs_endpoint() == "http://x:1"
