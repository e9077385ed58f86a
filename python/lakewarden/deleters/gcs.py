"""Google Cloud Storage backend: JSON API batch requests of up to 100 deletes.

Why batches: one ``POST /batch/storage/v1`` carries up to 100 calls (the service's limit), so a
sweep's HTTP round trips drop a hundredfold. Each call is answered separately inside the
multipart response: ``204`` deleted, ``404`` already gone (the goal state, so "deleted"),
``429`` / ``5xx`` retried with backoff while this deleter narrows its in-flight batches
(:mod:`.throttle`), anything else failed with its status. A whole batch answered ``429``/``5xx``
is retried the same way. Every URI is re-checked by :mod:`lakewarden.safety` first.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

from lakewarden.deleters.base import DeleteOutcome
from lakewarden.deleters.throttle import DELETED, FAILED, RETRY, BatchedDeleter, BatchFailed, BatchThrottled, Verdict, delete_with_retries
from lakewarden.stores.gcs import gcs_client, gcs_location
from lakewarden.stores.options import StoreOptions

GCS_MAX_BATCH = 100
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class GcsDeleter(BatchedDeleter):
    """Deletes ``gs://BUCKET/...`` URIs of one namespace.

    Options: :class:`~lakewarden.stores.options.StoreOptions` fields as keywords
    (``gcs_endpoint``, ``gcs_project``); tuning: ``max_batch`` (<= 100), ``max_concurrency``
    (default 8), ``max_attempts`` (default 8), ``base_delay``/``max_delay`` seconds.
    """

    def __init__(
        self,
        storage_namespace: str,
        *,
        max_batch: int = GCS_MAX_BATCH,
        max_concurrency: int = 8,
        max_attempts: int = 8,
        base_delay: float = 0.05,
        max_delay: float = 20.0,
        sleep: Callable[[float], None] = time.sleep,
        **options: Any,
    ):
        super().__init__(storage_namespace)
        self.bucket_name = gcs_location(storage_namespace)[0]
        self._set_up_batches(
            GCS_MAX_BATCH,
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
            self._client = gcs_client(self._options)
        return self._client

    def delete_batch(self, uris: Sequence[str]) -> list[DeleteOutcome]:
        safe, unsafe = self.split_unsafe(uris)
        name_of = {uri: gcs_location(uri)[1] for uri in safe}
        results = delete_with_retries(list(dict.fromkeys(name_of.values())), self._send, throttle=self.throttle, max_attempts=self.max_attempts)
        return [unsafe.get(uri) or DeleteOutcome(uri, *results[name_of[uri]]) for uri in uris]  # type: ignore[arg-type]

    def _send(self, names: list[str]) -> Mapping[str, Verdict]:
        """One batch request; a verdict per object name."""
        from google.api_core.exceptions import GoogleAPICallError
        from requests import RequestException

        self.requests += 1
        bucket = self.client.bucket(self.bucket_name)
        try:
            with self.client.batch(raise_exception=False) as batch:
                for name in names:
                    bucket.delete_blob(name)
        except GoogleAPICallError as exc:
            status = int(getattr(exc, "code", 0) or 0)
            reason = f"{status} {getattr(exc, 'message', '')}".strip()
            if status in RETRYABLE_STATUS:
                raise BatchThrottled(reason) from None
            raise BatchFailed(reason) from None
        except (RequestException, ValueError) as exc:  # transport error, or a garbled multipart answer
            raise BatchThrottled(f"connection: {type(exc).__name__}") from None
        # the SDK keeps the per-call answers, in request order, on the finished batch
        parts = getattr(batch, "_responses", None) or []
        if len(parts) != len(names):
            raise BatchThrottled(f"batch answered {len(parts)} parts for {len(names)} objects")
        verdicts: dict[str, Verdict] = {}
        for name, part in zip(names, parts):
            status = int(part.status_code)
            if 200 <= status < 300:
                verdicts[name] = (DELETED, "")
            elif status == 404:
                verdicts[name] = (DELETED, "already absent")
            elif status in RETRYABLE_STATUS:
                verdicts[name] = (RETRY, str(status))
            else:
                verdicts[name] = (FAILED, str(status))
        return verdicts
