"""``lakewarden sweep`` of N keys on Azure (Azurite) and GCS (gcp-storage-emulator) against a bare
SDK process deleting the same keys with the same batch API.

    python benchmarks/sweep_stores.py [--keys 2000] [--gcs-keys 500] [--rounds 1] [--stores azure,gcs]

Each emulator runs as a child process on 127.0.0.1 (the test suite's own launchers,
python/tests/store_emulators.py). Both sides are whole processes timed from spawn to exit,
deleting the same freshly written keys in the same batches and order, each side in a fresh
emulator (both emulators keep state for every delete: gcp-storage-emulator rewrites its whole
metadata file, soft-deleted objects included, on each one, so the side that ran second in a
shared emulator paid for the first side's deletes: 2.2x at 2,000 keys before this). The bare side reads a plain list of keys and sends
sequential batches at the store's limit with nothing else (Azure Blob Batch of 256 with
azure-storage-blob, GCS batch requests of 100 with google-cloud-storage): the floor for deleting
them from Python. The sweep side is the command a user runs (validation, lock, re-check of every
address, batches with a few in flight and backoff, durable outcome records, summary.json kept
current, outcomes.csv), reaching the emulator through the SDKs' own variables
(``AZURE_STORAGE_CONNECTION_STRING``, ``STORAGE_EMULATOR_HOST``). Target: sweep / bare <= 1.3.
Emulators are slower per request than the services, so absolute rates say little; the ratio is
the figure. gcp-storage-emulator's in-memory store costs time proportional to the bucket's size
per delete (a batch of 100 takes ~9 s in a bucket of 2,000 objects), and Azurite's in-memory
store slows down the same way (2,000 keys: a Blob Batch of 256 in ~0.8 s; 10,000 keys: the bare
SDK process had not finished after 4 minutes), so 10,000 keys take far longer than the services
would on either side; the defaults are sizes the emulators delete in seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from bench_support import lakewarden_env, sweep_command, timed, write_report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python" / "tests"))
sys.path.insert(0, str(ROOT / "python"))

from store_emulators import AZURITE_ACCOUNT, AZURITE_KEY, azure_container, gcs_bucket, start_azurite, start_gcs_emulator  # noqa: E402

BARE_AZURE = """
import os, sys
from azure.storage.blob import ContainerClient
container, listing = sys.argv[1:3]
names = open(listing, encoding="utf-8").read().split("\\n")[:-1]
client = ContainerClient.from_connection_string(os.environ["AZURE_STORAGE_CONNECTION_STRING"], container)
for start in range(0, len(names), 256):
    parts = list(client.delete_blobs(*names[start:start + 256], raise_on_any_failure=False))
    assert all(p.status_code == 202 for p in parts), [p.status_code for p in parts][:5]
"""

BARE_GCS = """
import sys
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage
bucket_name, listing = sys.argv[1:3]
names = open(listing, encoding="utf-8").read().split("\\n")[:-1]
client = storage.Client(project="bench", credentials=AnonymousCredentials())
bucket = client.bucket(bucket_name)
for start in range(0, len(names), 100):
    with client.batch(raise_exception=True):
        for name in names[start:start + 100]:
            bucket.delete_blob(name)
