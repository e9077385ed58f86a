"""Google Cloud Storage namespaces: ``gs://BUCKET/PATH``, as lakeFS writes them.

The client is google-cloud-storage's. Endpoint: ``--gcs-endpoint``, else the SDK's own
``STORAGE_EMULATOR_HOST`` (an emulator: anonymous credentials), else Google. Credentials: the
application default credentials of google-auth (``GOOGLE_APPLICATION_CREDENTIALS``, a workload
identity, ``gcloud auth application-default login``). Project: ``--gcs-project``, else
``GOOGLE_CLOUD_PROJECT``, else the credentials'.
"""

from __future__ import annotations

import builtins
import os
import threading
from datetime import timezone
from typing import Any, Iterator

from lakewarden.errors import BadInput
from lakewarden.safety import parse_uri
from lakewarden.stores.base import ListedObject, ObjectMissing, ObjectStore, Recoverability, StoreError
from lakewarden.stores.options import StoreOptions

__all__ = ["GcsStore", "gcs_client", "gcs_location"]

_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def gcs_location(uri: str) -> tuple[str, str]:
    """``(bucket, object name)`` of a ``gs://`` URI (raw name, may be empty)."""
    try:
        parsed = parse_uri(uri)
    except ValueError as exc:
        raise BadInput(str(exc), field="storage_namespace") from exc
    if parsed.scheme != "gs":
        raise BadInput(f"{uri!r} is not a gs:// URI", field="storage_namespace")
    return parsed.authority, parsed.path[1:]


def gcs_client(options: StoreOptions) -> Any:
    """A ``google.cloud.storage.Client`` for ``options``, cached per process and settings."""
    endpoint = options.resolved_gcs_endpoint()
    project = options.resolved_gcs_project()
    key = (os.getpid(), endpoint, project)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is not None:
            return client
        from google.cloud import storage

        kwargs: dict[str, Any] = {}
        if endpoint:
            from google.auth.credentials import AnonymousCredentials

            # an emulator: no Google credentials to find, and the SDK must not look for them
            kwargs.update(credentials=AnonymousCredentials(), client_options={"api_endpoint": endpoint})
            project = project or "lakewarden"
        client = storage.Client(project=project, **kwargs)
        _CLIENTS[key] = client
        return client


def _error(exc: BaseException) -> str:
    return str(getattr(exc, "code", None) or type(exc).__name__)


class GcsStore(ObjectStore):
    """Reads and lists one ``gs://`` namespace; deletes through :class:`~lakewarden.deleters.gcs.GcsDeleter`."""

    scheme = "gs"

    def __init__(self, storage_namespace: str, options: StoreOptions | None = None) -> None:
        super().__init__(storage_namespace, options)
        self.bucket_name, self.prefix = gcs_location(self.namespace)
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = gcs_client(self.options)
        return self._client

    def _name(self, uri: str) -> str:
        self._check_mine(uri)
        return gcs_location(uri)[1]

    def read(self, uri: str) -> bytes:
        from google.api_core.exceptions import GoogleAPICallError, NotFound

        name = self._name(uri)
        try:
            return bytes(self.client.bucket(self.bucket_name).blob(name).download_as_bytes())
        except NotFound:
            raise ObjectMissing(uri) from None
        except GoogleAPICallError as exc:
            raise StoreError(f"GCS answered {_error(exc)}") from None

    def download(self, uri: str, path: str) -> None:
        from google.api_core.exceptions import GoogleAPICallError, NotFound

        name = self._name(uri)
        try:
            self.client.bucket(self.bucket_name).blob(name).download_to_filename(path)
        except NotFound:
            raise ObjectMissing(uri) from None
        except GoogleAPICallError as exc:
            raise StoreError(f"GCS answered {_error(exc)}") from None

    def write(self, uri: str, data: bytes) -> None:
        self.client.bucket(self.bucket_name).blob(self._name(uri)).upload_from_string(data)

    def upload(self, path: str, uri: str) -> None:
        self.client.bucket(self.bucket_name).blob(self._name(uri)).upload_from_filename(path)

    def list(self, prefix_uri: str, *, deep: bool = True) -> Iterator[ListedObject]:
        from google.api_core.exceptions import GoogleAPICallError

        prefix = self._name(prefix_uri)
        try:
            for blob in self.client.list_blobs(self.bucket_name, prefix=prefix, delimiter=None if deep else "/"):
                modified = blob.updated.astimezone(timezone.utc)
                yield ListedObject(f"gs://{self.bucket_name}/{blob.name}", int(blob.size or 0), modified)
        except GoogleAPICallError as exc:
            raise StoreError(f"listing {prefix_uri}: GCS answered {_error(exc)}") from None

    def children(self, prefix_uri: str, *, max_entries: int = 5000) -> builtins.list[str] | None:
        prefix = self._name(prefix_uri)
        iterator = self.client.list_blobs(self.bucket_name, prefix=prefix, delimiter="/", fields="items(name),prefixes,nextPageToken")
        prefixes: set[str] = set()
        seen = 0
        for page in iterator.pages:
            seen += page.num_items
            prefixes.update(page.prefixes)
            if seen + len(prefixes) > max_entries:
                return None
        return sorted(f"gs://{self.bucket_name}/{name}" for name in prefixes)

    def recoverability(self) -> Recoverability:
        """Object versioning and soft delete (on by default for new buckets: 7 days)."""
        from google.api_core.exceptions import GoogleAPICallError

        try:
            bucket = self.client.get_bucket(self.bucket_name)
        except GoogleAPICallError as exc:
            return Recoverability(None, f"could not read bucket {self.bucket_name}'s versioning and soft delete settings ({_error(exc)})")
        notes = []
        if bucket.versioning_enabled:
            notes.append(
                f"object versioning is on in bucket {self.bucket_name}: deleted objects stay as noncurrent "
                "versions and cost storage; add a lifecycle rule deleting noncurrent versions"
            )
        policy = getattr(bucket, "soft_delete_policy", None)
        seconds = getattr(policy, "retention_duration_seconds", None) if policy is not None else None
        if seconds:
            notes.append(
                f"soft delete keeps deleted objects of bucket {self.bucket_name} for {int(seconds) // 86400} days "
                "and bills them; set the bucket's soft delete retention to 0 to free the space at once"
            )
        return Recoverability(bool(notes), "; ".join(notes))
