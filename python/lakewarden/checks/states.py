"""The state machine of one check execution.

Kept apart from the store so that the allowed transitions are written down once: the store turns
each of them into a compare-and-set ``UPDATE ... WHERE status IN (...)``, which is what makes
concurrent callbacks, retries and the timeout reaper safe without locks held across HTTP calls.
"""

from __future__ import annotations

import enum


class Status(str, enum.Enum):
    """Where a check execution is.

    STARTING: token issued, executor being called. EXECUTING: the executor accepted the job.
    SUCCESS/FAILED: the executor called back (or, for FAILED, calling it failed). LOST: no callback
    before the check's timeout.
    """

    STARTING = "STARTING"
    EXECUTING = "EXECUTING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    LOST = "LOST"


#: States in which an execution is still expected to call back. A callback may legitimately win
#: the race against the executor's own HTTP answer, so STARTING accepts callbacks too.
ACTIVE: frozenset[Status] = frozenset({Status.STARTING, Status.EXECUTING})

#: States a retry may start from.
RETRYABLE: frozenset[Status] = frozenset({Status.FAILED, Status.LOST})

#: Statuses an executor may report in its callback.
CALLBACK_STATUSES: frozenset[Status] = frozenset({Status.SUCCESS, Status.FAILED})

#: Every allowed transition, for documentation and for the tests that check the store obeys it.
TRANSITIONS: dict[Status, frozenset[Status]] = {
    Status.STARTING: frozenset({Status.EXECUTING, Status.SUCCESS, Status.FAILED, Status.LOST}),
    Status.EXECUTING: frozenset({Status.SUCCESS, Status.FAILED, Status.LOST}),
    Status.SUCCESS: frozenset(),
    Status.FAILED: frozenset({Status.STARTING}),
    Status.LOST: frozenset({Status.STARTING}),
}


def can_transition(old: Status, new: Status) -> bool:
    """Whether ``old -> new`` is a transition of the state machine."""
    return new in TRANSITIONS[old]


def parse_callback_status(value: object) -> Status:
    """The status of a callback body, or ``ValueError`` naming the accepted values."""
    if isinstance(value, str) and value in {s.value for s in CALLBACK_STATUSES}:
        return Status(value)
    accepted = ", ".join(sorted(s.value for s in CALLBACK_STATUSES))
    raise ValueError(f"unknown callback status {value!r}; expected one of {accepted}")
