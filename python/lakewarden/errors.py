"""Error types shared by every job.

The CLI maps :class:`BadInput` to exit status 2 with a one-line reason (docs/contract.md §1);
anything else is exit status 1. Raising ``BadInput`` before any side effect is how a job
guarantees that bad input changes nothing.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path


class LakewardenError(Exception):
    """Base class for errors lakewarden reports to the user."""


class BadInput(LakewardenError):
    """The user's input is wrong: exit 2, one line naming the file and the field."""

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        self.source = source
        self.field = field
        where = ": ".join(part for part in (source, field) if part)
        super().__init__(f"{where}: {message}" if where else message)


def error_line(exc: BaseException, *, limit: int = 500) -> str:
    """The one-line form of an error, for stderr, summaries and ledgers: its first non-empty
    line (a JVM error's first line names the cause), or its type when it says nothing."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:limit]


class UnsafeDeletion(LakewardenError):
    """A delete was asked for outside the storage namespace or under ``_lakefs/``."""


def read_input_file(path: str | PathLike[str]) -> str:
    """The text of a file the user named (rules, policy): a missing or unreadable file is
    :class:`BadInput` naming it, raised before anything else happens."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput("no such file", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"unreadable ({exc})", source=str(path)) from None
