"""What the sweep benchmarks share: report directories, timed whole processes, a moto server.

Each side of a comparison is a whole process (interpreter start included), timed from spawn to
exit by the parent, so the figures compare what a user waits for.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence


def write_report(directory: Path, namespace: str, addresses: Sequence[str]) -> Path:
    """A dry-run report marking ``addresses`` (RELATIVE, under ``namespace``)."""
    directory.mkdir(parents=True)
    summary = {
        "run_id": "bench", "job": "bench", "dry_run": True, "now": "2026-01-01T00:00:00Z",
        "num_marked": len(addresses), "num_deleted": 0, "num_failed": 0, "status": "marked",
        "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:00:00Z", "success": True,
        "storage_namespace": namespace, "repository_id": "bench",
    }
    (directory / "summary.json").write_text(json.dumps(summary))
    with open(directory / "addresses.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["address", "address_type", "physical_address"])
        for address in sorted(addresses):
            writer.writerow([address, "RELATIVE", f"{namespace.rstrip('/')}/{address}"])
    return directory


def timed(command: Sequence[str], *, env: dict[str, str] | None = None) -> float:
    """Seconds from spawning ``command`` to its exit; fails loudly on a non-zero exit."""
    started = time.perf_counter()
    completed = subprocess.run(list(command), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"{command[:4]} exited {completed.returncode}: {completed.stderr.strip()[-2000:]}")
    return seconds


def lakewarden_env() -> dict[str, str]:
    """This interpreter's environment, with the checkout's package importable by children."""
    env = dict(os.environ)
    package = str(Path(__file__).resolve().parents[1] / "python")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package, env.get("PYTHONPATH")) if p)
    return env


def sweep_command(report: Path, state: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "lakewarden", "sweep", "--report", str(report), "--state", str(state), *extra]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's S3 server in a child process on 127.0.0.1 (not sharing the benchmark's GIL)."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url, timeout=1).close()
                break
            except Exception:  # noqa: BLE001 - not up yet
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
