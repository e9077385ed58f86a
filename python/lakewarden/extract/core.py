"""Extract one lakeFS repository into a snapshot directory.

Order of work, chosen so that bad input fails before anything is written, a partial snapshot
never looks complete, and what lakeFS changes while extract runs errs on the side of keeping:

1. refuse an existing non-empty output directory (unless ``force``);
2. read the repository and its GC rules, and list every branch (hidden ones included); with
   rules, ask lakeFS for its own GC answer (prepare_commits) *next*: every commit it keeps then
   already exists when refs are dumped, and every branch head it saw was listed;
3. ask lakeFS for the staged entries (prepare_uncommited; diff + stat on servers without it)
   *before* the refs dump: an entry committed in between is then in the dump, so no object
   can fall between "staged" and "committed";
4. dump the refs (every commit, branch and tag) and read the dump from ``_lakefs/``; a branch
   listed in step 2 and deleted since is kept at its listed head (lakeFS #9772: lakeFS's answer
   may have kept that head as a branch head);
5. read each commit's metarange, then each range not yet in the cache;
6. write every table into a hidden temporary directory beside the output and rename it into
   place only at the end (a failure removes the temporary directory).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from lakewarden.errors import BadInput
from lakewarden.extract.api import BranchRow, CommitRow, LakeFSApi, NotFound, StagedRow
from lakewarden.lakefs.client import LakeFSConfig
from lakewarden.extract.gc_prepared import GC_COMMITS_CSV, save_gc_commits, write_prepared_staged
from lakewarden.extract.ranges import RANGES_SCHEMA, RangeCache, decode_range_table, read_metarange
from lakewarden.extract.refs import InconsistentDump, keep_deleted_branches, read_refs_dump
from lakewarden.extract.storage import MetadataStore, open_store
from lakewarden.snapshot import arrow_schemas

if TYPE_CHECKING:  # pragma: no cover
    from lakewarden.stores import StoreOptions

__all__ = ["ExtractResult", "extract_repository", "SNAPSHOT_SCHEMAS"]

log = logging.getLogger(__name__)

#: Arrow schemas of the snapshot tables, derived from models/sources.yml (their one definition).
SNAPSHOT_SCHEMAS: dict[str, pa.Schema] = arrow_schemas()
#: Refs dumps tried before a branch or tag on a commit missing from the dump is an error.
DUMP_ATTEMPTS = 3


@dataclass
class ExtractResult:
    """What an extract wrote, for the CLI summary and for callers that run jobs next."""

    snapshot_dir: Path
    repository: dict[str, str]
    rows: dict[str, int] = field(default_factory=dict)
    ranges_total: int = 0
    ranges_reused: int = 0
    ranges_read: int = 0
    gc_rules: bool = False
    lakefs_gc_commits: int | None = None
    staged_source: str = ""
    api_calls: int = 0
    dump_endpoint: str = ""
    #: branches deleted while extract ran, kept at the head they were listed with
    deleted_branches: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        tables = ", ".join(f"{n} {t}" for t, n in self.rows.items())
        gc = (
            f"; gc_rules.json and {GC_COMMITS_CSV} ({self.lakefs_gc_commits} commits lakeFS keeps) written"
            if self.gc_rules
            else "; no GC rules set"
        )
        deleted = (
            f"; branches deleted while extracting, kept at their listed heads: {', '.join(sorted(self.deleted_branches))}"
            if self.deleted_branches
            else ""
        )
        return (
            f"extracted {self.repository['repository_id']} into {self.snapshot_dir}: {tables}; "
            f"ranges: {self.ranges_total} ({self.ranges_reused} reused from cache, {self.ranges_read} read)"
            f"{gc}; staged from {self.staged_source}{deleted}; {self.api_calls} lakeFS API calls"
        )


def _check_output(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise BadInput("exists and is not a directory", source=str(out), field="--out")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise BadInput("already exists and is not empty (pass --force to replace it)", source=str(out), field="--out")


def _write(table_dir: Path, name: str, rows: dict[str, list[Any]]) -> int:
    table = pa.table(rows, schema=SNAPSHOT_SCHEMAS[name])
    pq.write_table(table, table_dir / f"{name}.parquet")
    return table.num_rows


def _commit_columns(commits: Iterable[CommitRow]) -> dict[str, list[Any]]:
    ordered = sorted(commits, key=lambda c: c.commit_id)
    return {
        "commit_id": [c.commit_id for c in ordered],
        "parents": [c.parents for c in ordered],
        "creation_date": [c.creation_date for c in ordered],
        "meta_range_id": [c.meta_range_id for c in ordered],
        "committer": [c.committer for c in ordered],
        "message": [c.message for c in ordered],
        "version": [c.version for c in ordered],
    }


def _staged_columns(rows: list[StagedRow]) -> dict[str, list[Any]]:
    return {
        "branch_id": [r.branch_id for r in rows],
        "key": [r.key for r in rows],
        "address": [r.address for r in rows],
        "address_type": [r.address_type for r in rows],
        "last_modified": [r.last_modified for r in rows],
    }


def _staged_by_diff(api: LakeFSApi, listed: list[tuple[str, str]], namespace: str) -> list[StagedRow]:
    """Staged entries of every listed branch by diff + stat (servers without prepare_uncommited).

    A branch deleted after the listing answers 404 (lakeFS #9772): lakeFS dropped its staged
    entries with it, so there is nothing left to read and its objects are what lakeFS's own
    uncommitted GC collects; extract logs it and goes on. A branch that answers 404 yet is still
    listed is a race extract cannot settle: one line asking to run it again.
    """
    rows: list[StagedRow] = []
    for branch_id, _ in listed:
        try:
            rows.extend(api.staged_by_diff(branch_id, namespace))
        except NotFound:
            if branch_id in {b for b, _ in api.branch_ids(show_hidden=True)}:
                raise BadInput(
                    f"branch {branch_id!r} answered 404 while its staged entries were read, yet lakeFS still "
                    "lists it (deleted and created again?); run extract again",
                    field="--repo",
                ) from None
            log.warning("branch %r was deleted while extract read staged entries: lakeFS dropped them with it", branch_id)
    return rows


def _decode_into_cache(store: MetadataStore, cache: RangeCache, range_id: str) -> int:
    data = store.read(range_id, "range")
    table = decode_range_table(range_id, data, store.location(range_id))
    cache.put(range_id, table)
    return table.num_rows


def _worker_decode(
    namespace: str, local_blockstore: str | None, options: "StoreOptions", cache_root: str, range_id: str
) -> int:
    """Process-pool entry point (stores and caches are rebuilt per process, not pickled: the
    options are plain values)."""
    store = open_store(namespace, local_blockstore=local_blockstore, store_options=options)
    return _decode_into_cache(store, RangeCache(Path(cache_root)), range_id)


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another filesystem, or links not supported
        shutil.copyfile(source, target)


def extract_repository(
    *,
    config: LakeFSConfig,
    repository: str,
    out: Path,
    cache_dir: Path,
    force: bool = False,
    local_blockstore: str | None = None,
    s3_options: Mapping[str, Any] | None = None,
    jobs: int = 1,
    poll_interval: float = 0.05,
    store_options: "StoreOptions | None" = None,
) -> ExtractResult:
    """Extract ``repository`` into the snapshot directory ``out`` (see the module docstring).

    The namespace's ``_lakefs/`` files are read through its store (:mod:`lakewarden.stores`)
    with ``store_options`` (every store's settings); without them, the older ``s3_options``
    (S3 only) and the SDKs' environment variables."""
    from dataclasses import replace

    from lakewarden.stores import StoreOptions

    out = Path(out).absolute()
    _check_output(out, force)
    options = store_options or StoreOptions.from_s3_options({k: v for k, v in (s3_options or {}).items() if v is not None})
    if local_blockstore and not options.local_blockstore:
        options = replace(options, local_blockstore=local_blockstore)

    with LakeFSApi(config, repository, poll_interval=poll_interval) as api:
        repo = api.repository_info()
        namespace = repo["storage_namespace"]
        store = open_store(namespace, store_options=options)
        rules = api.gc_rules()
        listed = api.branch_ids(show_hidden=True)  # every head lakeFS's GC answer can have seen
        gc_prepared = api.prepare_gc_commits() if rules is not None else None
        uncommitted = api.prepare_gc_uncommitted()
        staged_fallback: list[StagedRow] = []
        if uncommitted is None:
            log.warning("lakeFS has no prepare_uncommited endpoint: reading staged entries by diff + stat")
            staged_fallback = _staged_by_diff(api, listed, namespace)
        for attempt in range(1, DUMP_ATTEMPTS + 1):
            dump = api.dump_refs()
            try:
                refs = read_refs_dump(store, dump)
                break
            except InconsistentDump as exc:
                if attempt == DUMP_ATTEMPTS:
                    raise
                log.warning("refs dump %d of %d raced with a commit (%s); dumping again", attempt, DUMP_ATTEMPTS, exc)
        deleted = keep_deleted_branches(refs, listed)
        for branch_id, commit_id in sorted(deleted.items()):
            log.warning("branch %r was deleted while extract ran: kept at its listed head %s", branch_id, commit_id)
        visible = {branch_id for branch_id, _ in api.branch_ids(show_hidden=False)}
        api_calls = api.calls
    # a branch the visible listing does not show is hidden, or was deleted since the dump (it
    # stays a branch: the dump's moment is the snapshot's)
    branches = [BranchRow(b, c, b not in visible) for b, c in sorted(refs.branches.items())]
    commits = refs.commits
    log.info("refs dump: %d commits, %d branches, %d tags", len(commits), len(branches), len(refs.tags))

    cache = RangeCache(Path(cache_dir))
    metarange_rows: dict[str, list[str | None]] = {"meta_range_id": [], "range_id": []}
    range_ids: dict[str, None] = {}
    for meta_range_id in sorted({c.meta_range_id for c in commits.values() if c.meta_range_id}):
        listed_ranges = read_metarange(store.read(meta_range_id, "metarange"), store.location(meta_range_id))
        if not listed_ranges:  # an empty tree: one row with no range (docs/contract.md §2)
            metarange_rows["meta_range_id"].append(meta_range_id)
            metarange_rows["range_id"].append(None)
        metarange_rows["meta_range_id"].extend([meta_range_id] * len(listed_ranges))
        metarange_rows["range_id"].extend(listed_ranges)
        range_ids.update(dict.fromkeys(listed_ranges))

    result = ExtractResult(
        snapshot_dir=out,
        repository=repo,
        ranges_total=len(range_ids),
        api_calls=api_calls,
        dump_endpoint=dump.endpoint,
        staged_source="prepare_uncommited" if uncommitted is not None else "diff + stat",
        deleted_branches=deleted,
    )
    missing = [r for r in range_ids if r not in cache]
    result.ranges_reused = len(range_ids) - len(missing)
    result.ranges_read = len(missing)
    log.info("%d ranges: %d cached, %d to read", len(range_ids), result.ranges_reused, len(missing))
    from lakewarden.runtime.progress import phase

    with phase("extract: decode ranges", total=len(missing), unit="ranges") as bar:
        if jobs > 1 and len(missing) > 1:
            decode = partial(_worker_decode, namespace, options.local_blockstore, options, str(cache_dir))
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                for _ in pool.map(decode, missing, chunksize=4):
                    bar.advance()
        else:
            for range_id in missing:
                _decode_into_cache(store, cache, range_id)
                bar.advance()

    tmp = out.parent / f".{out.name}.partial-{uuid.uuid4().hex[:8]}"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.mkdir()
    try:
        (tmp / "repository.json").write_text(json.dumps(repo, indent=2) + "\n", encoding="utf-8")
        if rules is not None:
            (tmp / "gc_rules.json").write_text(json.dumps(rules, indent=2) + "\n", encoding="utf-8")
            result.gc_rules = True
            assert gc_prepared is not None
            result.lakefs_gc_commits = save_gc_commits(store, gc_prepared, rules, tmp)
        result.rows["commits"] = _write(tmp, "commits", _commit_columns(commits.values()))
        result.rows["branches"] = _write(
            tmp,
            "branches",
            {
                "branch_id": [b.branch_id for b in branches],
                "commit_id": [b.commit_id for b in branches],
                "hidden": [b.hidden for b in branches],
            },
        )
        tags = sorted(refs.tags.items())
        result.rows["tags"] = _write(tmp, "tags", {"tag_id": [t for t, _ in tags], "commit_id": [c for _, c in tags]})
        result.rows["metaranges"] = _write(tmp, "metaranges", metarange_rows)
        ranges_dir = tmp / "ranges.parquet"
        ranges_dir.mkdir()
        total = 0
        for range_id in range_ids:
            source = cache.path(range_id)
            _link_or_copy(source, ranges_dir / f"part-{range_id}.parquet")
            total += pq.ParquetFile(source).metadata.num_rows
        if not range_ids:  # an empty folder has no schema; write one empty part
            pq.write_table(RANGES_SCHEMA.empty_table(), ranges_dir / "part-empty.parquet")
        result.rows["ranges"] = total
        if uncommitted is not None:
            result.rows["staged"] = write_prepared_staged(
                store, uncommitted, tmp / "staged.parquet", SNAPSHOT_SCHEMAS["staged"]
            )
        else:
            result.rows["staged"] = _write(tmp, "staged", _staged_columns(staged_fallback))
        if out.exists():
            old = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result
