"""The one definition of times: RFC 3339 text in UTC, and how times enter and leave lakewarden.

Naive timestamps are bad input everywhere: a time without an offset means different instants on
different machines, and a retention job that guesses can expire objects early. The only naive
values lakewarden accepts are the ones PySpark hands back from ``collect()``, which are the
instant in the Python process's local time zone (:func:`from_spark`).
"""

from __future__ import annotations

from datetime import datetime, timezone

from lakewarden.errors import BadInput


def rfc3339(moment: datetime, *, timespec: str = "microseconds") -> str:
    """``2026-01-31T12:00:00.000000Z``: UTC, ``Z`` (``timespec`` as ``datetime.isoformat``'s).
    A naive time is a bug here."""
    if moment.tzinfo is None:
        raise ValueError(f"naive timestamp {moment!r}: give it a time zone")
    return moment.astimezone(timezone.utc).isoformat(timespec=timespec).replace("+00:00", "Z")


def utc_now() -> str:
    """The current time as :func:`rfc3339` text."""
    return rfc3339(datetime.now(timezone.utc))


def parse_rfc3339(text: str, *, source: str | None = None, field: str | None = None) -> datetime:
    """An RFC 3339 time with an offset (``Z`` or ``+HH:MM``), in UTC; anything else is
    :class:`BadInput` naming ``source`` and ``field``."""
    try:
        moment = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BadInput(f"{text!r} is not an RFC 3339 time (e.g. 2026-01-31T12:00:00Z)", source=source, field=field) from None
    if moment.tzinfo is None:
        raise BadInput(f"{text!r} has no UTC offset (add Z or +HH:MM)", source=source, field=field)
    return moment.astimezone(timezone.utc)


def from_spark(moment: datetime | None) -> datetime | None:
    """A timestamp collected from Spark, in UTC. PySpark returns naive datetimes in the Python
    process's local time zone (whatever the session time zone), so naive means local here."""
    if moment is None:
        return None
    return moment.astimezone(timezone.utc)
