"""Timestamp text to instants the way Spark's ``to_timestamp(text)`` reads it (session time zone
UTC, ANSI off), without Spark.

JSONL snapshot tables carry times as text. They used to be converted by Spark, so the instants
the jobs compare against retention windows were Spark's reading of that text; this module
keeps that reading exactly, so converting with pyarrow changes no job's result. Text Spark
cannot read becomes null (as Spark does with ANSI off): the snapshot check then rejects a null
where a time is required. One deliberate difference: a time without a date (``10:00:00``),
which Spark places on the day it runs, is null here, so a snapshot never means different
instants on different days.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc

UTC_MICROS = pa.timestamp("us", tz="UTC")

# RFC 3339 with an offset of at most 18 hours, or with none (UTC, the session time zone): for
# these Arrow's cast gives Spark's instant, in C++.
_PLAIN = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?"
_PLAIN_RFC3339 = _PLAIN + r"(Z|[+-](0\d|1[0-7]):[0-5]\d|[+-]18:00)$"
_PLAIN_UTC = _PLAIN + "$"

_SPARK_TEXT = re.compile(
    r"\+?(?P<year>\d{4,7})(?:-(?P<month>\d{1,2})(?:-(?P<day>\d{1,2})(?:[T ](?P<time>.*))?)?)?",
    re.DOTALL,
)
_SPARK_TIME = re.compile(
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{1,2})(?::(?P<second>\d{1,2})(?:\.(?P<fraction>\d*))?(?P<zone>.*))?)?",
    re.DOTALL,
)
_OFFSET = re.compile(r"(?P<sign>[+-])(?P<hours>\d{1,2})(?::?(?P<minutes>\d{2})(?::?(?P<seconds>\d{2}))?)?")
_OFFSET_SHORT = re.compile(r"(?P<sign>[+-])(?P<hours>\d{1,2}):(?P<minutes>\d{1,2})")
# java.time.ZoneId.SHORT_IDS, which Spark's zone parsing consults
_SHORT_IDS = {
    "EST": "-05:00", "MST": "-07:00", "HST": "-10:00", "ACT": "Australia/Darwin", "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires", "ART": "Africa/Cairo", "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka", "CAT": "Africa/Harare", "CNT": "America/St_Johns",
    "CST": "America/Chicago", "CTT": "Asia/Shanghai", "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis", "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan", "NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico", "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh",
}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MAX_OFFSET = timedelta(hours=18)


def spark_timestamps(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``to_timestamp`` of each string, as ``timestamp[us, UTC]`` (null where Spark gives null).

    Plain RFC 3339 text (what lakeFS and ``extract`` write), or a batch of such text all
    without offsets, is cast by Arrow in one call; any other form falls back to
    :func:`spark_timestamp` value by value."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    trimmed = pc.utf8_trim_whitespace(texts)
    for pattern, read_as in ((_PLAIN_RFC3339, UTC_MICROS), (_PLAIN_UTC, pa.timestamp("us"))):
        if pc.all(pc.match_substring_regex(trimmed, pattern)).as_py() is not False:
            try:
                return pc.cast(pc.cast(trimmed, read_as), UTC_MICROS)
            except pa.ArrowInvalid:  # e.g. 2026-02-30: Spark gives null, so decide value by value
                break
    return pa.array([spark_timestamp(text) for text in texts.to_pylist()], UTC_MICROS)


def spark_timestamp(text: str | None) -> int | None:
    """Microseconds since the epoch of ``to_timestamp(text)`` (session time zone UTC), or None."""
    if text is None:
        return None
    match = _SPARK_TEXT.fullmatch(text.strip())
    if match is None:
        return None
    try:
        day = date(int(match["year"]), int(match["month"] or 1), int(match["day"] or 1))
    except ValueError:
        return None
    if match["time"] is None:
        return _micros(datetime(day.year, day.month, day.day, tzinfo=timezone.utc), 0)
    return _with_time(day, match["time"])


def _with_time(day: date, text: str) -> int | None:
    time = _SPARK_TIME.fullmatch(text)
    if time is None:
        return None
    zone_text = (time["zone"] or "").strip()
    zone = _zone(zone_text) if zone_text else timezone.utc
    if zone is None:
        return None
    fraction = (time["fraction"] or "")[:6].ljust(6, "0")
    try:
        moment = datetime(
            day.year, day.month, day.day, int(time["hour"]), int(time["minute"] or 0), int(time["second"] or 0), tzinfo=zone
        )
        return _micros(moment, int(fraction))
    except (ValueError, OverflowError):
        return None


def _micros(moment: datetime, fraction: int) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1) + fraction


@lru_cache(maxsize=256)
def _zone(text: str) -> tzinfo | None:
    """Spark's zone id forms: Z, +h[h][:mm[:ss]], (UTC|GMT|UT)+offset, a short id, area/city."""
    if text == "Z":
        return timezone.utc
    if text[0] in "+-":
        return _offset(text)
    for prefix in ("UTC", "GMT", "UT"):
        if text.startswith(prefix):
            rest = text[len(prefix):]
            return timezone.utc if not rest else (_offset(rest) if rest[0] in "+-" else None)
    text = _SHORT_IDS.get(text, text)
    if text[0] in "+-":
        return _offset(text)
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*", text):
        return None
    try:
        return ZoneInfo(text)
    except (ValueError, OSError, KeyError):
        return None


def _offset(text: str) -> tzinfo | None:
    match = _OFFSET.fullmatch(text) or _OFFSET_SHORT.fullmatch(text)
    if match is None:
        return None
    groups = match.groupdict()
    minutes, seconds = int(groups.get("minutes") or 0), int(groups.get("seconds") or 0)
    if minutes > 59 or seconds > 59:
        return None
    delta = timedelta(hours=int(match["hours"]), minutes=minutes, seconds=seconds)
    if delta > _MAX_OFFSET:
        return None
    return timezone(-delta if match["sign"] == "-" else delta)