"""


def _fill(put: Callable[[str], Any], keys: Sequence[str], threads: int) -> None:
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(put, keys))


@contextmanager
def fresh_store(kind: str) -> Iterator[tuple[dict[str, str], str, str, int, Callable[[str], Any], Callable[[], int]]]:
    """A new emulator with an empty bucket/container: (env, namespace, bucket, fill threads, put,
    count). Each side of a round gets its own: both emulators keep state for every delete
    (gcp-storage-emulator rewrites its whole metadata file, soft-deleted objects included, on
    each one), so a side running after the other in the same emulator pays for its deletes."""
    emulator = start_azurite() if kind == "azure" else start_gcs_emulator()
    env = lakewarden_env()
    try:
        if kind == "azure":
            container = azure_container(emulator.url, "bench")
            env["AZURE_STORAGE_CONNECTION_STRING"] = (
                f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};BlobEndpoint={emulator.url};"
            )

            def put(key: str) -> None:
                container.upload_blob(key, b"", overwrite=True)

            def count() -> int:
                return sum(1 for _ in container.list_blobs(name_starts_with="repo/"))

            yield env, f"https://{AZURITE_ACCOUNT}.blob.core.windows.net/bench/repo", "bench", 16, put, count
        else:
            bucket = gcs_bucket(emulator.url, "bench")
            env["STORAGE_EMULATOR_HOST"] = emulator.url

            def put(key: str) -> None:
                bucket.blob(key).upload_from_string(b"")

            def count() -> int:
                return sum(1 for _ in bucket.client.list_blobs("bench", prefix="repo/"))

            # the emulator slows down under concurrent writes: fill it from one thread
            yield env, "gs://bench/repo", "bench", 1, put, count
    finally:
        emulator.stop()


def bench_store(kind: str, keys: list[str], rounds: int, base: Path, sweep_args: Sequence[str] = ()) -> tuple[float, float]:
    """(best bare seconds, best sweep seconds) for ``kind`` over ``rounds``."""
    bare_script = BARE_AZURE if kind == "azure" else BARE_GCS
    # the bare side sends the sweep's batches: the same keys in the same order (a report's
    # addresses are sorted)
    listing = base / f"{kind}-keys.txt"
    listing.write_text("".join(k + "\n" for k in sorted(keys)), encoding="utf-8")
    best_bare = best_sweep = float("inf")
    for round_ in range(rounds):
        with fresh_store(kind) as (env, _, target, threads, put, count):
            started = time.monotonic()
            _fill(put, keys, threads)
            print(f"{kind} round {round_ + 1}: put {len(keys)} keys in {time.monotonic() - started:.1f}s", flush=True)
            bare = timed([sys.executable, "-c", bare_script, target, str(listing)], env=env)
            assert count() == 0, "bare side left keys"
        with fresh_store(kind) as (env, namespace, _, threads, put, count):
            _fill(put, keys, threads)
            report = write_report(base / f"{kind}-report-{round_}", namespace, [k.removeprefix("repo/") for k in keys])
            sweep = timed(sweep_command(report, base / f"state-{round_}", *sweep_args), env=env)
            summary = json.loads((report / "summary.json").read_text())
            assert summary["status"] == "swept" and summary["num_deleted"] == len(keys), summary
            assert count() == 0, "sweep left keys"
        best_bare, best_sweep = min(best_bare, bare), min(best_sweep, sweep)
        print(f"{kind} round {round_ + 1}: bare SDK {bare:.2f}s, lakewarden sweep {sweep:.2f}s", flush=True)
    return best_bare, best_sweep


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=2_000, help="keys on Azurite (see above)")
    parser.add_argument("--rounds", type=int, default=1, help="repeat both sides; the best of each is compared")
    parser.add_argument("--stores", default="azure,gcs", help="comma-separated: azure, gcs")
    parser.add_argument("--gcs-keys", type=int, default=500, help="keys on the GCS emulator (see above)")
    parser.add_argument("--sweep-threads", type=int, help="the sweep's --threads (default: its own, 8 on Azure and GCS)")
    args = parser.parse_args(argv)
    sweep_args = ("--threads", str(args.sweep_threads)) if args.sweep_threads else ()
    results = {}
    with tempfile.TemporaryDirectory(prefix="lw-bench-sweep-stores-") as scratch:
        for kind in (k.strip() for k in args.stores.split(",")):
            count = args.gcs_keys if kind == "gcs" else args.keys
            keys = [f"repo/data/g{i % 97:02d}/obj-{i:09d}" for i in range(count)]
            results[kind] = (count, *bench_store(kind, keys, args.rounds, Path(scratch), sweep_args))
    print()
    for kind, (count, bare, sweep) in results.items():
        print(f"{kind:6s} {count:6d} keys  bare SDK {bare:7.2f}s  lakewarden sweep {sweep:7.2f}s  ratio {sweep / bare:5.2f}x  (target <= 1.3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
