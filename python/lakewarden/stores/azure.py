"""Azure Blob Storage namespaces, as lakeFS writes them:
``https://ACCOUNT.blob.core.windows.net/CONTAINER/PATH`` (also ``http://``, and the national
clouds' ``blob.core.chinacloudapi.cn`` / ``blob.core.usgovcloudapi.net``).

The namespace names the account (host's first label), the container (first path segment) and a
prefix. Where lakewarden *connects* may differ (Azurite, a private endpoint): ``--azure-endpoint``
or the connection string's ``BlobEndpoint``, as lakeFS's ``blockstore.azure.test_endpoint_url``.
Either must name the namespace's account: a mismatch would read and delete in another account,
so it is refused as bad input rather than followed.

Credentials, first match wins: a connection string (``--azure-connection-string``, else
``AZURE_STORAGE_CONNECTION_STRING``), an account key (``--azure-account-key``, else
``AZURE_STORAGE_KEY``), else azure-identity's ``DefaultAzureCredential`` (environment, managed
identity, Azure CLI login...).
"""

from __future__ import annotations

import builtins
import re
import threading
from dataclasses import dataclass
from datetime import timezone
from typing import Any, Iterator
from urllib.parse import urlsplit

from lakewarden.errors import BadInput
from lakewarden.safety import container_problem, parse_uri
from lakewarden.stores.base import ListedObject, ObjectMissing, ObjectStore, Recoverability, StoreError
from lakewarden.stores.options import StoreOptions

__all__ = ["AzureLocation", "AzureStore", "azure_location", "container_client"]

#: ``ACCOUNT.blob.DOMAIN``: what lakeFS accepts as an Azure namespace host.
_HOST = re.compile(r"(?P<account>[a-z0-9]{3,24})\.blob\.(?P<domain>[a-z0-9.-]+)")

_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


@dataclass(frozen=True)
class AzureLocation:
    """A parsed Azure URI: ``https://HOST/CONTAINER/NAME``."""

    host: str
    account: str
    container: str
    name: str  # blob name or prefix, raw (may be empty)

    def uri(self, name: str) -> str:
        return f"https://{self.host}/{self.container}/{name}"


def azure_location(uri: str) -> AzureLocation:
    """Split an Azure URI; :class:`BadInput` when it is not ``https://ACCOUNT.blob.DOMAIN/CONTAINER/...``."""
    try:
        parsed = parse_uri(uri)
    except ValueError as exc:
        raise BadInput(str(exc), field="storage_namespace") from exc
    match = _HOST.fullmatch(parsed.authority)
    if parsed.scheme != "https" or match is None:
        raise BadInput(
            f"{uri!r} is not an Azure Blob Storage URI (https://ACCOUNT.blob.core.windows.net/CONTAINER/PATH)",
            field="storage_namespace",
        )
    problem = container_problem(parsed)
    if problem is not None:
        raise BadInput(f"{uri!r}: {problem}", field="storage_namespace")
    container, _, name = parsed.path[1:].partition("/")
    return AzureLocation(parsed.authority, match.group("account"), container, name)


