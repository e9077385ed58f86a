"""Hostile clients for the connection load test (run as its own process, talks to 127.0.0.1 only).

``python hostile_clients.py PORT SECONDS IDLE SLOW [REOPEN]`` keeps IDLE sockets open that send
nothing and SLOW sockets that send a request head (half of them) or a body (the other half) one
byte at a time, reopening every socket the server closes (unless REOPEN is 0), for SECONDS; then
prints its counts as JSON and exits. Every loop is bounded by the deadline.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time

HOST = "127.0.0.1"


async def main(port: int, seconds: float, idle: int, slow: int, reopen: bool = True) -> dict[str, float]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = idle + slow + 256
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    deadline = time.monotonic() + seconds
    counts = {"opened": 0, "closed_by_server": 0, "open_now": 0, "max_open": 0, "slow_closed_after_max": 0.0,
              "connect_errors": 0}

    async def hold(kind: str) -> None:
        while time.monotonic() < deadline:
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), 5)
            except (OSError, asyncio.TimeoutError):
                counts["connect_errors"] += 1
                await asyncio.sleep(0.5)
                continue
            counts["opened"] += 1
            counts["open_now"] += 1
            counts["max_open"] = max(counts["max_open"], counts["open_now"])
            opened = time.monotonic()
            try:
                if kind == "idle":
                    await asyncio.wait_for(reader.read(), max(0.0, deadline - time.monotonic()))
                else:
                    body = b'{"repository_id": "sample", "branch_id": "main", "source_ref": "' + b"a" * 40 + b'"}'
                    head = (b"POST /api/v1/hooks/pre-merge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Content-Length: %d\r\n\r\n" % len(body))
                    prefix, trickle = (b"", head) if kind == "slow-head" else (head, body)
                    writer.write(prefix)
                    for byte in trickle:
                        if time.monotonic() >= deadline or reader.at_eof():
                            break
                        writer.write(bytes([byte]))
                        await writer.drain()
                        try:  # one byte every 0.5 s, while watching for the server's answer or close
                            data = await asyncio.wait_for(reader.read(65536), 0.5)
                        except asyncio.TimeoutError:
                            continue
                        if data or reader.at_eof():
                            break
                    await asyncio.wait_for(reader.read(), max(0.0, deadline - time.monotonic()))
                counts["closed_by_server"] += 1
                if kind != "idle":
                    counts["slow_closed_after_max"] = max(counts["slow_closed_after_max"], time.monotonic() - opened)
            except (asyncio.TimeoutError, OSError):
                pass  # the deadline (or a reset)
            finally:
                counts["open_now"] -= 1
                writer.close()
            if not reopen:
                return
            await asyncio.sleep(0.5)  # reopen, as an attacker keeping its sockets would

    kinds = ["idle"] * idle + ["slow-head"] * (slow // 2) + ["slow-body"] * (slow - slow // 2)
    await asyncio.wait_for(asyncio.gather(*(hold(k) for k in kinds), return_exceptions=True), seconds + 10)
    return counts


if __name__ == "__main__":
    port, seconds, idle, slow = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    reopen = len(sys.argv) < 6 or sys.argv[5] != "0"
    print(json.dumps(asyncio.run(main(port, seconds, idle, slow, reopen))), flush=True)
