"""The same end-to-end scenario on every store lakeFS keeps repositories on: lakeFS's local
blockstore (``local://``), S3 (moto), Azure Blob Storage (Azurite) and Google Cloud Storage
(gcp-storage-emulator), all on 127.0.0.1 and stopped by the tests' session fixtures.

As a user runs it, through the command line and the store options every command takes:

1. the fake lakeFS of fake_lakefs.py keeps the repository of :func:`fake_lakefs.build_scenario`
   in a namespace on the store (objects, ``dummy``, ``_lakefs/`` ranges and metaranges);
2. ``lakewarden extract`` reads it into a snapshot (``_lakefs/`` files read from the store);
3. ``gc uncommitted --dry-run`` (the namespace listed through the store) and ``gc committed
   --dry-run`` mark exactly what lakeFS's GC would; on Azure and GCS, ``gc uncommitted
   --inventory`` with the cloud's own inventory report (on the store) marks the same, and a
   report too old for ``--min-age`` is exit 2;
4. ``lakewarden explain`` explains one marked address of each;
5. ``lakewarden sweep`` deletes exactly the committed marks; the uncommitted sweep is killed
   (SIGKILL) after its first batch, and a second sweep finishes it: every marked object gone,
   each recorded deleted once, nothing else in the store touched;
6. the sweep says whether its deletes leave recoverable versions (the store's answer).

Object times: the emulators stamp objects with their own (current) clock, so every store here
does (the local namespace ignores the scenario's times too). Committed GC judges commit dates
and runs at the scenario's clock; uncommitted GC runs two days after the objects were written
(a dry run may look ahead), so every unreferenced object is old enough: the two abandoned ones
and the "young" one alike.

Emulator gaps: none that the code path needs. Azurite answers Blob Batch and its service
properties (soft delete); gcp-storage-emulator answers the JSON API's batch endpoint and bucket
metadata (its new buckets report a 7-day soft delete policy, as GCS's do by default).
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import pytest

from fake_lakefs import SCENARIO_NOW, LocalNamespace, Namespace, Scenario, build_scenario, use_scenario_credentials
from lakewarden.cli import main
from report_files import marked, summary
from store_emulators import AZURITE_KEY
import sweep_holding
from store_worlds import World, endpoint, make_world
from test_sweep_support import S3_ENV, wait_held

# second_process: the embedded step was still the command's longest (17:38 against 14:17 for
# the other process, durations summed 1,052 s against 842 s); this module's ~1 min (every job on
# four stores) runs beside it, on the session test_gc_unified.py (which shares its servers)
# starts in the second process (conftest.py)
pytestmark = [pytest.mark.spark, pytest.mark.second_process]

KINDS = ("local", "s3", "azure", "gcs")
COMMITTED_NOW = SCENARIO_NOW.isoformat().replace("+00:00", "Z")


class WallClockLocal(LocalNamespace):
    """lakeFS's local blockstore, stamping objects with the current time like the servers do."""

    def put(self, key: str, data: bytes, at: datetime | None = None) -> None:
        super().put(key, data, None)


class WorldNamespace(Namespace):
    """A repository's namespace ``<bucket or container>/repos/<name>`` on a server."""

    def __init__(self, world: World, name: str) -> None:
        self.world = world
        self.prefix = f"repos/{name}/"
        self.uri = f"{world.root}/repos/{name}"

    def put(self, key: str, data: bytes, at: datetime | None = None) -> None:
        self.world.put(self.prefix + key, data)

    def get(self, key: str) -> bytes:
        return bytes(self.world.get(self.prefix + key))

    def exists(self, key: str) -> bool:
        return self.prefix + key in self.world.list_keys()

    def delete(self, key: str) -> None:
        self.world.delete(self.prefix + key)


@dataclass
class Store:
    """One store's namespace, the options that reach it, and a way to see what it holds."""

    kind: str
    namespace: Namespace
    args: list[str]
    keys: Callable[[], set[str]]  # every object's key relative to the namespace
    env: dict[str, str] = field(default_factory=dict)
    world: World | None = None  # the bucket or container (servers only)


@pytest.fixture(scope="session")
def server(request: pytest.FixtureRequest) -> Callable[[str], str]:
    return lambda kind: endpoint(kind, request)


@pytest.fixture
def creds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_scenario_credentials(monkeypatch, tmp_path)
    # only the options on the command line reach the stores
    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_KEY", "STORAGE_EMULATOR_HOST", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)


