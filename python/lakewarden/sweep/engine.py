"""One definition of how a sweep deletes, shared by the in-process and the distributed path.

Rows ``(address, address_type, physical_address)`` are re-checked one by one against the
namespace (:mod:`lakewarden.safety`, and ``physical_address`` must be what ``address``
resolves to): a tampered or buggy report cannot delete outside the namespace, and unsafe rows
are recorded ``failed`` without reaching a deleter. Safe rows go to the backend in batches of at
most its ``max_batch`` (S3 DeleteObjects: 1000 keys), up to ``threads`` batches in flight; the
backend retries throttling with backoff. Every batch's outcomes are appended to an
:class:`OutcomeLog` (JSON Lines, flushed and fsynced) *before* they are counted, so whatever a
summary says was deleted is on record, and a killed sweep loses at most the batches in flight
(deletes are idempotent: a re-run finds those objects absent and records them deleted).
"""

from __future__ import annotations

import json
import json.encoder
import os
import re
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

from lakewarden.deleters.base import DeleteOutcome, Deleter, cached_unsafe_reason
from lakewarden.errors import LakewardenError
from lakewarden.safety import parse_uri, resolve_physical
from lakewarden.sweep.hooks import reached

_json_string = json.encoder.encode_basestring_ascii  # what json.dumps uses for a str

#: Spark schema of one outcome record (the JSON Lines both paths append).
OUTCOME_SCHEMA = "address string, physical_address string, status string, reason string, ts long, sweep_id string"


class SweepFailed(LakewardenError):
    """The sweep stopped part-way; what was done is recorded and a re-run finishes it."""


class Outcome(NamedTuple):
    """One recorded outcome: what happened to one marked address in one sweep."""

    address: str
    physical_address: str
    status: str
    reason: str
    ts: int
    sweep_id: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.address, self.physical_address)

    def beats(self, other: "Outcome") -> bool:
        """The merge rule, per address: a ``deleted`` record wins, else the latest record."""
        return (self.status == "deleted", self.ts) > (other.status == "deleted", other.ts)


def parse_outcome_line(line: bytes | str) -> Outcome | None:
    """One JSON Lines record, or None for a torn or foreign line (a killed writer's last line)."""
    try:
        value = json.loads(line)
        return Outcome(
            str(value["address"]), str(value["physical_address"]), str(value["status"]),
            str(value.get("reason") or ""), int(value["ts"]), str(value.get("sweep_id") or ""),
        )
    except (ValueError, KeyError, TypeError):
        return None


class OutcomeLog:
    """An append-only JSON Lines file of outcomes, one per writer (task attempt or process)."""

    def __init__(self, path: Path, sweep_id: str):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.sweep_id = sweep_id
        self._handle = open(path, "a", encoding="utf-8")

    def record(self, results: Sequence[tuple[str, str, DeleteOutcome]]) -> list[Outcome]:
        """Append one batch durably (flush + fsync) and return its records."""
        ts = time.time_ns() // 1_000_000
        records = [Outcome(a, p, o.status, o.reason, ts, self.sweep_id) for a, p, o in results]
        # the JSON of json.dumps({...}) for these six fields, built with json's own string
        # encoder: a record per address is the hot path, and a dict per line costs 3x more
        tail = f', "ts": {ts}, "sweep_id": {_json_string(self.sweep_id)}}}\n'
        self._handle.write(
            "".join(
                f'{{"address": {_json_string(r.address)}, "physical_address": {_json_string(r.physical_address)}, '
                f'"status": {_json_string(r.status)}, "reason": {_json_string(r.reason)}{tail}'
                for r in records
            )
        )
        self._handle.flush()
        os.fsync(self._handle.fileno())
        return records

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> "OutcomeLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RowChecker:
    """Decides whether one report row may be handed to a deleter at all."""

    def __init__(self, storage_namespace: str):
        self.storage_namespace = storage_namespace
        # resolve_physical joins a RELATIVE address to the canonical namespace verbatim; the
        # prefix is taken from it once instead of re-parsing the namespace for every row
        self._relative_prefix = resolve_physical("", "RELATIVE", storage_namespace)

    def __reduce__(self) -> tuple[Any, ...]:
        return (RowChecker, (self.storage_namespace,))

    def _expected(self, address: str, address_type: str) -> str:
        if address_type == "RELATIVE":
            return self._relative_prefix + address
        return resolve_physical(address, address_type, self.storage_namespace)

    def problem(self, address: Any, address_type: Any, physical: Any) -> str | None:
        if not isinstance(physical, str) or not physical:
            return "unsafe: missing physical_address"
        if not isinstance(address, str) or not address:
            return "unsafe: missing address"
        reason = cached_unsafe_reason(physical, self.storage_namespace)
        if reason is not None:
            return f"unsafe: {reason}"
        try:
            expected = self._expected(address, str(address_type or ""))
            matches = expected == physical or _folded(expected) == _folded(physical)
        except ValueError as exc:
            return f"unsafe: {exc}"
        if not matches:
            return f"unsafe: physical_address is not what {address_type} address {address!r} resolves to ({expected!r})"
        return None


