"""Read lakeFS metadata files (``<namespace>/_lakefs/<id>``) from the storage namespace.

lakeFS writes every metarange and range as an object named by its id under ``_lakefs/`` in
the repository's storage namespace. Supported namespaces: ``file:///abs/path``, ``s3://bucket/
prefix`` (boto3, credentials from the usual AWS chain; ``AWS_ENDPOINT_URL`` for MinIO etc.)
and lakeFS's ``local://path`` (relative to the server's ``blockstore.local.path``, which must
be given since the client cannot know it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lakewarden.errors import BadInput

__all__ = ["MetadataStore", "open_store"]

METADATA_DIR = "_lakefs"


class MetadataStore:
    """Fetches ``_lakefs/<id>`` objects as bytes."""

    namespace: str

    def read(self, object_id: str, what: str) -> bytes:  # pragma: no cover - interface
        raise NotImplementedError

    def location(self, object_id: str) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def _missing(self, object_id: str, what: str) -> BadInput:
        return BadInput(f"{what} {object_id} is missing from storage", source=self.location(object_id))


class LocalStore(MetadataStore):
    def __init__(self, namespace: str, root: Path) -> None:
        self.namespace = namespace
        self.root = root

    def location(self, object_id: str) -> str:
        return str(self.root / METADATA_DIR / object_id)

    def read(self, object_id: str, what: str) -> bytes:
        path = self.root / METADATA_DIR / object_id
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise self._missing(object_id, what) from None
        except OSError as exc:
            raise BadInput(f"cannot read {what} {object_id}: {exc.strerror}", source=str(path)) from None


class S3Store(MetadataStore):
    def __init__(self, namespace: str, bucket: str, prefix: str) -> None:
        import boto3

        self.namespace = namespace
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self._client: Any = boto3.client("s3")

    def _key(self, object_id: str) -> str:
        return "/".join(p for p in (self.prefix, METADATA_DIR, object_id) if p)

    def location(self, object_id: str) -> str:
        return f"s3://{self.bucket}/{self._key(object_id)}"

    def read(self, object_id: str, what: str) -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return self._client.get_object(Bucket=self.bucket, Key=self._key(object_id))["Body"].read()
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "404", "NotFound"):
                raise self._missing(object_id, what) from None
            raise BadInput(f"cannot read {what} {object_id} from S3 ({code})", source=self.location(object_id)) from None
        except BotoCoreError as exc:
            raise BadInput(
                f"cannot read {what} {object_id} from S3 ({type(exc).__name__})", source=self.location(object_id)
            ) from None


def open_store(namespace: str, *, local_blockstore: str | None = None) -> MetadataStore:
    """The store for a repository's storage namespace URI."""
    parsed = urlparse(namespace)
    if parsed.scheme == "file":
        return LocalStore(namespace, Path(unquote(parsed.path)))
    if parsed.scheme in ("s3", "s3a"):
        return S3Store(namespace, parsed.netloc, parsed.path)
    if parsed.scheme == "local":
        if not local_blockstore:
            raise BadInput(
                f"namespace {namespace} is on lakeFS's local blockstore: pass --local-blockstore DIR "
                "(the server's blockstore.local.path)",
                field="--local-blockstore",
            )
        return LocalStore(namespace, Path(local_blockstore) / (parsed.netloc + parsed.path).lstrip("/"))
    raise BadInput(
        f"unsupported storage namespace {namespace!r} (supported: file://, s3://, local://)",
        field="storage_namespace",
    )
