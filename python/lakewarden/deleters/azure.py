"""Azure Blob Storage backend: Blob Batch deletes of up to 256 blobs per request.

Why Blob Batch: one ``POST ?comp=batch`` carries up to 256 deletes (the service's limit), so a
sweep makes ~1/256 of the requests a delete per blob would. The service answers each
sub-request separately inside a ``202``: ``202`` deleted, ``404`` already gone (the goal state:
"deleted", which keeps re-runs idempotent), ``503 ServerBusy`` / ``500`` / ``429`` retried with
backoff while this deleter narrows its in-flight batches (:mod:`.throttle`), anything else failed
with the service's error code. A whole batch answered ``503``/``429`` is retried the same way.
Every URI is re-checked by :mod:`lakewarden.safety` first and must be in the namespace's container.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

from lakewarden.deleters.base import DeleteOutcome
from lakewarden.deleters.throttle import DELETED, FAILED, RETRY, BatchedDeleter, BatchFailed, BatchThrottled, Verdict, delete_with_retries
from lakewarden.stores.azure import azure_location, container_client
from lakewarden.stores.options import StoreOptions

AZURE_MAX_BATCH = 256
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class AzureDeleter(BatchedDeleter):
    """Deletes ``https://ACCOUNT.blob.core.windows.net/CONTAINER/...`` URIs of one namespace.

    Options: :class:`~lakewarden.stores.options.StoreOptions` fields as keywords
    (``azure_endpoint``, ``azure_connection_string``, ``azure_account_key``); tuning:
    ``max_batch`` (<= 256), ``max_concurrency`` (batches in flight, default 8), ``max_attempts``
    (default 8), ``base_delay``/``max_delay`` seconds.
    """

    def __init__(
        self,
        storage_namespace: str,
        *,
        max_batch: int = AZURE_MAX_BATCH,
        max_concurrency: int = 8,
        max_attempts: int = 8,
        base_delay: float = 0.05,
        max_delay: float = 20.0,
        sleep: Callable[[float], None] = time.sleep,
        **options: Any,
    ):
        super().__init__(storage_namespace)
        self.location = azure_location(storage_namespace)
        self._set_up_batches(
            AZURE_MAX_BATCH,
            max_batch=max_batch,
            max_concurrency=max_concurrency,
            max_attempts=max_attempts,
            base_delay=base_delay,
            max_delay=max_delay,
            sleep=sleep,
        )
        self._options = StoreOptions.from_deleter_options(options)

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = container_client(self.location, self._options, retry_total=0)
        return self._client

    def delete_batch(self, uris: Sequence[str]) -> list[DeleteOutcome]:
        safe, unsafe = self.split_unsafe(uris)
        name_of: dict[str, str] = {}
        for uri in safe:
            location = azure_location(uri)
            if location.container != self.location.container or not location.name:
                unsafe[uri] = DeleteOutcome.failed(uri, "unsafe: not a blob of the storage namespace's container")
            else:
                name_of[uri] = location.name
        results = delete_with_retries(list(dict.fromkeys(name_of.values())), self._send, throttle=self.throttle, max_attempts=self.max_attempts)
        return [unsafe.get(uri) or DeleteOutcome(uri, *results[name_of[uri]]) for uri in uris]  # type: ignore[arg-type]

    def _send(self, names: list[str]) -> Mapping[str, Verdict]:
        """One Blob Batch request; a verdict per blob name."""
        from azure.core.exceptions import AzureError, HttpResponseError

        self.requests += 1
        try:
            parts = list(self.client.delete_blobs(*names, raise_on_any_failure=False))
        except HttpResponseError as exc:
            status = exc.status_code or 0
            # azure-storage sets error_code on every error it raises; azure-core does not declare it
            reason = f"{status} {exc.error_code or exc.reason or ''}".strip()  # type: ignore[attr-defined]
            if status in RETRYABLE_STATUS:
                raise BatchThrottled(reason) from None
            raise BatchFailed(reason) from None
        except AzureError as exc:  # connection reset, timeout: the batch may or may not have run
            raise BatchThrottled(f"connection: {type(exc).__name__}") from None
        if len(parts) != len(names):
            raise BatchThrottled(f"batch answered {len(parts)} parts for {len(names)} blobs")
        verdicts: dict[str, Verdict] = {}
        for name, part in zip(names, parts):
            status = int(part.status_code)
            code = part.headers.get("x-ms-error-code", "") if part.headers else ""
            if 200 <= status < 300:
                verdicts[name] = (DELETED, "")
            elif status == 404:
                verdicts[name] = (DELETED, "already absent")
            elif status in RETRYABLE_STATUS:
                verdicts[name] = (RETRY, f"{status} {code}".strip())
            else:
                verdicts[name] = (FAILED, f"{status} {code}".strip())
        return verdicts