def _folded(uri: str) -> str:
    """``uri`` canonical with repeated slashes folded: the jobs' SQL normalises addresses so."""
    parsed = parse_uri(uri)
    return f"{parsed.scheme}://{parsed.authority}{re.sub('/+', '/', parsed.path)}"


Row = tuple[str, str, str]
Recorded = Callable[[list[Outcome]], None]


def batches(rows: Iterable[Any], size: int) -> Iterator[list[Row]]:
    """Rows (anything indexable ``[0..2]``) in lists of at most ``size``."""
    batch: list[Row] = []
    for row in rows:
        batch.append((row[0], row[1], row[2]))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def delete_batch(deleter: Deleter, checker: RowChecker, rows: Sequence[Row]) -> list[tuple[str, str, DeleteOutcome]]:
    """Check every row, delete the safe ones; one ``(address, physical, outcome)`` per row."""
    checked: list[tuple[str, str, DeleteOutcome | None]] = []
    to_delete: list[str] = []
    for address, address_type, physical in rows:
        reason = checker.problem(address, address_type, physical)
        if reason is None:
            to_delete.append(physical)
            checked.append((address, physical, None))
        else:
            checked.append((address or "", physical or "", DeleteOutcome.failed(physical or "", reason)))
    results: dict[str, DeleteOutcome] = {}
    if to_delete:
        try:
            for outcome in deleter.delete_batch(to_delete):
                results[outcome.uri] = outcome
        except Exception as exc:  # a backend bug must not pass as success; record and stop
            raise SweepFailed(f"deleter raised on a batch of {len(to_delete)}: {exc}") from exc
    out: list[tuple[str, str, DeleteOutcome]] = []
    for address, physical, refused in checked:
        # refused by the check before any delete, else what the deleter said of the object
        outcome = refused if refused is not None else (
            results.get(physical) or DeleteOutcome.failed(physical, "deleter returned no outcome")
        )
        out.append((address, physical, outcome))
    return out


def delete_rows(
    rows: Iterable[Any],
    *,
    deleter: Deleter,
    checker: RowChecker,
    log: OutcomeLog,
    batch_size: int,
    threads: int | None = None,
    on_recorded: Recorded | None = None,
) -> tuple[int, int]:
    """Delete ``rows`` in batches, recording each batch before it is counted; ``(deleted, failed)``.

    Batches complete in submission order from the caller's point of view (the oldest in flight
    is recorded first), at most ``threads`` (default: the backend's ``max_concurrency``) at once.
    On an error the batches that did complete are still recorded, then the first error is raised.
    """
    size = max(1, min(batch_size, deleter.max_batch))
    workers = max(1, threads or deleter.max_concurrency)
    deleted = failed = 0

    def land(results: list[tuple[str, str, DeleteOutcome]]) -> None:
        nonlocal deleted, failed
        records = log.record(results)
        d = sum(1 for r in records if r.status == "deleted")
        deleted, failed = deleted + d, failed + len(records) - d
        if on_recorded is not None:
            on_recorded(records)
        reached("batch")

    if workers == 1:  # no pool: nothing to overlap, and a thread hop per batch costs
        for batch in batches(rows, size):
            land(delete_batch(deleter, checker, batch))
        return deleted, failed
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lakewarden-sweep") as pool:
        in_flight: deque[Future[list[tuple[str, str, DeleteOutcome]]]] = deque()
        try:
            for batch in batches(rows, size):
                in_flight.append(pool.submit(delete_batch, deleter, checker, batch))
                while len(in_flight) > workers:
                    land(in_flight.popleft().result())
            while in_flight:
                land(in_flight.popleft().result())
        except BaseException:
            while in_flight:  # still record what completed, so a re-run skips it
                future = in_flight.popleft()
                try:
                    log.record(future.result())
                except BaseException:  # noqa: BLE001 - the first failure is the one raised
                    continue
            raise
    return deleted, failed