def _connection_string_fields(connection_string: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for part in connection_string.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            fields[key.strip().lower()] = value.strip()
    return fields


def _endpoint_account(endpoint: str) -> str | None:
    """The account an endpoint URL names: its host's first label (``ACCOUNT.blob...``), or the
    first path segment of a path-style endpoint (Azurite: ``http://127.0.0.1:10000/ACCOUNT``)."""
    split = urlsplit(endpoint)
    match = _HOST.fullmatch((split.hostname or "").lower())
    if match:
        return match.group("account")
    first = split.path.strip("/").split("/", 1)[0]
    return first.lower() or None


def _check_account(location: AzureLocation, endpoint: str | None, where: str) -> None:
    if endpoint is None:
        return
    named = _endpoint_account(endpoint)
    if named != location.account:
        raise BadInput(
            f"{where} {endpoint} is for account {named!r}, the storage namespace is in account {location.account!r}",
            field=where,
        )


def container_client(location: AzureLocation, options: StoreOptions, *, retry_total: int = 3) -> Any:
    """A ``ContainerClient`` for ``location``'s container, cached per process and settings.

    ``retry_total=0`` for callers that retry themselves (the deleter: its backoff also narrows
    concurrency, which the SDK's retry cannot).
    """
    import os

    connection_string = options.resolved_azure_connection_string()
    account_key = options.resolved_azure_account_key()
    cache_key = (os.getpid(), location.host, location.container, options.azure_endpoint, connection_string, account_key, retry_total)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(cache_key)
        if client is not None:
            return client
        from azure.storage.blob import BlobServiceClient

        kwargs: dict[str, Any] = {"retry_total": retry_total, "connection_timeout": 10, "read_timeout": 60}
        if connection_string and not options.azure_endpoint:
            fields = _connection_string_fields(connection_string)
            named = fields.get("accountname")
            if named and named.lower() != location.account:
                raise BadInput(
                    f"the Azure connection string is for account {named!r}, the storage namespace is in account {location.account!r}",
                    field="--azure-connection-string",
                )
            _check_account(location, fields.get("blobendpoint"), "--azure-connection-string")
            service = BlobServiceClient.from_connection_string(connection_string, **kwargs)
        else:
            endpoint = options.azure_endpoint or f"https://{location.host}"
            _check_account(location, options.azure_endpoint, "--azure-endpoint")
            if connection_string and not account_key:
                account_key = _connection_string_fields(connection_string).get("accountkey")
            if account_key:
                from azure.core.credentials import AzureNamedKeyCredential

                credential: Any = AzureNamedKeyCredential(location.account, account_key)
            else:
                from azure.identity import DefaultAzureCredential

                credential = DefaultAzureCredential()
            service = BlobServiceClient(endpoint, credential=credential, **kwargs)
        client = service.get_container_client(location.container)
        _CLIENTS[cache_key] = client
        return client


def _error(exc: BaseException) -> str:
    code = getattr(exc, "error_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    return f"{code or type(exc).__name__}"


class AzureStore(ObjectStore):
    """Reads and lists one Azure namespace; deletes through :class:`~lakewarden.deleters.azure.AzureDeleter`."""

    scheme = "https"

    def __init__(self, storage_namespace: str, options: StoreOptions | None = None) -> None:
        super().__init__(storage_namespace, options)
        self.location = azure_location(self.namespace)
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = container_client(self.location, self.options)
        return self._client

    def check_options(self) -> None:
        """Build the client (no request): an endpoint or connection string of another account
        than the namespace's is bad input naming ``--azure-endpoint`` / ``--azure-connection-string``."""
        self.client  # noqa: B018

    def _name(self, uri: str) -> str:
        self._check_mine(uri)
        location = azure_location(uri)
        if location.container != self.location.container:
            raise ValueError(f"{uri!r} is in container {location.container!r}, not {self.location.container!r}")
        return location.name

    def read(self, uri: str) -> bytes:
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        name = self._name(uri)
        try:
            return bytes(self.client.download_blob(name).readall())
        except ResourceNotFoundError:
            raise ObjectMissing(uri) from None
        except AzureError as exc:
            raise StoreError(f"Azure answered {_error(exc)}") from None

    def download(self, uri: str, path: str) -> None:
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        name = self._name(uri)
        try:
            with open(path, "wb") as handle:
                self.client.download_blob(name).readinto(handle)
        except ResourceNotFoundError:
            raise ObjectMissing(uri) from None
        except AzureError as exc:
            raise StoreError(f"Azure answered {_error(exc)}") from None

    def write(self, uri: str, data: bytes) -> None:
        self.client.upload_blob(self._name(uri), data, overwrite=True)

    def upload(self, path: str, uri: str) -> None:
        with open(path, "rb") as handle:
            self.client.upload_blob(self._name(uri), handle, overwrite=True)

    def list(self, prefix_uri: str, *, deep: bool = True) -> Iterator[ListedObject]:
        from azure.core.exceptions import AzureError
        from azure.storage.blob import BlobPrefix

        prefix = self._name(prefix_uri)
        try:
            items = self.client.list_blobs(name_starts_with=prefix) if deep else self.client.walk_blobs(name_starts_with=prefix, delimiter="/")
            for item in items:
                if isinstance(item, BlobPrefix):  # a sub-prefix of a shallow listing: another unit's
                    continue
                yield ListedObject(self.location.uri(item.name), int(item.size), item.last_modified.astimezone(timezone.utc))
        except AzureError as exc:
            raise StoreError(f"listing {prefix_uri}: Azure answered {_error(exc)}") from None

    def children(self, prefix_uri: str, *, max_entries: int = 5000) -> builtins.list[str] | None:
        from azure.storage.blob import BlobPrefix

        prefix = self._name(prefix_uri)
        found = []
        for count, item in enumerate(self.client.walk_blobs(name_starts_with=prefix, delimiter="/"), 1):
            if count > max_entries:
                return None
            if isinstance(item, BlobPrefix):
                found.append(self.location.uri(item.name))
        return sorted(found)

    def recoverability(self) -> Recoverability:
        """Blob soft delete (the service's delete retention policy), and blob versioning when a
        listing of the namespace shows versions."""
        from azure.core.exceptions import AzureError

        try:
            policy = self.client._get_blob_service_client().get_service_properties()["delete_retention_policy"]  # noqa: SLF001
        except AzureError as exc:
            return Recoverability(None, f"could not read account {self.location.account}'s blob soft delete setting ({_error(exc)})")
        versioned = False
        try:
            for item in self.client.list_blobs(name_starts_with=self.location.name, include=["versions"], results_per_page=5):
                versioned = getattr(item, "version_id", None) is not None
                break
        except AzureError:
            pass
        notes = []
        if getattr(policy, "enabled", False):
            notes.append(
                f"blob soft delete is on in account {self.location.account} (kept {policy.days} days): deleted "
                "blobs still cost storage until then; lower or disable the retention to free the space sooner"
            )
        if versioned:
            notes.append(
                "blob versioning is on: a deleted blob's versions stay and cost storage; add a lifecycle "
                "management rule that deletes previous versions"
            )
        return Recoverability(bool(notes), "; ".join(notes))
