"""``lakewarden sweep`` of N keys on a local S3 server against a bare boto3 process deleting the
same keys in DeleteObjects batches of 1,000.

    python benchmarks/sweep_s3.py [--keys 10000] [--rounds 1]

moto's S3 server runs as a child process on 127.0.0.1. Both sides are whole processes timed from
spawn to exit, deleting the same freshly written keys. The bare side reads a plain list of keys
and sends sequential DeleteObjects of 1,000 keys (Quiet), with nothing else: the floor for
deleting them from Python. The sweep side is the command a user runs (validation, lock, re-check
of every address, DeleteObjects of 1,000 keys with a few in flight and backoff, durable outcome
records, summary.json kept current, outcomes.csv). Also printed: the CLI's start-up alone
(``lakewarden --help``). Target: sweep / bare <= 1.5. moto is much slower per request than S3,
so absolute rates say little; the ratio is the figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from bench_support import lakewarden_env, moto_server, sweep_command, timed, write_report

BUCKET = "bench-sweep"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}
BARE = """
import sys, boto3
endpoint, bucket, listing = sys.argv[1:4]
keys = open(listing, encoding="utf-8").read().split("\\n")[:-1]
client = boto3.client("s3", endpoint_url=endpoint)
for start in range(0, len(keys), 1000):
    response = client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[start:start + 1000]], "Quiet": True})
    assert not response.get("Errors"), response["Errors"][:3]
"""


def _client(endpoint: str) -> Any:
    from lakewarden.deleters.s3 import s3_client

    return s3_client({"endpoint_url": endpoint, "region_name": "us-east-1", "aws_access_key_id": "bench", "aws_secret_access_key": "bench"})


def _fill(client: Any, keys: Sequence[str]) -> None:
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda key: client.put_object(Bucket=BUCKET, Key=key, Body=b""), keys))


def _count(client: Any, prefix: str) -> int:
    return sum(page.get("KeyCount", 0) for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=1, help="repeat both sides; the best of each is compared")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    env = {**lakewarden_env(), **CREDENTIALS}
    best_sweep = best_bare = best_own = float("inf")
    with moto_server() as endpoint, tempfile.TemporaryDirectory(prefix="lw-bench-sweep-s3-") as scratch:
        base = Path(scratch)
        client = _client(endpoint)
        client.create_bucket(Bucket=BUCKET)
        keys = [f"repo/data/g{i % 97:02d}/obj-{i:09d}" for i in range(args.keys)]
        listing = base / "keys.txt"
        listing.write_text("".join(k + "\n" for k in keys), encoding="utf-8")
        cli_start = min(timed([sys.executable, "-m", "lakewarden", "--help"], env=env) for _ in range(3))
        for round_ in range(args.rounds):
            started = time.monotonic()
            _fill(client, keys)
            print(f"round {round_ + 1}: put {len(keys)} keys in {time.monotonic() - started:.1f}s", flush=True)
            bare = timed([sys.executable, "-c", BARE, endpoint, BUCKET, str(listing)], env=env)
            assert _count(client, "repo/") == 0, "bare side left keys"

            _fill(client, keys)
            report = write_report(base / f"report-{round_}", f"s3://{BUCKET}/repo", [k.removeprefix("repo/") for k in keys])
            sweep = timed(sweep_command(report, base / "state", "--s3-endpoint", endpoint), env=env)
            summary = json.loads((report / "summary.json").read_text())
            assert summary["status"] == "swept" and summary["num_deleted"] == len(keys), summary
            assert _count(client, "repo/") == 0, "sweep left keys"
            own = json.loads((report / "sweep" / "summary.json").read_text())["seconds"]
            best_sweep, best_bare, best_own = min(best_sweep, sweep), min(best_bare, bare), min(best_own, own)
            print(f"round {round_ + 1}: bare boto3 {bare:.2f}s, lakewarden sweep {sweep:.2f}s ({summary['sweep_engine']} engine)", flush=True)
    print()
    print(f"keys                                 : {args.keys}")
    print(f"bare boto3 DeleteObjects (process)   : {best_bare:8.2f}s")
    print(f"lakewarden sweep (process)           : {best_sweep:8.2f}s")
    print(f"  of which CLI start-up alone        : {cli_start:8.2f}s  (lakewarden --help, best of 3)")
    print(f"  the sweep\'s own work             : {best_own:8.2f}s  (sweep/summary.json seconds)")
    print(f"ratio sweep / bare                   : {best_sweep / best_bare:8.2f}x  (target <= 1.5x)")
    print(f"ratio without the CLI start-up       : {(best_sweep - cli_start) / best_bare:8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
