"""Sweep throughput against a local S3 endpoint: the sweep vs. one DeleteObject per key.

    python -m lakewarden.bench.sweep_s3 --keys 20000

Starts moto's S3 server as a child process on 127.0.0.1 (so the server does not share the
benchmark's interpreter lock), fills a bucket, then measures

* baseline: one ``DeleteObject`` request per key, sequentially, over ``--baseline-keys`` keys;
* sweep: :func:`lakewarden.sweep.sweep_report` over a report marking ``--keys`` keys (Spark
  tasks, DeleteObjects batches of 1000, several in flight per task), timed end to end
  (reading the report, deleting, recording outcomes, writing summaries).

and prints deletes/s for both and their ratio. A figure, not a test: moto is far slower than
S3 per request, which flatters neither side in particular. The child server is stopped on exit.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator, Sequence

from contextlib import contextmanager

BUCKET = "bench-sweep"
NAMESPACE = f"s3://{BUCKET}/repo"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def moto_server() -> Iterator[str]:
    """A moto S3 server in a child process; yields its URL and stops it afterwards."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url, timeout=1).close()
                break
            except Exception:  # noqa: BLE001 - not up yet
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto server did not start")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _options(endpoint: str) -> dict[str, str]:
    return {"endpoint_url": endpoint, "region_name": "us-east-1", "aws_access_key_id": "bench", "aws_secret_access_key": "bench"}


def _put(client: Any, keys: Sequence[str], threads: int) -> float:
    started = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda key: client.put_object(Bucket=BUCKET, Key=key, Body=b""), keys))
    return time.monotonic() - started


def _count(client: Any, prefix: str) -> int:
    total = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        total += page.get("KeyCount", 0)
    return total


def _write_report(directory: Path, keys: Sequence[str]) -> None:
    directory.mkdir(parents=True)
    summary = {
        "run_id": "bench", "job": "bench", "dry_run": True, "now": "2026-01-01T00:00:00Z",
        "num_marked": len(keys), "num_deleted": 0, "num_failed": 0,
        "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:00:00Z", "success": True,
        "storage_namespace": NAMESPACE, "repository_id": "bench",
    }
    (directory / "summary.json").write_text(json.dumps(summary))
    prefix = "repo/"
    with open(directory / "addresses.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["address", "address_type", "physical_address"])
        for key in sorted(keys):
            writer.writerow([key[len(prefix):], "RELATIVE", f"s3://{BUCKET}/{key}"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakewarden.bench.sweep_s3", description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=20_000, help="keys the sweep deletes (default 20000)")
    parser.add_argument("--baseline-keys", type=int, default=1_000, help="keys deleted one request each (default 1000)")
    parser.add_argument("--parallelism", type=int, default=None, help="Spark tasks (default: Spark's default parallelism)")
    parser.add_argument("--threads", type=int, default=None, help="DeleteObjects in flight per task (default 8)")
    parser.add_argument("--put-threads", type=int, default=16, help="threads filling the bucket")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from lakewarden.deleters.s3 import s3_client
    from lakewarden.spark_session import get_or_create
    from lakewarden.sweep import sweep_report

    with moto_server() as endpoint, tempfile.TemporaryDirectory(prefix="lakewarden-bench-") as scratch:
        client = s3_client(_options(endpoint), max_pool_connections=args.put_threads)
        client.create_bucket(Bucket=BUCKET)
        sweep_keys = [f"repo/data/g{i % 97:02d}/obj-{i:09d}" for i in range(args.keys)]
        baseline_keys = [f"baseline/obj-{i:09d}" for i in range(args.baseline_keys)]
        print(f"filling s3://{BUCKET} on {endpoint} with {len(sweep_keys) + len(baseline_keys)} objects...", flush=True)
        put_seconds = _put(client, sweep_keys + baseline_keys, args.put_threads)
        print(f"  put {len(sweep_keys) + len(baseline_keys)} objects in {put_seconds:.1f}s", flush=True)

        started = time.monotonic()
        for key in baseline_keys:
            client.delete_object(Bucket=BUCKET, Key=key)
        baseline_seconds = time.monotonic() - started
        assert _count(client, "baseline/") == 0
        baseline_rate = len(baseline_keys) / baseline_seconds

        report = Path(scratch) / "report"
        _write_report(report, sweep_keys)
        spark = get_or_create(Path(scratch) / "state")
        spark.range(1000).selectExpr("sum(id)").collect()  # JVM warm-up; Python workers still start in the sweep
        result = sweep_report(
            spark, report, deleter_options=_options(endpoint), parallelism=args.parallelism, threads=args.threads
        )
        left = _count(client, "repo/")
        sweep_rate = result.num_deleted / result.seconds
        spark.stop()

    print()
    print(f"one DeleteObject per key      : {len(baseline_keys):>9} keys in {baseline_seconds:8.2f}s = {baseline_rate:10.0f} deletes/s")
    print(f"sweep, deleting job           : {result.num_deleted:>9} keys in {result.delete_seconds:8.2f}s = {result.deletes_per_second:10.0f} deletes/s")
    print(f"sweep, end to end (+ records) : {result.num_deleted:>9} keys in {result.seconds:8.2f}s = {sweep_rate:10.0f} deletes/s"
          f"  (failed {result.num_failed}, left {left})")
    print(f"ratio, deleting job / per-key : {result.deletes_per_second / baseline_rate:.1f}x (target >= 50x)")
    print(f"ratio, end to end / per-key   : {sweep_rate / baseline_rate:.1f}x")
    return 0 if result.success and left == 0 else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
