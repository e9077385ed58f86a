"""S3 backend: DeleteObjects in batches of up to 1000 keys, with backoff, per-key outcomes.

Several DeleteObjects are in flight at once (``max_concurrency``); a throttled answer halves
that number until the store stops throttling (:mod:`lakewarden.deleters.throttle`, shared by
every cloud backend).

Why DeleteObjects: one request removes up to 1000 keys, which is what makes a sweep of millions
of objects feasible (a DeleteObject per key is ~1000x the requests). S3 answers per key inside
a 200 response, so a batch can partly fail: every key gets its own outcome, throttled keys
(``SlowDown``...) are retried with exponential backoff and full jitter, and a missing key is not
an error (S3 reports it deleted), which is what makes a re-run idempotent.

The boto3 client is created lazily in the process that deletes (a Spark task), cached per
process and settings, and dropped on pickling: clients hold sockets and must not travel.
Endpoint, region and credentials come from the options, else from boto3's usual sources
(``AWS_ENDPOINT_URL[_S3]``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``, profiles...).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Sequence

from lakewarden.deleters.base import DeleteOutcome
from lakewarden.deleters.throttle import BatchedDeleter, BatchFailed, BatchThrottled, Verdict, delete_with_retries
from lakewarden.s3client import s3_client
from lakewarden.safety import parse_uri

log = logging.getLogger(__name__)

S3_MAX_BATCH = 1000

#: Error codes (per key or per request) worth retrying: throttling and transient server errors.
RETRYABLE_CODES = frozenset(
    {
        "SlowDown",
        "ServiceUnavailable",
        "InternalError",
        "RequestTimeout",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "RequestThrottled",
        "503",
        "500",
        "502",
        "504",
    }
)
#: Per-key codes meaning the object is not there: the goal state, so "deleted".
ABSENT_CODES = frozenset({"NoSuchKey", "NotFound", "404"})

#: Deleter options that belong to the other stores (see StoreOptions.deleter_options).
OTHER_STORES_OPTIONS = frozenset(
    {"azure_endpoint", "azure_connection_string", "azure_account_key", "gcs_endpoint", "gcs_project", "local_blockstore"}
)


def _xml_safe(key: str) -> bool:
    """Whether ``key`` can travel in a DeleteObjects XML body (XML 1.0 forbids most C0 controls)."""
    return all(ch in "\t\n\r" or ord(ch) >= 0x20 for ch in key) and "\ufffe" not in key and "\uffff" not in key


def _error_code(exc: BaseException) -> tuple[str, str]:
    """(code, message) of a botocore exception; transport errors get code ``connection``."""
    from botocore.exceptions import ClientError

    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code") or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or "")
        return code, str(error.get("Message") or exc)
    return "connection", f"{type(exc).__name__}: {exc}"


class S3Deleter(BatchedDeleter):
    """Deletes ``s3://bucket/key`` URIs of one namespace via DeleteObjects.

    Options: ``endpoint_url``, ``region_name``, ``aws_access_key_id``, ``aws_secret_access_key``,
    ``aws_session_token``, ``profile_name``, ``verify``, ``addressing_style``; tuning:
    ``max_batch`` (<= 1000), ``max_concurrency`` (batches in flight per process, default 8),
    ``max_attempts`` (default 8), ``base_delay``/``max_delay`` seconds (0.05 / 20).
    """

    def __init__(
        self,
        storage_namespace: str,
        *,
        max_batch: int = S3_MAX_BATCH,
        max_concurrency: int = 8,
        max_attempts: int = 8,
        base_delay: float = 0.05,
        max_delay: float = 20.0,
        sleep: Callable[[float], None] = time.sleep,
        **client_options: Any,
    ):
        super().__init__(storage_namespace)
        parsed = parse_uri(storage_namespace)
        if parsed.scheme != "s3":
            raise ValueError(f"S3Deleter needs an s3:// namespace, got {storage_namespace!r}")
        self.bucket = parsed.authority
        self._set_up_batches(
            S3_MAX_BATCH,
            max_batch=max_batch,
            max_concurrency=max_concurrency,
            max_attempts=max_attempts,
            base_delay=base_delay,
            max_delay=max_delay,
            sleep=sleep,
        )
        # the other stores' options (StoreOptions.deleter_options carries them all) are not boto3's
        self._client_options = {k: v for k, v in client_options.items() if v is not None and k not in OTHER_STORES_OPTIONS}

    @property
    def client(self) -> Any:
        if self._client is None:
            # botocore's retries off (max_attempts=1): this deleter retries with its own backoff,
            # which also covers per-key errors inside a 200 response that botocore cannot see
            self._client = s3_client(
                self._client_options, max_pool_connections=max(10, 2 * self.max_concurrency), max_attempts=1
            )
        return self._client

    def backoff(self, attempt: int) -> float:
        """Full-jitter exponential backoff: uniform in [0, min(max_delay, base * 2**attempt)]."""
        return self.throttle.backoff(attempt)

    def delete_batch(self, uris: Sequence[str]) -> list[DeleteOutcome]:
        safe, unsafe = self.split_unsafe(uris)
        key_of = {uri: parse_uri(uri).path[1:] for uri in safe}  # each URI parsed once
        keys = list(dict.fromkeys(key_of.values()))
        bulk = [key for key in keys if _xml_safe(key)]
        results: dict[str, tuple[str, str]] = {}
        if bulk:
            results.update(self._delete_objects(bulk))
        for key in keys:
            if key not in results:
                results[key] = self._delete_object(key)
        outcomes: list[DeleteOutcome] = []
        for uri in uris:
            if uri in unsafe:
                outcomes.append(unsafe[uri])
                continue
            status, reason = results[key_of[uri]]
            outcomes.append(DeleteOutcome(uri, "deleted" if status == "deleted" else "failed", reason))
        return outcomes

    def _delete_objects(self, keys: list[str]) -> dict[str, tuple[str, str]]:
        """DeleteObjects with the shared retry loop (backoff, narrowed concurrency); ``{key: (status, reason)}``."""
        return delete_with_retries(keys, self._send_delete_objects, throttle=self.throttle, max_attempts=self.max_attempts)

    def _send_delete_objects(self, keys: list[str]) -> dict[str, Verdict]:
        """One DeleteObjects request (Quiet: only errors are listed); a verdict per key."""
        from botocore.exceptions import BotoCoreError, ClientError

        self.requests += 1
        try:
            response = self.client.delete_objects(
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True},
            )
        except (ClientError, BotoCoreError) as exc:
            code, message = _error_code(exc)
            if code in RETRYABLE_CODES or code == "connection":
                log.debug("DeleteObjects throttled/failed (%s: %s); backing off", code, message)
                raise BatchThrottled(f"{code}: {message}") from None
            raise BatchFailed(f"{code}: {message}") from None
        verdicts: dict[str, Verdict] = {}
        for error in response.get("Errors", []):
            key = error.get("Key")
            if key is None:
                continue
            code = str(error.get("Code", ""))
            if code in ABSENT_CODES:
                verdicts[key] = ("deleted", "already absent")
            elif code in RETRYABLE_CODES:
                verdicts[key] = ("retry", f"{code}: {error.get('Message', '')}")
            else:
                verdicts[key] = ("failed", f"{code}: {error.get('Message', '')}".rstrip(": "))
        for key in keys:
            verdicts.setdefault(key, ("deleted", ""))
        return verdicts

    def _delete_object(self, key: str) -> tuple[str, str]:
        """DeleteObject for a key DeleteObjects' XML body cannot carry; same retry policy."""
        from botocore.exceptions import BotoCoreError, ClientError

        last_reason = ""
        for attempt in range(self.max_attempts):
            if attempt:
                self._sleep(self.backoff(attempt))
            try:
                self.requests += 1
                self.client.delete_object(Bucket=self.bucket, Key=key)
                return ("deleted", "")
            except (ClientError, BotoCoreError) as exc:
                code, message = _error_code(exc)
                last_reason = f"{code}: {message}"
                if code in ABSENT_CODES:
                    return ("deleted", "already absent")
                if code not in RETRYABLE_CODES and code != "connection":
                    return ("failed", last_reason)
        return ("failed", f"gave up after {self.max_attempts} attempts: {last_reason}")
