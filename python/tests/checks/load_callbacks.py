"""Load measurement (not a test): callbacks per second the checks service holds on this machine.

Starts ``lakewarden checks serve`` as its own process (SQLite store under a temporary state dir,
127.0.0.1 only), triggers ``--checks`` webhook checks whose executor only records the events, then
fires ``--per-token`` callbacks for every token from ``--clients`` concurrent HTTP clients (httpx,
one asyncio loop). Exactly one callback per token must win (200); all others must be refused (403).
Prints the figure and exits non-zero when the one-winner rule is broken.

    PYTHONPATH=python python python/tests/checks/load_callbacks.py --clients 300
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks_support import REPO, SnapshotBuilder, WebhookReceiver, webhook_actions  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), to tell a CPU-bound service from a slow one."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def fire(calls: list[tuple[str, dict]], clients: int) -> tuple[Counter, float]:
    queue: asyncio.Queue[tuple[str, dict]] = asyncio.Queue()
    for call in calls:
        queue.put_nowait(call)
    codes: Counter = Counter()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:

        async def worker() -> None:
            while True:
                try:
                    url, body = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                try:
                    answer = await client.post(url, json=body)
                except httpx.TransportError as exc:  # counted, not hidden: the figure must say so
                    codes[exc.__class__.__name__] += 1  # type: ignore[index]
                    continue
                codes[answer.status_code] += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        return codes, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=300)
    parser.add_argument("--checks", type=int, default=100)
    parser.add_argument("--per-token", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, WebhookReceiver() as receiver:
        receiver.mode = "record"
        root = Path(tmp)
        snapshot = SnapshotBuilder(root / "snapshot", root / "namespace")
        ids = [f"load-{i:04d}" for i in range(args.checks)]
        snapshot.commit({"_lakefs_actions/load.yaml": webhook_actions(receiver.url, ids)}, branch="main")
        snapshot.write()
        (root / "checks.yaml").write_text("reaper_interval: 1h\ndefault_timeout: 1h\n")
        exe = Path(sys.executable).parent / "lakewarden"
        proc = subprocess.Popen(
            [str(exe), "checks", "serve", "--snapshot", str(snapshot.directory), "--port", "0",
             "--config", str(root / "checks.yaml"), "--state", str(root / "state")],
            stdout=subprocess.PIPE, text=True, start_new_session=True,
        )
        try:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            url = line.split("serving on ")[1].split()[0]
            token = (root / "state" / "checks-api-token").read_text().strip()
            answer = requests.post(f"{url}/api/v1/repositories/{REPO}/refs/main/checks",
                                   headers={"Authorization": f"Bearer {token}"}, timeout=60)
            assert answer.status_code == 202, answer.text
            events = receiver.events(args.checks, timeout=120)
            calls = [(e["callback_url"], {"status": "SUCCESS", "metadata": {"caller": str(i)}})
                     for e in events for i in range(args.per_token)]
            random.Random(1).shuffle(calls)
            cpu_before = cpu_seconds(proc.pid)
            codes, seconds = asyncio.run(fire(calls, args.clients))
            server_cpu = cpu_seconds(proc.pid) - cpu_before
            load = os.getloadavg()[0]
            listing = requests.get(f"{url}/api/v1/repositories/{REPO}/refs/main/checks", timeout=60).json()
            finished = Counter(c["status"] for c in listing["checks"])
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    total = sum(codes.values())
    # One winner per token: exactly one 200 per token, every other answer a 403, every check SUCCESS.
    errors = sum(v for k, v in codes.items() if isinstance(k, str))
    ok = codes[200] == args.checks and codes[403] == total - args.checks - errors and finished == {"SUCCESS": args.checks}
    print(f"{total} callbacks ({args.checks} tokens x {args.per_token}) from {args.clients} concurrent clients "
          f"in {seconds:.2f}s: {total / seconds:.0f} callbacks/s on {os.cpu_count()} cores "
          f"(service CPU {server_cpu:.1f}s = {server_cpu / total * 1000:.1f} ms per callback; load average {load:.1f}); "
          f"answers {dict(sorted(codes.items(), key=str))}; one winner per token: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
