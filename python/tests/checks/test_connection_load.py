"""The merge gate and callbacks keep answering while 2,000 idle and 50 slow sockets are open.

The hostile sockets come from another process (``hostile_clients.py``), all on 127.0.0.1 like the
gate's own requests, so the per-client cap cannot tell them apart by address: only by age and
progress. Bounded: the attack lasts ATTACK_SECONDS, every request has a timeout, the attacker
process is killed at the end whatever happens.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from checks_support import REPO, WebhookReceiver, webhook_actions
from lakewarden.checks.connections import ConnectionLimits

IDLE, SLOW = 2000, 50
ATTACK_SECONDS = 12.0
#: The shipped caps; only the two deadlines are shorter, so the slow sockets are cut within the test.
LIMITS = ConnectionLimits(header_timeout=4.0, body_timeout=4.0)


def raise_open_files(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


# a latency promise, measured with nothing else running: scripts/test.sh runs serial tests first, alone
@pytest.mark.serial
def test_gate_and_callbacks_answer_within_a_second_under_2000_idle_and_50_slow_sockets(
    snapshot, service_factory
) -> None:
    raise_open_files(IDLE + SLOW + 1024)  # the server's side of every hostile socket is in this process
    with WebhookReceiver() as receiver:
        receiver.mode = "record"
        commit = snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["row-count"])},
                                 branch="main")
        live = service_factory(snapshot.write(), {"protected_branches": [{"branch": "main",
                                                                          "mandatory_checks": ["row-count"]}]},
                               limits=LIMITS)
        live.trigger("main")
        event = receiver.events(1)[0]
        port = live.url.rsplit(":", 1)[1]
        attacker = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("hostile_clients.py")), port, str(ATTACK_SECONDS),
             str(IDLE), str(SLOW), os.environ.get("LAKEWARDEN_LOAD_REOPEN", "1")],
            stdout=subprocess.PIPE, text=True, start_new_session=True,
        )
        gate_times: list[float] = []
        callback_times: list[float] = []
        statuses: set[int] = set()
        try:
            time.sleep(1.0)  # let the attacker open its sockets
            stop = time.monotonic() + ATTACK_SECONDS - 2.0
            while time.monotonic() < stop:
                started = time.monotonic()
                gate = live.gate("main", commit)  # a new connection each time, like lakeFS's hook
                gate_times.append(time.monotonic() - started)
                statuses.add(gate.status_code)
                started = time.monotonic()
                forged = requests.post(f"{live.checks_url(commit)}/row-count", params={"token": "forged"},
                                       json={"status": "SUCCESS"}, timeout=5)
                callback_times.append(time.monotonic() - started)
                statuses.add(forged.status_code)
                time.sleep(0.1)
            # The real callback still lands and opens the gate, also under attack.
            done = requests.post(event["callback_url"], json={"status": "SUCCESS"}, timeout=5)
            assert done.status_code == 200, done.text
            assert live.gate("main", commit).status_code == 200
            out, _ = attacker.communicate(timeout=ATTACK_SECONDS + 20)
        finally:
            if attacker.poll() is None:
                os.killpg(attacker.pid, signal.SIGKILL)
                attacker.wait(timeout=10)
        counts = json.loads(out)
    guard = live.server.guard.counts
    figures = {
        "gate_median_ms": round(statistics.median(gate_times) * 1000, 1),
        "gate_max_ms": round(max(gate_times) * 1000, 1),
        "callback_median_ms": round(statistics.median(callback_times) * 1000, 1),
        "callback_max_ms": round(max(callback_times) * 1000, 1),
        "requests": len(gate_times) * 2,
        "attacker": counts,
        "server": dict(guard),
    }
    print("load figures:", json.dumps(figures))
    assert statuses <= {412, 403}, statuses  # never 503, never a dropped connection
    assert counts["max_open"] >= IDLE, counts  # the attacker did hold its 2,000 sockets
    assert max(gate_times) < 1.0 and max(callback_times) < 1.0, figures
    assert guard["evicted"] > 0, guard  # idle sockets beyond the per-client cap were closed
    assert counts["slow_closed_after_max"] < LIMITS.header_timeout + LIMITS.body_timeout + 3, counts
    assert REPO
