"""Backing off and narrowing concurrency when a store throttles: one policy for every deleter.

Why: every object store answers "too fast" (S3 ``503 SlowDown``, GCS ``429``, Azure ``503
ServerBusy``) per prefix/account once deletes exceed its rate, and retrying at the same rate
only earns more refusals (lakeFS had to cut its GC to 12 threads for this, lakeFS#5730). So a
throttled request (a) sleeps a full-jitter exponential backoff and (b) halves how many batches
this deleter keeps in flight; steady success then widens it again one step at a time
(additive increase, multiplicative decrease, as TCP does).

:func:`delete_with_retries` is the one retry loop: it sends a batch, keeps each key's final
verdict, resends only what the store asked to retry, and after ``max_attempts`` records the
rest as failed *with the last reason*: it never gives up silently and never drops a key.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from typing import Any, Callable, Iterator, Mapping, Sequence

from lakewarden.deleters.base import Deleter

__all__ = ["BatchFailed", "BatchThrottled", "Throttle", "Verdict", "delete_with_retries"]

#: A key's verdict from one request: ``("deleted" | "failed" | "retry", reason)``.
Verdict = tuple[str, str]
DELETED, FAILED, RETRY = "deleted", "failed", "retry"


class BatchThrottled(Exception):
    """The whole request was throttled or hit a transient error: resend every key later."""


class BatchFailed(Exception):
    """The whole request failed for good (e.g. access denied): every key fails with this reason."""


class Throttle:
    """How many batches one deleter may have in flight now, shared by its threads."""

    def __init__(
        self,
        max_concurrency: int,
        *,
        base_delay: float = 0.05,
        max_delay: float = 20.0,
        sleep: Callable[[float], None] = time.sleep,
        recover_after: int = 4,
    ) -> None:
        self.max_concurrency = max(1, int(max_concurrency))
        self.limit = self.max_concurrency
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.recover_after = max(1, recover_after)
        self._sleep = sleep
        self._in_flight = 0
        self._successes = 0
        self._cond = threading.Condition()
        self.throttled = 0  # throttled answers seen, for the sweep's output and the tests
        self.lowest_limit = self.limit

    def __getstate__(self) -> dict[str, object]:
        state = self.__dict__.copy()
        state["_cond"] = None
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._cond = threading.Condition()
        self._in_flight = 0

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the :attr:`limit` in-flight places while sending a request."""
        with self._cond:
            while self._in_flight >= self.limit:
                self._cond.wait()
            self._in_flight += 1
        try:
            yield
        finally:
            with self._cond:
                self._in_flight -= 1
                self._cond.notify_all()

    def backoff(self, attempt: int) -> float:
        """Full-jitter exponential backoff: uniform in [0, min(max_delay, base * 2**attempt)]."""
        return random.uniform(0, min(self.max_delay, self.base_delay * (2**attempt)))

    def on_throttled(self) -> None:
        """Halve the in-flight limit (never below 1)."""
        with self._cond:
            self.throttled += 1
            self._successes = 0
            self.limit = max(1, self.limit // 2)
            self.lowest_limit = min(self.lowest_limit, self.limit)

    def on_success(self) -> None:
        """After ``recover_after`` clean answers in a row, allow one more batch in flight."""
        with self._cond:
            self._successes += 1
            if self._successes >= self.recover_after and self.limit < self.max_concurrency:
                self.limit += 1
                self._successes = 0
                self._cond.notify_all()

    def wait(self, attempt: int) -> None:
        self._sleep(self.backoff(attempt))


def delete_with_retries(
    keys: Sequence[str],
    send: Callable[[list[str]], Mapping[str, Verdict]],
    *,
    throttle: Throttle,
    max_attempts: int,
) -> dict[str, tuple[str, str]]:
    """``{key: (status, reason)}`` for every key, ``status`` ``deleted`` or ``failed``.

    ``send(keys)`` makes one request and returns a verdict per key (a key it leaves out is
    retried), or raises :class:`BatchThrottled` / :class:`BatchFailed` for the whole request.
    """
    results: dict[str, tuple[str, str]] = {}
    pending = list(dict.fromkeys(keys))
    last_reason = ""
    for attempt in range(max(1, max_attempts)):
        if attempt:
            throttle.wait(attempt)
        try:
            with throttle.slot():
                verdicts = send(pending)
        except BatchThrottled as exc:
            last_reason = str(exc)
            throttle.on_throttled()
            continue
        except BatchFailed as exc:
            for key in pending:
                results[key] = (FAILED, str(exc))
            return results
        retry: list[str] = []
        for key in pending:
            status, reason = verdicts.get(key, (RETRY, "no answer for this key"))
            if status == RETRY:
                retry.append(key)
                last_reason = reason
            else:
                results[key] = (status, reason)
        if retry:
            throttle.on_throttled()
        else:
            throttle.on_success()
        pending = retry
        if not pending:
            return results
    for key in pending:
        results[key] = (FAILED, f"gave up after {max_attempts} attempts: {last_reason}")
    return results


class BatchedDeleter(Deleter):
    """What every cloud deleter sets up alike: a batch size within the store's limit, batches in
    flight under one :class:`Throttle`, a bound on attempts, a request counter, and a client made
    lazily in the process that deletes (never pickled into a Spark task)."""

    _client: Any

    def _set_up_batches(
        self,
        store_limit: int,
        *,
        max_batch: int,
        max_concurrency: int,
        max_attempts: int,
        base_delay: float,
        max_delay: float,
        sleep: Callable[[float], None],
    ) -> None:
        if not 1 <= max_batch <= store_limit:
            raise ValueError(f"max_batch must be within 1..{store_limit}, got {max_batch}")
        self.max_batch = max_batch
        self.max_concurrency = max(1, int(max_concurrency))
        self.max_attempts = max(1, int(max_attempts))
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._sleep = sleep
        self.throttle = Throttle(self.max_concurrency, base_delay=base_delay, max_delay=max_delay, sleep=sleep)
        self._client = None
        self.requests = 0  # delete requests made, for benchmarks and tests

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_client"] = None
        return state

