"""One sweep per report at a time: ``DIR/sweep.lock``, held with ``flock`` by a live process.

The kernel releases an ``flock`` when its holder dies, however it dies (SIGKILL included), so
"held" always means "held by a live process": no pid guessing, no timeouts. The file also
carries who holds it (pid, host, sweep id, start), for the message a second sweep prints. A
sweep that finishes empties the file; one that was killed leaves its details behind, so the next
sweep can tell it took over a stale lock and record that. The file is never unlinked: unlinking
a locked file lets two processes each lock a different inode.

Report directories are local (:func:`lakewarden.sweep.report_dir.report_path`); on a network
filesystem without working ``flock`` the lock is only as good as that filesystem's emulation.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from pathlib import Path
from typing import Any

from lakewarden.errors import LakewardenError


class SweepBusy(LakewardenError):
    """Another live sweep holds this report's lock (exit 1: the input is fine, try later)."""


class SweepLock:
    """The report's sweep lock; ``acquire`` or raise :class:`SweepBusy`."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None
        self.taken_over: dict[str, Any] | None = None

    def acquire(self, *, sweep_id: str, started_at: str) -> "SweepLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(_read(fd))
            os.close(fd)
            raise SweepBusy(
                f"{self.path.parent}: another sweep of this report is running ({holder}); "
                "wait for it to finish, then run the sweep again if it failed"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        stale = _read(fd)
        self.taken_over = stale or None
        record = {"pid": os.getpid(), "host": socket.gethostname(), "sweep_id": sweep_id, "started_at": started_at}
        payload = json.dumps(record).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, payload, 0)
        os.fsync(fd)
        return self

    def release(self) -> None:
        """Empty the file (a clean end leaves nothing to take over), then unlock."""
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, 0)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "SweepLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read(fd: int) -> dict[str, Any]:
    try:
        raw = os.pread(fd, 65536, 0)
    except OSError:
        return {}
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {"unreadable": raw[:200].decode("utf-8", "replace")}
    return value if isinstance(value, dict) else {"unreadable": str(value)[:200]}


def _describe(holder: dict[str, Any]) -> str:
    if not holder:
        return "starting up"
    return f"pid {holder.get('pid')} on {holder.get('host')}, sweep {holder.get('sweep_id')} since {holder.get('started_at')}"
