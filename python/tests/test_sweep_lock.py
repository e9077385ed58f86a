"""The report's sweep lock: held by a live holder, refused to a second one with who holds it,
emptied on a clean end, and a stale one (left by a killed sweep) taken over and reported."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from lakewarden.sweep.lock import SweepBusy, SweepLock


def test_second_holder_is_refused_with_the_holder_named(tmp_path: Path) -> None:
    path = tmp_path / "sweep.lock"
    with SweepLock(path).acquire(sweep_id="s1", started_at="t1") as first:
        assert first.taken_over is None
        held = json.loads(path.read_text())
        assert held == {"pid": os.getpid(), "host": socket.gethostname(), "sweep_id": "s1", "started_at": "t1"}
        with pytest.raises(SweepBusy, match=f"another sweep of this report is running \\(pid {os.getpid()} on .*sweep s1 since t1\\)"):
            SweepLock(path).acquire(sweep_id="s2", started_at="t2")
        assert json.loads(path.read_text())["sweep_id"] == "s1", "the refused sweep wrote nothing"
    assert path.exists() and path.read_text() == "", "a clean end leaves nothing to take over"
    with SweepLock(path).acquire(sweep_id="s3", started_at="t3") as again:
        assert again.taken_over is None


def test_stale_lock_of_a_killed_sweep_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "sweep.lock"
    stale = {"pid": 999999, "host": "elsewhere", "sweep_id": "dead", "started_at": "t0"}
    path.write_text(json.dumps(stale))  # what a SIGKILLed holder leaves: content, no flock
    with SweepLock(path).acquire(sweep_id="s1", started_at="t1") as lock:
        assert lock.taken_over == stale
        assert json.loads(path.read_text())["sweep_id"] == "s1"
    path.write_text("{torn")
    with SweepLock(path).acquire(sweep_id="s2", started_at="t2") as lock:
        assert lock.taken_over == {"unreadable": "{torn"}
