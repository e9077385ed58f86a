"""S3 (and S3-compatible) namespaces: ``s3://BUCKET/PATH`` (``s3a``/``s3n`` are the same).

The client is :func:`lakewarden.s3client.s3_client` (one definition of endpoint, region and
credentials: ``--s3-endpoint``/``--s3-region``, else boto3's sources such as
``AWS_ENDPOINT_URL`` and ``AWS_REGION``); deletes go through
:class:`~lakewarden.deleters.s3.S3Deleter` (DeleteObjects, 1,000 keys a request).
"""

from __future__ import annotations

import builtins
from datetime import timezone
from typing import Any, Iterator

from lakewarden.safety import parse_uri
from lakewarden.stores.base import ListedObject, ObjectMissing, ObjectStore, Recoverability, StoreError
from lakewarden.stores.options import StoreOptions

__all__ = ["S3Store"]

_ABSENT = frozenset({"NoSuchKey", "404", "NotFound"})


def _code(exc: BaseException) -> str:
    from botocore.exceptions import ClientError

    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code") or "error")
    return type(exc).__name__


class S3Store(ObjectStore):
    """Reads and lists one ``s3://`` namespace."""

    scheme = "s3"

    def __init__(self, storage_namespace: str, options: StoreOptions | None = None) -> None:
        super().__init__(storage_namespace, options)
        self.bucket = parse_uri(self.namespace).authority
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            from lakewarden.s3client import s3_client

            self._client = s3_client(self.options.s3_client_options())
        return self._client

    def _key(self, uri: str) -> str:
        self._check_mine(uri)
        return parse_uri(uri).path[1:]

    def read(self, uri: str) -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        key = self._key(uri)
        try:
            return bytes(self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read())
        except (ClientError, BotoCoreError) as exc:
            if _code(exc) in _ABSENT:
                raise ObjectMissing(uri) from None
            raise StoreError(f"S3 answered {_code(exc)}") from None

    def download(self, uri: str, path: str) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        key = self._key(uri)
        try:
            self.client.download_file(self.bucket, key, path)
        except (ClientError, BotoCoreError) as exc:
            if _code(exc) in _ABSENT:
                raise ObjectMissing(uri) from None
            raise StoreError(f"S3 answered {_code(exc)}") from None

    def write(self, uri: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(uri), Body=data)

    def upload(self, path: str, uri: str) -> None:
        self.client.upload_file(path, self.bucket, self._key(uri))

    def list(self, prefix_uri: str, *, deep: bool = True) -> Iterator[ListedObject]:
        from botocore.exceptions import BotoCoreError, ClientError

        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": self._key(prefix_uri)}
        if not deep:
            kwargs["Delimiter"] = "/"
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(**kwargs):
                for obj in page.get("Contents", []):
                    yield ListedObject(f"s3://{self.bucket}/{obj['Key']}", int(obj["Size"]), obj["LastModified"].astimezone(timezone.utc))
        except (ClientError, BotoCoreError) as exc:
            raise StoreError(f"listing {prefix_uri}: S3 answered {_code(exc)}") from None

    def children(self, prefix_uri: str, *, max_entries: int = 5000) -> builtins.list[str] | None:
        found: list[str] = []
        seen = 0
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self._key(prefix_uri), Delimiter="/")
        for page in pages:
            seen += len(page.get("CommonPrefixes", [])) + len(page.get("Contents", []))
            if seen > max_entries:
                return None
            found += [f"s3://{self.bucket}/{item['Prefix']}" for item in page.get("CommonPrefixes", [])]
        return sorted(found)

    def recoverability(self) -> Recoverability:
        """Bucket versioning: ``Enabled`` (or ``Suspended``, which keeps the versions it made)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            status = self.client.get_bucket_versioning(Bucket=self.bucket).get("Status")
        except (ClientError, BotoCoreError) as exc:
            return Recoverability(None, f"could not read bucket {self.bucket}'s versioning ({_code(exc)})")
        if status in ("Enabled", "Suspended"):
            return Recoverability(
                True,
                f"S3 versioning is {status} on bucket {self.bucket}: a delete leaves a delete marker and the "
                "object as a noncurrent version that still costs storage; add a lifecycle rule with "
                "NoncurrentVersionExpiration and ExpiredObjectDeleteMarker to free the space",
            )
        return Recoverability(False, "")
