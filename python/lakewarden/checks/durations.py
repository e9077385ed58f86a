"""Durations in configuration: ``90s``, ``15m``, ``2h``, ``3d``, ``1d12h`` or a number of seconds.

Check timeouts may be days long, so a compact human-readable form matters more than precision.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

from lakewarden.errors import BadInput

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
#: Far beyond any sensible timeout, far below what ``timedelta`` and datetimes can add without
#: overflowing: a huge number is bad input, never an OverflowError.
MAX_SECONDS = 10 * 365 * 86400.0

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")


def parse_duration(value: object, *, source: str | None = None, field: str | None = None) -> timedelta:
    """A positive duration, or :class:`BadInput` naming where the bad value came from."""
    if isinstance(value, bool):
        raise BadInput(f"expected a duration, got {value!r}", source=source, field=field)
    if isinstance(value, (int, float)):
        try:
            seconds = float(value)
        except OverflowError:
            seconds = math.inf
    elif isinstance(value, str) and value.strip():
        text = value.strip().replace(" ", "")
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)  # inf for huge digit strings, rejected below
        else:
            parts = _PART.findall(text)
            if not parts or "".join(n + u for n, u in parts) != text:
                raise BadInput(
                    f"invalid duration {value!r} (use e.g. 90s, 15m, 2h, 3d)", source=source, field=field
                )
            seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    else:
        raise BadInput(f"expected a duration, got {value!r}", source=source, field=field)
    if math.isnan(seconds) or seconds <= 0:
        raise BadInput(f"duration must be positive, got {value!r}", source=source, field=field)
    if seconds > MAX_SECONDS:
        raise BadInput(f"duration longer than 10 years: {str(value)[:40]!r}", source=source, field=field)
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """The compact form of ``delta`` (``1d2h``), for tables and logs."""
    seconds = int(delta.total_seconds())
    out = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            out.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(out) or f"{delta.total_seconds():g}s"
