"""One fresh bucket/container per test on each store's local server, behind one small interface,
so every store test runs unchanged on S3 (moto), Azure (Azurite) and GCS (gcp-storage-emulator)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

import pytest

from lakewarden.stores import StoreOptions
from store_emulators import AZURITE_ACCOUNT, AZURITE_KEY, azure_container, gcs_bucket, put_many, start_azurite, start_gcs_emulator
from test_sweep_support import moto_endpoint, new_bucket, put_keys, s3_client_for, s3_options

STORES = ("s3", "azure", "gcs")
_EMULATORS: dict[str, Any] = {}


def endpoint(kind: str, request: pytest.FixtureRequest) -> str:
    """The session's server for ``kind``, started on first use and stopped when ``request``'s
    (session-scoped) fixture ends."""
    if kind == "s3":
        return moto_endpoint(request)
    if kind not in _EMULATORS:
        emulator = start_azurite() if kind == "azure" else start_gcs_emulator()
        _EMULATORS[kind] = emulator

        def stop() -> None:
            _EMULATORS.pop(kind).stop()

        request.addfinalizer(stop)  # a session-scoped fixture's request: at the session's end
    return str(_EMULATORS[kind].url)


@dataclass
class World:
    """A fresh bucket (S3, GCS) or container (Azure) with the namespace ``<root>/ns``."""

    kind: str
    endpoint: str
    root: str  # the URI of the bucket/container, without a trailing slash
    options: StoreOptions
    put: Callable[[str, bytes], None]
    list_keys: Callable[[], set[str]]
    get: Callable[[str], bytes]
    delete: Callable[[str], None]

    @property
    def namespace(self) -> str:
        return f"{self.root}/ns"

    def uri(self, key: str) -> str:
        return f"{self.root}/{key}"

    def put_keys(self, keys: list[str], body: bytes = b"x") -> None:
        if self.kind == "s3":  # straight into moto's store (test_sweep_support.put_keys)
            put_keys(self.endpoint, self.root.removeprefix("s3://"), keys, body)
            return
        put_many(lambda key: self.put(key, body), keys)

    def via(self, url: str) -> StoreOptions:
        """The options with the endpoint replaced (a proxy in front of the server)."""
        if self.kind == "s3":
            return replace(self.options, s3_endpoint=url)
        if self.kind == "azure":
            return replace(self.options, azure_endpoint=url)
        return replace(self.options, gcs_endpoint=url)


def make_world(kind: str, url: str) -> World:
    if kind == "s3":
        bucket = new_bucket(url)
        client = s3_client_for(url)
        options = StoreOptions.from_s3_options(s3_options(url))

        def s3_keys() -> set[str]:
            pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
            return {obj["Key"] for page in pages for obj in page.get("Contents", [])}

        return World(
            kind, url, f"s3://{bucket}", options,
            lambda k, b: client.put_object(Bucket=bucket, Key=k, Body=b),
            s3_keys,
            lambda k: client.get_object(Bucket=bucket, Key=k)["Body"].read(),
            lambda k: client.delete_object(Bucket=bucket, Key=k),
        )
    if kind == "azure":
        container = azure_container(url)
        options = StoreOptions(azure_endpoint=url, azure_account_key=AZURITE_KEY)
        root = f"https://{AZURITE_ACCOUNT}.blob.core.windows.net/{container.container_name}"
        return World(
            kind, url, root, options,
            lambda k, b: container.upload_blob(k, b, overwrite=True),
            lambda: {blob.name for blob in container.list_blobs()},
            lambda k: container.download_blob(k).readall(),
            lambda k: container.delete_blob(k),
        )
    bucket = gcs_bucket(url)
    options = StoreOptions(gcs_endpoint=url)
    return World(
        kind, url, f"gs://{bucket.name}", options,
        lambda k, b: bucket.blob(k).upload_from_string(b),
        lambda: {blob.name for blob in bucket.client.list_blobs(bucket.name)},
        lambda k: bucket.blob(k).download_as_bytes(),
        lambda k: bucket.delete_blob(k),
    )
