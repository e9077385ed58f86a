"""Benchmark: ``lakewarden gc uncommitted`` clean and optimized runs vs. DuckDB's anti-join.

    python benchmarks/uncommitted_gc.py --objects 1000000 [--repeat N] [--workdir DIR]   (needs duckdb: the bench extra)

Writes a synthetic repository snapshot on ``s3://bench-inventory/repo`` (Parquet tables, no
object files): a chain of commits, each adding one range, that reference 9/10 of N objects (a
few of those staged instead of committed); and an S3 Inventory report (``manifest.json``,
``manifest.checksum``, Parquet data files) listing N objects: the referenced ones, one range file
per range under ``_lakefs/``, and unreferenced ones (1% of them younger than --min-age). Then
runs, each as a whole subprocess (interpreter, JVM and dbt start included) on one --state:

1. the clean run: ``lakewarden gc uncommitted --snapshot S --inventory MANIFEST --now T --dry-run --clean``;
2. DuckDB on the same Parquet files, in this process: storage inventory (inside the namespace,
   not ``_lakefs/``) minus every range entry's and staged entry's address minus objects younger
   than 24h;
3. 1% churn two days later (new commits referencing new objects, new abandoned uploads, a new
   inventory report), then the optimized run (the same command without --clean: it finds the
   clean run in the run history), DuckDB again, and a clean run at the same moment;
4. the no-op run: the optimized command again, same snapshot, inventory, state and clock (it
   continues from the clean run at the same moment: nothing changed since), and a plain PySpark
   process (session start and one trivial job), the floor a no-op is held to.

Prints wall times, each run's phases and ranges read (from its report), the ratios
optimized/clean, the issue's (optimized - noop) / (clean - noop) (target <= 20%), noop / plain
PySpark (for reference: the issue's 1.5x is on the demo's sample, noop.py; the no-op must read
no range) and clean/DuckDB, and checks that every run marked what DuckDB counts and the generator
expects (exit 1 if not). Figures, not assertions about time.

``--repeat N``: steps 3 and 4 (optimized, clean at the same moment, no-op) N times, each time
from a copy of the state the first clean run left, in that order; the issue's ratio is then
printed for every repeat and from the three runs' medians. Its two differences are a few
seconds each on runs of ~20 s, and one process's wall time varies by 1-2 s on two cores: one
triple's ratio swung between 60% and 174% on the same code.

``--engine``: every run is the same command handed to an engine this benchmark starts
(``lakewarden engine start``, docs/operations.md; ``LAKEWARDEN_ENGINE``) and stops at the end,
after one clean run on a state dir of its own that is not counted (an engine's first run
compiles its code); peak RSS is then each command's own, not the engine's. The engine warms up
before it takes a run (``engine start --warm-up``); ``--no-warm-up`` starts it without.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ProcessRun, add_engine_options, check_engine_options, child_env, describe_noop, describe_phases, describe_share, engine, incremental_share, keep_class_archive, lakewarden_command, median, phases_of, plain_pyspark_run, print_java, run_measured  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from lakewarden.snapshot import arrow_schemas  # noqa: E402

BUCKET = "bench-inventory"
NAMESPACE = f"s3://{BUCKET}/repo"
PREFIX = "repo/"  # the namespace's key prefix in the bucket
CONFIG = "inventory-config"  # data files live under <BUCKET>/<CONFIG>/data/ in the destination
END = datetime(2026, 1, 1, tzinfo=timezone.utc)  # the clean run's clock
CHURN_AFTER = timedelta(days=2)  # the optimized run's clock is END + this
MIN_AGE = timedelta(hours=24)
REPORT_AGE = timedelta(minutes=10)  # an inventory report is this old when a run reads it
US = 1_000_000
CHUNK = 1_000_000  # rows per Parquet row group batch / inventory data file
SHARE_TARGET = 0.20  # the target for (optimized - noop) / (clean - noop), and for optimized / clean
SCHEMAS = arrow_schemas()
INVENTORY_SCHEMA = pa.schema(
    [
        ("bucket", pa.string()),
        ("key", pa.string()),
        ("size", pa.int64()),
        ("last_modified_date", pa.timestamp("ms", tz="UTC")),
        ("e_tag", pa.string()),
        ("storage_class", pa.string()),
    ]
)
FILE_SCHEMA = (
    "message s3.inventory { required binary bucket (STRING); required binary key (STRING); optional int64 size; "
    "optional int64 last_modified_date (TIMESTAMP(MILLIS,true)); optional binary e_tag (STRING); "
    "optional binary storage_class (STRING);}"
)

# -- synthetic objects: ids -> addresses, sizes, write times (vectorised, no per-row Python) -----


@dataclass(frozen=True)
class Group:
    """Objects ``first..stop-1``, each written up to ``spread`` seconds (2^k - 1) before ``newest``."""

    first: int
    stop: int
    newest: datetime
    spread: int

    def __len__(self) -> int:
        return self.stop - self.first

    def chunks(self) -> Iterator[pa.Array]:
        for start in range(self.first, self.stop, CHUNK):
            yield pa.array(range(start, min(start + CHUNK, self.stop)), pa.int64())

    def written(self, ids: pa.Array) -> pa.Array:
        offsets = pc.multiply(_hash(ids, self.spread), US)
        return pc.cast(pc.subtract(pa.scalar(int(self.newest.timestamp()) * US, pa.int64()), offsets), pa.timestamp("us", tz="UTC"))


@dataclass(frozen=True)
class Commit:
    number: int
    created_at: datetime
    objects: Group  # the entries of the one range this commit adds

    @property
    def commit_id(self) -> str:
        return f"c{self.number:06d}"

    @property
    def range_id(self) -> str:
        return f"r{self.number:06d}"


def _hash(ids: pa.Array, mask: int) -> pa.Array:
    """A deterministic pseudo-random 0..mask per id (mask = 2^k - 1)."""
    return pc.bit_wise_and(pc.multiply(ids, 2654435761), mask)


def _addresses(ids: pa.Array) -> pa.Array:
    """RELATIVE addresses, lakeFS-like: ``data/<shard>/<id>``."""
    shard = pc.utf8_lpad(pc.cast(_hash(ids, 4095), pa.string()), 4, "0")
    return pc.binary_join_element_wise("data", shard, pc.utf8_lpad(pc.cast(ids, pa.string()), 12, "0"), "/")


def _sizes(ids: pa.Array) -> pa.Array:
    return pc.add(_hash(ids, 1023), 1024)


def _chain(first_id: int, count: int, range_entries: int, start: datetime, end: datetime, first_number: int) -> list[Commit]:
    """Commits spread over (start, end], each adding one range of up to ``range_entries`` new objects
    written in the 17 minutes before it."""
    ranges = max(1, math.ceil(count / range_entries))
    step = (end - start) / ranges
    stop_id = first_id + count
    commits = []
    for index in range(ranges):
        stop = min(first_id + range_entries, stop_id)
        created = start + step * (index + 1)
        commits.append(Commit(first_number + index, created, Group(first_id, stop, created, 1023)))
        first_id = stop
    return commits


# -- snapshot tables ------------------------------------------------------------------------------


def _write(path: Path, name: str, columns: dict[str, object]) -> None:
    pq.write_table(pa.table(columns, schema=SCHEMAS[name]), path)


def write_snapshot(directory: Path, commits: list[Commit], staged: Group, reuse: tuple[list[Path], int] = ([], 0)) -> tuple[list[Path], int]:
    """The snapshot of a main branch whose chain is ``commits``. ranges.parquet is a folder: the
    parts of ``reuse`` (an earlier snapshot's, hard-linked: ranges are immutable), which hold the
    ranges of the first ``reuse[1]`` commits, plus one new part for the rest. Returns the parts
    and how many commits they cover, for the next snapshot."""
    range_files, covered = reuse
    directory.mkdir(parents=True)
    (directory / "repository.json").write_text(
        json.dumps({"repository_id": "bench-repo", "storage_namespace": NAMESPACE, "default_branch": "main"})
    )
    ranges_dir = directory / "ranges.parquet"
    ranges_dir.mkdir()
    parts = []
    for path in range_files:
        os.link(path, ranges_dir / path.name)
        parts.append(ranges_dir / path.name)
    new = commits[covered:]
    if new:
        part = ranges_dir / f"part-{len(range_files):05d}.parquet"
        with pq.ParquetWriter(part, SCHEMAS["ranges"]) as writer:
            batch: list[pa.Table] = []
            rows = 0
            for commit in new:
                for ids in commit.objects.chunks():
                    n = len(ids)
                    batch.append(
                        pa.table(
                            {
                                "range_id": pa.repeat(commit.range_id, n),
                                "key": pc.binary_join_element_wise("tables/part", pc.cast(ids, pa.string()), "-"),
                                "address": _addresses(ids),
                                "address_type": pa.repeat("RELATIVE", n),
                                "last_modified": commit.objects.written(ids),
                                "size": _sizes(ids),
                                "etag": pc.cast(ids, pa.string()),
                            },
                            schema=SCHEMAS["ranges"],
                        )
                    )
                    rows += n
                    if rows >= CHUNK:
                        writer.write_table(pa.concat_tables(batch))
                        batch, rows = [], 0
                # a row group per range, as in a snapshot `lakewarden extract` writes (a file per
                # range): a run that reads a few ranges skips the others' row groups by their
                # range_id statistics, as it would on a real snapshot
                if batch:
                    writer.write_table(pa.concat_tables(batch))
                    batch, rows = [], 0
        parts.append(part)
    _write(
        directory / "commits.parquet",
        "commits",
        {
            "commit_id": [c.commit_id for c in commits],
            "parents": [[commits[i - 1].commit_id] if i else [] for i in range(len(commits))],
            "creation_date": [c.created_at for c in commits],
            "meta_range_id": [f"m{c.number:06d}" for c in commits],
            "committer": ["bench"] * len(commits),
            "message": [f"add range {c.range_id}" for c in commits],
            "version": [1] * len(commits),
        },
    )
    metaranges = [(f"m{c.number:06d}", commits[i].range_id) for c in commits for i in range(c.number + 1)]
    _write(directory / "metaranges.parquet", "metaranges", {"meta_range_id": [m for m, _ in metaranges], "range_id": [r for _, r in metaranges]})
    _write(directory / "branches.parquet", "branches", {"branch_id": ["main"], "commit_id": [commits[-1].commit_id], "hidden": [False]})
    _write(directory / "tags.parquet", "tags", {"tag_id": [], "commit_id": []})
    ids = pa.array(range(staged.first, staged.stop), pa.int64())
    _write(
        directory / "staged.parquet",
        "staged",
        {
            "branch_id": pa.repeat("main", len(ids)),
            "key": pc.binary_join_element_wise("staged/part", pc.cast(ids, pa.string()), "-"),
            "address": _addresses(ids),
            "address_type": pa.repeat("RELATIVE", len(ids)),
            "last_modified": staged.written(ids),
        },
    )
    return parts, len(commits)


# -- S3 Inventory report ------------------------------------------------------------------------------


def write_inventory_files(root: Path, groups: list[Group], lakefs: list[Commit], first_part: int) -> list[dict]:
    """Data files (Parquet, <= CHUNK rows each) listing ``groups`` and the range files of ``lakefs``
    under ``root`` as the destination bucket holds them; returns their manifest entries."""
    data = root / BUCKET / CONFIG / "data"
    data.mkdir(parents=True, exist_ok=True)
    entries = []

    def tables() -> Iterator[pa.Table]:
        for group in groups:
            for ids in group.chunks():
                n = len(ids)
                yield pa.table(
                    {
                        "bucket": pa.repeat(BUCKET, n),
                        "key": pc.binary_join_element_wise(PREFIX.rstrip("/"), _addresses(ids), "/"),
                        "size": _sizes(ids),
                        "last_modified_date": pc.cast(group.written(ids), pa.timestamp("ms", tz="UTC")),
                        "e_tag": pc.cast(ids, pa.string()),
                        "storage_class": pa.repeat("STANDARD", n),
                    },
                    schema=INVENTORY_SCHEMA,
                )
        if lakefs:
            yield pa.table(
                {
                    "bucket": [BUCKET] * len(lakefs),
                    "key": [f"{PREFIX}_lakefs/{c.range_id}" for c in lakefs],
                    "size": [65536] * len(lakefs),
                    "last_modified_date": [c.created_at for c in lakefs],
                    "e_tag": [c.range_id for c in lakefs],
                    "storage_class": ["STANDARD"] * len(lakefs),
                },
                schema=INVENTORY_SCHEMA,
            )

    def flush(batch: list[pa.Table]) -> None:
        path = data / f"part-{first_part + len(entries):05d}.parquet"
        pq.write_table(pa.concat_tables(batch), path)
        body = path.read_bytes()
        entries.append({"key": str(path.relative_to(root)), "size": len(body), "MD5checksum": hashlib.md5(body).hexdigest()})

    batch: list[pa.Table] = []
    rows = 0
    for table in tables():
        batch.append(table)
        rows += table.num_rows
        if rows >= CHUNK:
            flush(batch)
            batch, rows = [], 0
    if batch:
        flush(batch)
    return entries


def write_manifest(root: Path, files: list[dict], created_at: datetime) -> Path:
    directory = root / BUCKET / CONFIG / created_at.strftime("%Y-%m-%dT%H-%MZ")
    directory.mkdir(parents=True)
    body = json.dumps(
        {
            "sourceBucket": BUCKET,
            "destinationBucket": f"arn:aws:s3:::{BUCKET}-inventory",
            "version": "2016-11-30",
            "creationTimestamp": str(int(created_at.timestamp() * 1000)),
            "fileFormat": "Parquet",
            "fileSchema": FILE_SCHEMA,
            "files": files,
        },
        indent=1,
    ).encode()
    (directory / "manifest.json").write_bytes(body)
    (directory / "manifest.checksum").write_text(hashlib.md5(body).hexdigest() + "\n")
    return directory / "manifest.json"


# -- measurements -------------------------------------------------------------------------------------


def duckdb_marked(snapshot: Path, root: Path, manifest: Path, now: datetime) -> tuple[int, int, float]:
    """(count, bytes, seconds) of DuckDB's storage inventory - referenced - too young."""
    import duckdb

    files = [str(root / entry["key"]) for entry in json.loads(manifest.read_text())["files"]]
    threshold = (now - MIN_AGE).isoformat()
    physical = f"case when address_type = 'FULL' then address else '{NAMESPACE}/' || address end"
    query = f"""
        with referenced as (
            select {physical} as physical_address from read_parquet('{snapshot}/ranges.parquet/*.parquet')
            union all
            select {physical} from read_parquet('{snapshot}/staged.parquet')
        ),
        storage as (
            select 's3://{BUCKET}/' || key as physical_address, size
            from read_parquet({files!r})
            where starts_with(key, '{PREFIX}') and not starts_with(key, '{PREFIX}_lakefs/')
                and last_modified_date <= timestamptz '{threshold}'
        )
        select count(*), coalesce(sum(size), 0) from storage anti join referenced using (physical_address)
    """
    connection = duckdb.connect()
    started = time.perf_counter()
    count, size = connection.execute(query).fetchone()
    seconds = time.perf_counter() - started
    connection.close()
    return int(count), int(size), seconds


def marked_outside(report: Path, reference: Path) -> int:
    """Addresses ``report`` marked that ``reference`` did not (an optimized run vs. a clean one)."""
    import duckdb

    with duckdb.connect() as connection:
        row = connection.execute(
            f"select count(*) from read_csv('{report}/addresses.csv', all_varchar = true) as o "
            f"anti join read_csv('{reference}/addresses.csv', all_varchar = true) as c using (physical_address)"
        ).fetchone()
    return int(row[0])


@dataclass(frozen=True)
class CliRun:
    """One ``gc uncommitted`` process and its report's summary."""

    process: ProcessRun
    summary: dict

    @property
    def seconds(self) -> float:
        return self.process.seconds

    @property
    def num_marked(self) -> int:
        return int(self.summary.get("num_marked") or 0)

    @property
    def bytes_marked(self) -> int:
        return int(self.summary.get("bytes_marked") or 0)


def run_uncommitted(snapshot: Path, manifest: Path, now: datetime, state: Path, report: Path, *, clean: bool) -> CliRun:
    command = [*lakewarden_command(), "gc", "uncommitted", "--snapshot", str(snapshot), "--inventory", str(manifest),
               "--now", now.isoformat().replace("+00:00", "Z"), "--min-age", "24h", "--dry-run",
               "--state", str(state), "--report", str(report)]
    if clean:
        command.append("--clean")
    run = run_measured(command, env=child_env())
    if run.returncode != 0:
        tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-15:])
        raise SystemExit(f"lakewarden gc uncommitted failed (exit {run.returncode}):\n{tail}")
    return CliRun(run, json.loads((report / "summary.json").read_text()))