def make_store(kind: str, server: Callable[[str], str], tmp_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch) -> Store:
    name = f"repo-{uuid.uuid4().hex[:8]}"  # a namespace no earlier run of the state dir has seen
    if kind == "local":
        blockstore = tmp_path / "blockstore"
        root = blockstore / name
        local = WallClockLocal(root, uri=f"local://{name}")

        def local_keys() -> set[str]:
            return {str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()}

        return Store(kind, local, ["--local-blockstore", str(blockstore)], local_keys)
    world = make_world(kind, server(kind))
    namespace = WorldNamespace(world, name)

    def world_keys() -> set[str]:
        return {key[len(namespace.prefix):] for key in world.list_keys() if key.startswith(namespace.prefix)}

    if kind == "s3":
        # credentials the usual way for boto3 (the environment); Spark's Python workers list the
        # namespace and get their environment from the JVM, plus this mapping
        for variable, value in S3_ENV.items():
            monkeypatch.setenv(variable, value)
            monkeypatch.setitem(spark.sparkContext.environment, variable, value)
        return Store(kind, namespace, ["--s3-endpoint", world.endpoint, "--s3-region", "us-east-1"], world_keys, dict(S3_ENV), world)
    if kind == "azure":
        return Store(kind, namespace, ["--azure-endpoint", world.endpoint, "--azure-account-key", AZURITE_KEY], world_keys, world=world)
    return Store(kind, namespace, ["--gcs-endpoint", world.endpoint], world_keys, world=world)


def deleted_records(report: Path) -> Counter[str]:
    """How many times each address is recorded deleted, over every sweep of the report."""
    counts: Counter[str] = Counter()
    for path in (report / "sweep" / "outcomes").glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            if line.endswith("\n"):
                record = json.loads(line)
                if record["status"] == "deleted":
                    counts[record["address"]] += 1
    return counts