def _phases(run: CliRun) -> str:
    """Where a run's time went: the job's phases from its report; the rest of the process's
    wall time (interpreter, JVM and dbt start, snapshot load, checks) as "process and load"."""
    return describe_phases(phases_of(run.seconds, run.summary))


def _check(label: str, runner: int, duck: int, expected: int) -> bool:
    ok = runner == duck == expected
    print(f"  marked: {label} {runner:,d}, DuckDB {duck:,d}, expected {expected:,d}  {'OK' if ok else 'MISMATCH'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=1_000_000, help="objects the inventory lists (default 1M); 9/10 are referenced")
    parser.add_argument("--range-entries", type=int, default=20_000, help="entries per range (default 20000): one range per commit")
    parser.add_argument("--repeat", type=int, default=1, help="optimized, clean and no-op runs this many times (default 1; medians)")
    parser.add_argument("--workdir", type=Path, help="keep data here (default: a temporary directory, removed afterwards)")
    add_engine_options(parser, uncounted="clean run")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    check_engine_options(parser, args)
    try:
        import duckdb  # noqa: F401
    except ImportError:
        parser.error("needs duckdb: pip install --constraint constraints.txt -e '.[bench]'")

    print_java()  # the runtime both sides of every ratio run on
    keep_class_archive()  # no measured process writes the JVM class archive (common.keep_class_archive)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="lakewarden-bench-uc-"))
    try:
        if args.engine:
            with engine(workdir.resolve(), warm_up=not args.no_warm_up):
                return _run(args.objects, args.range_entries, workdir.resolve(), args.repeat, warm_up=True)
        return _run(args.objects, args.range_entries, workdir.resolve(), args.repeat)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def _run(objects: int, range_entries: int, workdir: Path, repeat: int = 1, *, warm_up: bool = False) -> int:
    """The runs and their figures; ``warm_up``: one clean run first on a state dir of its own,
    not counted (an engine's first run compiles its code: ``--engine``)."""
    for stale in ("snapshot-1", "snapshot-2", "inventory", "state", "state-after-clean", "report-clean", "report-optimized",
                  "report-clean-2", "report-noop", "repeats", "warm-up-state", "report-warm-up"):
        shutil.rmtree(workdir / stale, ignore_errors=True)  # a kept --workdir: start from nothing
    # -- the repository and the inventory at the clean run ----------------------------------------
    started = time.perf_counter()
    referenced = objects * 9 // 10
    staged_count = max(1, referenced // 1000)
    committed = referenced - staged_count
    commits = _chain(0, committed, range_entries, END - timedelta(days=90), END - timedelta(hours=2), 0)
    staged = Group(committed, referenced, END - timedelta(days=2), 1023)
    unreferenced = objects - referenced - len(commits)  # the range files under _lakefs/ are listed too
    young = unreferenced // 100
    old_uploads = Group(referenced, referenced + unreferenced - young, END - timedelta(hours=25), (1 << 22) - 1)
    young_uploads = Group(old_uploads.stop, old_uploads.stop + young, END - REPORT_AGE, (1 << 16) - 1)  # < 18.3h old
    snapshot1 = workdir / "snapshot-1"
    inventory = workdir / "inventory"
    range_parts = write_snapshot(snapshot1, commits, staged)
    files1 = write_inventory_files(inventory, [*(c.objects for c in commits), staged, old_uploads, young_uploads], commits, 0)
    manifest1 = write_manifest(inventory, files1, END - REPORT_AGE)
    generated = time.perf_counter() - started
    listed = referenced + len(commits) + unreferenced

    state = workdir / "state"
    print(f"objects in the inventory     {listed:>14,d}   ({referenced:,d} referenced: {staged_count:,d} of them staged; "
          f"{len(commits):,d} range files under _lakefs/; {unreferenced:,d} unreferenced, {young:,d} younger than 24h)")
    print(f"commits / ranges             {len(commits):>14,d}   ({range_entries:,d} entries a range)")
    print(f"generate (not counted)       {generated:>12.1f} s", flush=True)

    if warm_up:
        first = run_uncommitted(snapshot1, manifest1, END, workdir / "warm-up-state", workdir / "report-warm-up", clean=True)
        shutil.rmtree(workdir / "warm-up-state", ignore_errors=True)
        print(f"engine: a first clean run compiled the engine's code ({first.seconds:.1f} s, not counted); "
              f"peak RSS is each command's own", flush=True)
    clean = run_uncommitted(snapshot1, manifest1, END, state, workdir / "report-clean", clean=True)
    duck_count, duck_bytes, duck_seconds = duckdb_marked(snapshot1, inventory, manifest1, END)
    print(f"clean run (whole process)    {clean.seconds:>12.1f} s   peak RSS {clean.process.peak_rss_mb:.0f} MB")
    print(_phases(clean))
    print(f"DuckDB anti-join             {duck_seconds:>12.1f} s   {listed / duck_seconds:>12,.0f} inventory rows/s")
    print(f"ratio clean / DuckDB         {clean.seconds / duck_seconds:>12.2f} x", flush=True)
    ok = _check("clean", clean.num_marked, duck_count, len(old_uploads))
    ok &= clean.bytes_marked == duck_bytes
    if repeat > 1:
        shutil.copytree(state, workdir / "state-after-clean")  # where every repeat's optimized run starts

    # -- 1% churn: new commits and new uploads, two days later -------------------------------------
    started = time.perf_counter()
    now2 = END + CHURN_AFTER
    churn = objects // 100
    new_committed = churn * 9 // 10
    first_new = young_uploads.stop
    new_commits = _chain(first_new, new_committed, range_entries, END + timedelta(hours=4), now2 - timedelta(hours=8), len(commits))
    new_old = Group(first_new + new_committed, first_new + new_committed + (churn - new_committed) // 2, END + timedelta(hours=3), 4095)
    new_young = Group(new_old.stop, first_new + churn, now2 - REPORT_AGE, (1 << 16) - 1)
    snapshot2 = workdir / "snapshot-2"
    write_snapshot(snapshot2, commits + new_commits, staged, range_parts)
    files2 = files1 + write_inventory_files(inventory, [*(c.objects for c in new_commits), new_old, new_young], new_commits, len(files1))
    manifest2 = write_manifest(inventory, files2, now2 - REPORT_AGE)
    churned = time.perf_counter() - started
    expected2 = len(old_uploads) + len(young_uploads) + len(new_old)
    print(f"churn: +{churn + len(new_commits):,d} objects ({new_committed:,d} in {len(new_commits)} new commits, "
          f"{churn - new_committed:,d} unreferenced, {len(new_commits)} range files), {churned:.1f} s (not counted)", flush=True)

    optimized = run_uncommitted(snapshot2, manifest2, now2, state, workdir / "report-optimized", clean=False)
    summary = optimized.summary
    mode = summary.get("run_mode", "?")
    print(f"optimized run ({mode:>9})    {optimized.seconds:>12.1f} s   peak RSS {optimized.process.peak_rss_mb:.0f} MB; "
          f"{summary.get('ranges_read')} of {summary.get('listed_ranges')} ranges read ({summary.get('ranges_new')} new, "
          f"{summary.get('ranges_crossed')} crossed), "
          f"{summary.get('from_previous_inventory') or 0:,d} from the previous uncommitted inventory, "
          f"{summary.get('created_since_previous_run') or 0:,d} written since")
    print(_phases(optimized))
    ratio = optimized.seconds / clean.seconds
    print(f"ratio optimized / clean      {ratio:>12.1%}   (target <= {SHARE_TARGET:.0%}: {'met' if ratio <= SHARE_TARGET else 'NOT met'})", flush=True)
    clean2 = run_uncommitted(snapshot2, manifest2, now2, state, workdir / "report-clean-2", clean=True)
    duck2_count, duck2_bytes, duck2_seconds = duckdb_marked(snapshot2, inventory, manifest2, now2)
    print(f"clean run, same moment       {clean2.seconds:>12.1f} s   (optimized / this: {optimized.seconds / clean2.seconds:.1%})")
    print(_phases(clean2))
    print(f"DuckDB anti-join, churned    {duck2_seconds:>12.1f} s   (clean / DuckDB: {clean2.seconds / duck2_seconds:.2f} x)")
    ok &= _check("optimized", optimized.num_marked, duck2_count, expected2)
    ok &= _check("clean", clean2.num_marked, duck2_count, expected2)
    ok &= optimized.bytes_marked == clean2.bytes_marked == duck2_bytes
    outside = marked_outside(workdir / "report-optimized", workdir / "report-clean-2")
    ok &= outside == 0 and mode == "optimized"
    print(f"  optimized marks outside the clean run's: {outside}  {'OK' if outside == 0 else 'NOT A SUBSET'}")
    noop = run_uncommitted(snapshot2, manifest2, now2, state, workdir / "report-noop", clean=False)
    noop_reads = noop.summary.get("ranges_read")
    print(f"no-op run ({noop.summary.get('run_mode', '?'):>9})        {noop.seconds:>12.1f} s   peak RSS "
          f"{noop.process.peak_rss_mb:.0f} MB; {noop_reads} ranges read ({noop.summary.get('ranges_new')} new, "
          f"{noop.summary.get('ranges_crossed')} crossed)")
    print(_phases(noop))
    plain = plain_pyspark_run()
    print(f"plain PySpark process        {plain.seconds:>12.1f} s")
    share = incremental_share(optimized.seconds, clean2.seconds, noop.seconds)
    print(f"(optimized - noop)/(clean - noop, clean at the same moment) {describe_share(share, SHARE_TARGET)}")
    print(f"noop / plain PySpark         {describe_noop(noop.seconds, plain.seconds, noop_reads)}")
    ok &= noop.num_marked == clean2.num_marked
    if repeat > 1:
        ok &= _repeats(repeat, workdir, snapshot2, manifest2, now2, (optimized, clean2, noop), expected2)
    print("results: " + ("OK" if ok else "MISMATCH (see above)"))
    return 0 if ok else 1


def _repeats(
    repeat: int, workdir: Path, snapshot: Path, manifest: Path, now: datetime, first: tuple[CliRun, CliRun, CliRun], expected: int
) -> bool:
    """Steps 3 and 4 again, ``repeat - 1`` more times, each from a copy of the state the first
    clean run left; every run's marked count checked against the generator's (which the first
    triple matched with DuckDB's). Prints each triple's share and the share of the medians."""
    triples = [first]
    ok = True
    for number in range(2, repeat + 1):
        base = workdir / "repeats" / str(number)
        state = base / "state"
        shutil.copytree(workdir / "state-after-clean", state)
        optimized = run_uncommitted(snapshot, manifest, now, state, base / "report-optimized", clean=False)
        clean = run_uncommitted(snapshot, manifest, now, state, base / "report-clean-2", clean=True)
        noop = run_uncommitted(snapshot, manifest, now, state, base / "report-noop", clean=False)
        ok &= optimized.summary.get("run_mode") == "optimized" and noop.summary.get("ranges_read") == 0
        ok &= optimized.num_marked == clean.num_marked == noop.num_marked == expected
        triples.append((optimized, clean, noop))
    print(f"repeats ({repeat} of optimized, clean at the same moment, no-op; seconds, each from the first clean run's state):")
    for number, (optimized, clean, noop) in enumerate(triples, 1):
        share = incremental_share(optimized.seconds, clean.seconds, noop.seconds)
        print(f"  {number}: {optimized.seconds:6.1f} {clean.seconds:6.1f} {noop.seconds:6.1f}   share {describe_share(share, SHARE_TARGET)}")
    medians = [median([run.seconds for run in runs]) for runs in zip(*triples)]
    print(f"medians:   {medians[0]:6.1f} {medians[1]:6.1f} {medians[2]:6.1f}")
    share = incremental_share(*medians)
    print(f"(optimized - noop)/(clean - noop), medians of {repeat} {describe_share(share, SHARE_TARGET)}")
    if not ok:
        print("  a repeat marked otherwise than the first runs (or was not optimized / read a range)")
    return ok


if __name__ == "__main__":
    raise SystemExit(main())