def explain(report: Path, address: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    code = main(["explain", "--report", str(report), address, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    answer = json.loads(out)
    assert answer["found"] is True
    [explained] = [item for item in answer["objects"] if item["address"] == address]
    return explained


def start_sweep(store: Store, report: Path, tmp_path: Path, *, hold: str) -> subprocess.Popen[str]:
    """A ``lakewarden sweep`` process that stops at ``hold`` (python/tests/sweep_holding.py): one
    address per batch and one batch in flight, so a kill after batch N leaves exactly N deleted."""
    env = {**os.environ, **store.env}
    command = [*sweep_holding.COMMAND, hold, str(tmp_path / "held"), "sweep", "--report", str(report), "--state", str(tmp_path / "sweep-state"),
               "--batch-size", "1", "--threads", "1", "--engine", "process", *store.args]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def sweep(store: Store, report: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], list[str]]:
    """``lakewarden sweep`` in this process: its JSON line and the lines before it."""
    capsys.readouterr()
    code = main(["sweep", "--report", str(report), "--state", str(tmp_path / "sweep-state"), *store.args])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.strip().splitlines()
    return json.loads(lines[-1]), lines[:-1]


@pytest.mark.parametrize("kind", KINDS)
def test_every_job_on_every_store(
    kind: str, server: Callable[[str], str], spark: Any, test_state_dir: Path, creds: None, monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    store = make_store(kind, server, tmp_path, spark, monkeypatch)
    scenario: Scenario = build_scenario(store.namespace)
    written = datetime.now(timezone.utc)  # every object of the namespace is older than this
    addr = scenario.addresses
    lakefs = scenario.fake.serve()
    try:
        snapshot = tmp_path / "snap"
        code = main(["extract", "--lakefs-endpoint", lakefs.endpoint, "--repo", scenario.fake.repo_id, "--out", str(snapshot),
                     "--cache-dir", str(tmp_path / "range-cache"), *store.args])
        assert code == 0, capsys.readouterr().err
    finally:
        lakefs.stop()
    assert json.loads((snapshot / "repository.json").read_text())["storage_namespace"] == store.namespace.uri
    before = store.keys()
    assert "dummy" in before and any(key.startswith("_lakefs/") for key in before)
    state = str(test_state_dir)

    # uncommitted GC, listing the namespace through its store: every object no entry references
    # (written "two days ago"), never dummy, _lakefs/, a staged or a committed object
    two_days_on = (datetime.now(timezone.utc) + timedelta(days=2)).isoformat().replace("+00:00", "Z")
    uncommitted = tmp_path / "uncommitted"
    code = main(["gc", "uncommitted", "--snapshot", str(snapshot), "--state", state, "--report", str(uncommitted),
                 "--now", two_days_on, "--dry-run", "--clean", *store.args])
    assert code == 0, capsys.readouterr().err
    expected_uncommitted = scenario.abandoned | {addr["abandoned-young"]}
    assert marked(uncommitted, "address") == expected_uncommitted
    assert expected_uncommitted <= before
    if kind in ("azure", "gcs"):
        _check_cloud_inventory(store, snapshot, state, written, two_days_on, expected_uncommitted, tmp_path, capsys)

    # committed GC with the repository's rules, at the scenario's clock: what lakeFS's GC expires
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(scenario.rules))
    committed = tmp_path / "committed"
    code = main(["gc", "committed", "--snapshot", str(snapshot), "--state", state, "--rules", str(rules),
                 "--report", str(committed), "--now", COMMITTED_NOW, "--dry-run", *store.args])
    assert code == 0, capsys.readouterr().err
    assert marked(committed, "address") == scenario.committed_marked == {addr["A1"], addr["F1"]}
    assert store.keys() == before, "a dry run deletes nothing"

    # explain: A1 is a.csv of m1 (and of the deleted branch's of1 on top of it); an abandoned
    # object is held by no commit and no staged entry
    why = explain(committed, addr["A1"], capsys)
    assert why["marked"] is True and scenario.commits["m1"] in {c["commit_id"] for c in why["commits"]}
    assert all(c["paths"] == ["a.csv"] for c in why["commits"])
    why = explain(uncommitted, addr["abandoned-1"], capsys)
    assert why["marked"] is True and why["commits"] == [] and why["staged"] == []

    # the committed marks: one sweep deletes exactly them
    result, notes = sweep(store, committed, tmp_path, capsys)
    assert (result["num_marked"], result["num_deleted"], result["num_failed"], result["success"]) == (2, 2, 0, True)
    assert store.keys() == before - scenario.committed_marked
    assert set(deleted_records(committed).values()) == {1}
    _check_recoverability(store, committed, result, notes)

    # the uncommitted marks: a sweep killed after its first batch (one address), then resumed
    first = start_sweep(store, uncommitted, tmp_path, hold="batch:1")
    wait_held(first, tmp_path)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    killed = summary(uncommitted)
    assert (killed["status"], killed["success"], killed["num_deleted"]) == ("sweeping", False, 1)
    gone = expected_uncommitted - store.keys()
    assert set(deleted_records(uncommitted)) == gone and len(gone) == 1, "recorded deleted = gone, one batch of one"
    assert store.keys() == before - scenario.committed_marked - gone, "nothing else touched"

    result, _ = sweep(store, uncommitted, tmp_path, capsys)
    assert (result["num_marked"], result["num_deleted"], result["num_failed"], result["success"]) == (3, 3, 0, True)
    assert result["num_previously_deleted"] == 1
    done = summary(uncommitted)
    assert (done["status"], done["success"], done["resumed_from"]) == ("swept", True, killed["sweep_id"])
    records = deleted_records(uncommitted)
    assert set(records) == expected_uncommitted and set(records.values()) == {1}, "nothing deleted twice, nothing lost"
    assert store.keys() == before - scenario.committed_marked - expected_uncommitted
    left = store.keys()
    assert "dummy" in left and {addr["X1"], addr["D1"], addr["B2"], addr["A2"], addr["A3"]} <= left


def _check_recoverability(store: Store, report: Path, result: dict[str, Any], notes: list[str]) -> None:
    """The sweep says what the store says about recoverable versions, in its JSON line, both
    summaries and a note line (local disk and fresh S3 buckets keep nothing; GCS buckets soft
    delete by default; Azurite's account may have soft delete on from another test)."""
    from lakewarden.stores import StoreOptions, store_for

    if store.kind == "local":
        expected: bool | None = False
    elif store.kind == "gcs":
        expected = True
    elif store.kind == "s3":
        expected = False
    else:
        options = StoreOptions(azure_endpoint=store.args[1], azure_account_key=AZURITE_KEY)
        expected = store_for(store.namespace.uri, options).recoverability().recoverable
    assert result["recoverable"] is expected
    written = summary(report)
    assert written["recoverable"] is expected and written["recoverability"] == result["recoverability"]
    assert summary(report / "sweep")["recoverable"] is expected
    if expected:
        assert notes == [f"note: deleted objects stay recoverable and still cost storage: {result['recoverability']}"]
        assert "soft delete" in result["recoverability"]
    else:
        assert notes == [] and result["recoverability"] == ""


def _check_cloud_inventory(
    store: Store, snapshot: Path, state: str, written: datetime, now: str, expected: set[str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``gc uncommitted --inventory`` with the cloud's own report of the namespace (Azure Blob
    Inventory / GCS Storage Insights, CSV, manifest and data files on the store itself, shaped
    as each cloud documents them; rows under ``_lakefs/`` and ``dummy`` included, as a real
    report lists them): the same marks as the listing. A report taken longer ago than
    ``--min-age`` before ``--now`` cannot vouch for younger objects: exit 2, one line."""
    assert store.world is not None
    keys = sorted(store.keys())
    prefix = store.namespace.prefix  # type: ignore[attr-defined]
    stamp = written.strftime("%Y-%m-%dT%H:%M:%SZ")
    clock = datetime.fromisoformat(now.replace("Z", "+00:00"))

    def report(created: datetime, tag: str) -> str:
        taken = created.strftime("%Y-%m-%dT%H:%M:%SZ")
        if store.kind == "azure":
            container = store.world.root.rsplit("/", 1)[1]
            fields = ["Name", "Creation-Time", "Last-Modified", "Content-Length", "BlobType", "Deleted", "IsCurrentVersion"]
            rows = [[f"{container}/{prefix}{key}", stamp, stamp, "8", "BlockBlob", "false", "true"] for key in keys]
            blob = f"inventory-{tag}/{created:%Y/%m/%d/%H-%M-%S}/Rule_1/Rule_1.csv"
            store.world.put(blob, _csv(fields, rows))
            manifest = {
                "destinationContainer": container,
                "endpoint": f"https://{store.world.root.split('/')[2]}",
                "files": [{"blob": blob, "size": len(_csv(fields, rows)), "labels": [], "schemaFields": fields}],
                "inventoryCompletionTime": taken,
                "inventoryStartTime": taken,
                "ruleDefinition": {
                    "filters": {"blobTypes": ["blockBlob"], "prefixMatch": [f"{container}/repos/"]},
                    "format": "csv",
                    "objectType": "blob",
                    "schedule": "daily",
                    "schemaFields": fields,
                },
                "ruleName": "Rule_1",
                "status": "Succeeded",
                "summary": {"objectCount": len(rows), "totalObjectSize": 8 * len(rows)},
                "version": "1.0",
            }
            key = f"inventory-{tag}/{created:%Y/%m/%d/%H-%M-%S}/Rule_1/Rule_1-manifest.json"
        else:
            bucket = store.world.root.removeprefix("gs://")
            fields = ["project", "bucket", "name", "size", "updated"]
            rows = [["p", bucket, f"{prefix}{key}", "8", stamp] for key in keys]
            shard = f"cfg_{taken.replace('Z', '')}_0.csv"
            store.world.put(f"inventory-{tag}/{shard}", _csv(fields, rows))
            manifest = {
                "report_config": {
                    "name": "projects/p/locations/us/reportConfigs/cfg",
                    "csv_options": {"record_separator": "\n", "delimiter": ",", "header_required": True},
                    "object_metadata_report_options": {
                        "metadata_fields": fields,
                        "storage_filters": {"bucket": bucket},
                        "storage_destination_options": {"bucket": bucket, "destination_path": f"inventory-{tag}"},
                    },
                },
                "records_processed": len(rows),
                "snapshot_time": taken,
                "shard_count": 1,
                "report_shards_file_names": [shard],
            }
            key = f"inventory-{tag}/cfg_{taken.replace('Z', '')}_manifest.json"
        store.world.put(key, json.dumps(manifest).encode())
        return store.world.uri(key)

    fresh = report(clock - timedelta(hours=12), "fresh")
    out = tmp_path / "uncommitted-inventory"
    code = main(["gc", "uncommitted", "--snapshot", str(snapshot), "--state", state, "--report", str(out), "--now", now,
                 "--dry-run", "--clean", "--inventory", fresh, *store.args])
    assert code == 0, capsys.readouterr().err
    assert marked(out, "address") == expected
    assert summary(out)["inventory"] == fresh

    stale = report(clock - timedelta(hours=25), "stale")
    capsys.readouterr()
    code = main(["gc", "uncommitted", "--snapshot", str(snapshot), "--state", state, "--report", str(tmp_path / "stale"),
                 "--now", now, "--dry-run", "--clean", "--inventory", stale, *store.args])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert stale in err and "older than --min-age" in err
    assert not (tmp_path / "stale").exists()


def _csv(fields: list[str], rows: list[list[str]]) -> bytes:
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(fields)
    writer.writerows(rows)
    return buffer.getvalue().encode()
