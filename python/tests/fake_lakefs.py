"""A fake lakeFS server on 127.0.0.1 that behaves, for what lakewarden reads, as lakeFS does.

Tests drive a repository (upload, commit, merge, branch, delete branch, tag, stage, abandon)
through :class:`FakeLakeFS`, which keeps the history in memory and writes into the storage
namespace (a local directory or a bucket on a local S3 server) what lakeFS writes there:

* the object files themselves, and lakeFS's ``dummy`` object at the namespace root when the
  repository is created;
* every commit's metarange and ranges under ``_lakefs/`` (SSTables by the project's writer,
  :mod:`sstable_writer`, in the tests); a commit that empties the tree gets an empty metarange with
  an id, and the first commit ("Repository created") has no metarange, as in lakeFS;
* on a refs dump, the commits, branches and tags metaranges (graveler ``CommitData`` /
  ``BranchData`` / ``TagData`` records; hidden branches included, their hidden flag not dumped);
* on ``gc/prepare_commits``, ``_lakefs/retention/gc/commits/run_id=<run>/commits.csv`` with the
  active commits computed by :func:`lakefs_active_commits`, an independent implementation of
  lakeFS's rules (``pkg/graveler/retention``): starting points are branch heads and ancestry
  leaves merged in commit-id order, each walked by its main parent (the last parent for version
  0), a dangling leaf getting a hypothetical head and the default retention, a walk stopping at
  a commit already reached with a threshold at least as long;
* on ``gc/prepare_uncommited``, Parquet files (``physical_address`` relative to the namespace,
  ``creation_date`` epoch seconds, gzip) under ``_lakefs/retention/gc/uncommitted/<run>/
  uncommitted/``, paginated by a base64 JSON continuation token after ``uncommitted_page``
  entries, tombstones and addresses outside the namespace left out.

The HTTP API follows lakeFS's ``api/swagger.yml``: the same paths, JSON bodies built from
``lakefs_sdk`` models, lakeFS's pagination (``after`` is the last id returned;
``pagination.has_more/next_offset/results/max_per_page``; pages capped at ``page_size`` to
exercise paging), error bodies ``{"message": ...}``, HTTP Basic authentication, and the task
APIs (a dump or a GC preparation reports "not done" on its first status poll). Endpoints can be
switched off (``disabled``) to act as an older lakeFS (answered 404 like an unknown route).

Simplifications (none affects what lakewarden reads): merges apply the source's changes since
the merge base over the destination ("source wins", no conflicts); ranges are cut every
``range_size`` entries; refs-dump record identities are content hashes (lakeFS uses the commit
id; readers ignore the identity).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import re
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlparse

import lakefs_sdk
import pyarrow as pa
import pytest
import pyarrow.parquet as pq

from sstable_writer import RangeInfo, write_metarange, write_range, write_refs_table

KEY, SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
UNCOMMITTED_PREFIX = "_lakefs/retention/gc/uncommitted"
COMMITS_CSV_TEMPLATE = "_lakefs/retention/gc/commits/run_id={run}/commits.csv"


# -- storage namespaces -------------------------------------------------------------------------


class Namespace:
    """Where a repository's objects and ``_lakefs/`` live."""

    uri: str

    def put(self, key: str, data: bytes, at: datetime | None = None) -> None:  # pragma: no cover
        raise NotImplementedError

    def get(self, key: str) -> bytes:  # pragma: no cover
        raise NotImplementedError

    def exists(self, key: str) -> bool:  # pragma: no cover
        raise NotImplementedError

    def delete(self, key: str) -> None:  # pragma: no cover
        raise NotImplementedError

    def full(self, key: str) -> str:
        return f"{self.uri.rstrip('/')}/{key}"


class LocalNamespace(Namespace):
    """A directory; ``uri`` is ``file://...`` or, with ``uri`` given, e.g. ``local://repo``."""

    def __init__(self, root: Path, uri: str | None = None) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.uri = uri or f"file://{root}"

    def put(self, key: str, data: bytes, at: datetime | None = None) -> None:
        path = self.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if at is not None:
            os.utime(path, (at.timestamp(), at.timestamp()))

    def get(self, key: str) -> bytes:
        return (self.root / key).read_bytes()

    def exists(self, key: str) -> bool:
        return (self.root / key).is_file()

    def delete(self, key: str) -> None:
        (self.root / key).unlink()


class S3Namespace(Namespace):
    """``s3://bucket/prefix`` on an S3 endpoint (LastModified is the server's clock)."""

    def __init__(self, client: Any, bucket: str, prefix: str) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.uri = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def put(self, key: str, data: bytes, at: datetime | None = None) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data)

    def get(self, key: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"].read()

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(key))
            return True
        except ClientError:
            return False

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))


# -- repository model ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """A committed or staged entry (what a range record holds)."""

    address: str
    last_modified: datetime
    size: int
    address_type: str = "RELATIVE"
    etag: str = ""

    def record(self, key: str) -> dict[str, Any]:
        return {
            "key": key,
            "address": self.address,
            "address_type": self.address_type,
            "last_modified": self.last_modified,
            "size": self.size,
            "etag": self.etag,
        }


TOMBSTONE = None


@dataclass
class Commit:
    commit_id: str
    parents: list[str]
    creation_date: datetime
    meta_range_id: str  # "" for lakeFS's first commit
    committer: str
    message: str
    version: int
    generation: int
    tree: dict[str, Entry]


@dataclass
class Branch:
    commit_id: str
    hidden: bool = False
    staging: dict[str, Entry | None] = field(default_factory=dict)  # None: a tombstone


@dataclass
class _Task:
    kind: str
    result: Any
    polls: int = 0


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc)


def _rfc3339(moment: datetime) -> str:
    return _utc(moment).isoformat().replace("+00:00", "Z")


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return _rfc3339(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def main_parent(commit: Commit) -> str | None:
    """lakeFS's CommitVersionParentSwitch: version 0 keeps its main parent last."""
    if not commit.parents:
        return None
    return commit.parents[-1] if commit.version < 1 else commit.parents[0]


def lakefs_active_commits(
    commits: dict[str, Commit], branches: dict[str, str], rules: dict[str, Any], now: datetime
) -> set[str]:
    """The commits lakeFS's GC keeps (its prepare_commits answer), by lakeFS's rules.

    ``branches``: branch id -> head commit id (hidden branches included). ``rules``: lakeFS's
    GC rules JSON. Written from the behaviour of ``pkg/graveler/retention`` (see the module
    docstring), not from its code.
    """
    # Ancestry leaves: commits that are nobody's "first parent" as the commit iterator picks it
    # (index 1 for a version-0 commit with several parents, else index 0).
    first_parents = set()
    for commit in commits.values():
        if commit.parents:
            index = 1 if commit.version < 1 and len(commit.parents) > 1 else 0
            first_parents.add(commit.parents[index])
    leaves = iter(sorted(c for c in commits if c not in first_parents))
    heads = iter(sorted(((commit_id, branch_id) for branch_id, commit_id in branches.items())))

    # Starting points: both sorted lists merged by commit id; a leaf that is also the current
    # branch head is dropped (the head carries the branch's retention).
    starting: list[tuple[str, str | None]] = []
    head: tuple[str, str] | None = None
    leaf: str | None = None
    while True:
        if head is None:
            head = next(heads, None)
        if leaf is None:
            leaf = next(leaves, None)
        if head is None and leaf is None:
            break
        if head is not None and leaf is not None and head[0] == leaf:
            leaf = None
        if leaf is None or (head is not None and leaf > head[0]):
            assert head is not None
            starting.append((head[0], head[1]))
            head = None
        else:
            starting.append((leaf, None))
            leaf = None

    default_days = int(rules["default_retention_days"])
    branch_days = {b["branch_id"]: int(b["retention_days"]) for b in rules.get("branches") or []}
    processed: dict[str, datetime] = {}
    active: set[str] = set()
    for commit_id, branch_id in starting:
        start = commits[commit_id]
        if branch_id is None:
            # A dangling commit: walked as if a head created with it had it as main parent.
            node_created, node_parent = start.creation_date, commit_id
            days = default_days
        else:
            node_created, node_parent = start.creation_date, main_parent(start)
            days = branch_days.get(branch_id, default_days)
            active.add(commit_id)
        threshold = now - timedelta(days=days)
        if branch_id is not None:
            processed[commit_id] = threshold
        while node_parent:
            previous = processed.get(node_parent)
            if previous is not None and not previous > threshold:
                break
            if node_created > threshold:
                active.add(node_parent)
            parent = commits[node_parent]
            processed[node_parent] = threshold
            node_created, node_parent = parent.creation_date, main_parent(parent)
    return active


class FakeLakeFS:
    """One repository's history, and the lakeFS API over it (see the module docstring)."""

    def __init__(
        self,
        repo_id: str,
        namespace: Namespace,
        *,
        created: datetime,
        now: datetime | None = None,
        default_branch: str = "main",
        range_size: int = 3,
        dump_range_size: int = 4,
        page_size: int = 2,
        uncommitted_page: int = 2,
    ) -> None:
        self.repo_id = repo_id
        self.ns = namespace
        self.now = now
        self.default_branch = default_branch
        self.range_size = range_size
        self.dump_range_size = dump_range_size
        self.page_size = page_size
        self.uncommitted_page = uncommitted_page
        self.commits: dict[str, Commit] = {}
        self.branches: dict[str, Branch] = {}
        self.tags: dict[str, str] = {}
        self.gc_rules: dict[str, Any] | None = None
        self.requests: list[tuple[str, str]] = []
        self.disabled: set[str] = set()
        self.forbidden: str | None = None  # regex over "METHOD /path-after-repo": answered 403
        #: one-shot actions run right after the named endpoint (a ``_ROUTES`` name) answered (before
        #: the answer is sent: the client sees the state after the action), given
        #: that request's path parameters: what another lakeFS user does while extract runs
        #: (``after_request["list_branches"] = lambda _: fake.delete_branch("dev")`` deletes dev
        #: between the listing and what follows)
        self.after_request: dict[str, Callable[[dict[str, str]], None]] = {}
        self.tasks: dict[str, _Task] = {}
        self.created = created
        self._lock = threading.RLock()
        self._seq = 0
        # lakeFS checks it can write to a new namespace by writing this object.
        self.ns.put("dummy", b"", created)
        first = self._new_commit([], created, "", "Repository created", 1, {})
        self.branches[default_branch] = Branch(first)

    # -- clock and ids ------------------------------------------------------------------------

    def clock(self) -> datetime:
        return self.now or datetime.now(timezone.utc)

    def _id(self, *parts: Any) -> str:
        self._seq += 1
        return hashlib.sha256(repr((self._seq, self.repo_id) + parts).encode()).hexdigest()

    def _run_id(self) -> str:
        return uuid.uuid4().hex[:20]

    # -- writing metadata ---------------------------------------------------------------------

    def _write_tables(self, writer: Any, groups: list[list[Any]], **kwargs: Any) -> list[RangeInfo]:
        infos: list[RangeInfo] = []
        with tempfile.TemporaryDirectory() as tmp:
            for group in groups:
                info = writer(group, directory=tmp, **kwargs)
                self.ns.put(f"_lakefs/{info.range_id}", (Path(tmp) / info.range_id).read_bytes())
                infos.append(info)
        return infos

    def _write_metarange(self, ranges: list[RangeInfo]) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            metarange_id = write_metarange(ranges, directory=tmp)
            self.ns.put(f"_lakefs/{metarange_id}", (Path(tmp) / metarange_id).read_bytes())
        return metarange_id

    def _write_tree(self, tree: dict[str, Entry]) -> str:
        records = [tree[key].record(key) for key in sorted(tree)]
        groups = [records[i : i + self.range_size] for i in range(0, len(records), self.range_size)]
        return self._write_metarange(self._write_tables(write_range, groups))

    def _new_commit(
        self, parents: list[str], at: datetime, metarange: str, message: str, version: int, tree: dict[str, Entry]
    ) -> str:
        commit_id = self._id(parents, _rfc3339(at), metarange, message)
        generation = 1 + max((self.commits[p].generation for p in parents), default=0)
        self.commits[commit_id] = Commit(
            commit_id, list(parents), _utc(at), metarange, "ann", message, version, generation, dict(tree)
        )
        return commit_id

    # -- repository operations ----------------------------------------------------------------

    def head(self, branch: str) -> Commit:
        return self.commits[self.branches[branch].commit_id]

    def upload(self, branch: str, path: str, at: datetime, data: bytes | None = None) -> str:
        """Write an object (new physical address under ``data/``) and stage it; its address."""
        address = f"data/{self._id(branch, path)[:24]}"
        body = data if data is not None else f"{branch}:{path}".encode()
        self.ns.put(address, body, at)
        self.branches[branch].staging[path] = Entry(address, _utc(at), len(body), etag=hashlib.md5(body).hexdigest())
        return address

    def stage_external(self, branch: str, path: str, address: str, at: datetime) -> None:
        """Stage an entry whose object lies outside the namespace (a FULL address)."""
        self.branches[branch].staging[path] = Entry(address, _utc(at), 1, address_type="FULL")

    def delete(self, branch: str, path: str) -> None:
        self.branches[branch].staging[path] = TOMBSTONE

    def abandon(self, key: str, at: datetime) -> None:
        """An object in the namespace that no entry references (a failed or abandoned upload)."""
        self.ns.put(key, b"abandoned", at)

    def tree(self, branch: str) -> dict[str, Entry]:
        """The branch's view: head tree plus staging."""
        tree = dict(self.head(branch).tree)
        for path, entry in self.branches[branch].staging.items():
            if entry is None:
                tree.pop(path, None)
            else:
                tree[path] = entry
        return tree

    def commit(self, branch: str, message: str, at: datetime, *, version: int = 1) -> str:
        tree = self.tree(branch)
        commit_id = self._new_commit(
            [self.branches[branch].commit_id], at, self._write_tree(tree), message, version, tree
        )
        self.branches[branch].commit_id = commit_id
        self.branches[branch].staging.clear()
        return commit_id

    def _ancestors(self, commit_id: str) -> set[str]:
        seen, todo = set(), [commit_id]
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(self.commits[current].parents)
        return seen

    def merge(self, source: str, into: str, at: datetime, *, version: int = 1) -> str:
        """Merge branch ``source`` into ``into`` (source wins); version 0 stores the main
        (destination) parent last, as lakeFS did before CommitVersionParentSwitch."""
        src, dst = self.head(source), self.head(into)
        common = self._ancestors(src.commit_id) & self._ancestors(dst.commit_id)
        base = max((self.commits[c] for c in common), key=lambda c: (c.generation, c.creation_date))
        tree = dict(dst.tree)
        for path in set(base.tree) | set(src.tree):
            if base.tree.get(path) != src.tree.get(path):
                if path in src.tree:
                    tree[path] = src.tree[path]
                else:
                    tree.pop(path, None)
        parents = [dst.commit_id, src.commit_id] if version >= 1 else [src.commit_id, dst.commit_id]
        commit_id = self._new_commit(parents, at, self._write_tree(tree), f"Merge {source} into {into}", version, tree)
        self.branches[into].commit_id = commit_id
        return commit_id

    def branch(self, name: str, source: str, *, hidden: bool = False) -> None:
        commit_id = self.branches[source].commit_id if source in self.branches else self.tags.get(source, source)
        self.branches[name] = Branch(commit_id, hidden=hidden)

    def delete_branch(self, name: str) -> None:
        del self.branches[name]

    def tag(self, name: str, ref: str) -> None:
        self.tags[name] = self.branches[ref].commit_id if ref in self.branches else ref

    # -- what lakeFS's GC would answer --------------------------------------------------------

    def active_commits(self) -> set[str]:
        assert self.gc_rules is not None
        heads = {name: b.commit_id for name, b in self.branches.items()}
        return lakefs_active_commits(self.commits, heads, self.gc_rules, self.clock())

    def addresses(self, commit_ids: set[str] | None = None) -> set[str]:
        """RELATIVE addresses the given (default: all) commits' trees reference."""
        ids = self.commits if commit_ids is None else commit_ids
        return {
            e.address for c in ids for e in self.commits[c].tree.values() if e.address_type == "RELATIVE"
        }

    # -- server-side operations behind the endpoints -----------------------------------------

    def _dump(self) -> lakefs_sdk.RefsDump:
        def write(kind: str, records: list[dict[str, Any]]) -> str:
            groups = [records[i : i + self.dump_range_size] for i in range(0, len(records), self.dump_range_size)]
            return self._write_metarange(self._write_tables(partial(write_refs_table, kind), groups))

        commits = [
            {
                "commit_id": c.commit_id,
                "parents": c.parents,
                "creation_date": c.creation_date,
                "meta_range_id": c.meta_range_id,
                "committer": c.committer,
                "message": c.message,
                "version": c.version,
                "generation": c.generation,
            }
            for c in sorted(self.commits.values(), key=lambda c: c.commit_id)
        ]
        # lakeFS dumps hidden branches too, without their hidden flag.
        branches = [{"branch_id": b, "commit_id": self.branches[b].commit_id} for b in sorted(self.branches)]
        tags = [{"tag_id": t, "commit_id": self.tags[t]} for t in sorted(self.tags)]
        return lakefs_sdk.RefsDump(
            commits_meta_range_id=write("commit", commits),
            branches_meta_range_id=write("branch", branches),
            tags_meta_range_id=write("tag", tags),
        )

    def _prepare_commits(self) -> lakefs_sdk.GarbageCollectionPrepareResponse:
        active = self.active_commits()
        run_id = self._run_id()
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(["commit_id", "expired", "metarange_id"])
        for commit_id in sorted(active):
            writer.writerow([commit_id, "false", self.commits[commit_id].meta_range_id])
        key = COMMITS_CSV_TEMPLATE.format(run=run_id)
        self.ns.put(key, text.getvalue().encode())
        return lakefs_sdk.GarbageCollectionPrepareResponse(
            run_id=run_id,
            gc_commits_location=self.ns.full(key),
            gc_addresses_location=self.ns.full("_lakefs/retention/gc/addresses/"),
        )

    def _prepare_uncommitted(self, token: str | None) -> lakefs_sdk.PrepareGCUncommittedResponse:
        mark = json.loads(base64.b64decode(token)) if token else None
        run_id = mark["run_id"] if mark else self._run_id()
        namespace = self.ns.uri.rstrip("/") + "/"
        rows: list[tuple[str, int]] = []
        next_mark: dict[str, str] | None = None
        for branch_id in sorted(self.branches):
            if mark and branch_id < mark["branch"]:
                continue
            for path in sorted(self.branches[branch_id].staging):
                if mark and branch_id == mark["branch"] and mark["path"] and path < mark["path"]:
                    continue
                entry = self.branches[branch_id].staging[path]
                if entry is None:
                    continue
                address = entry.address
                if entry.address_type != "RELATIVE":
                    if not address.startswith(namespace):
                        continue
                    address = address[len(namespace):]
                if len(rows) >= self.uncommitted_page:
                    next_mark = {"branch": branch_id, "path": path, "run_id": run_id, "key": ""}
                    break
                rows.append((address, int(entry.last_modified.timestamp())))
            if next_mark:
                break
        location = ""
        if rows:
            prefix = f"{UNCOMMITTED_PREFIX}/{run_id}/uncommitted/"
            table = pa.table(
                {
                    "physical_address": pa.array([a for a, _ in rows], pa.string()),
                    "creation_date": pa.array([t for _, t in rows], pa.int64()),
                }
            )
            sink = io.BytesIO()
            pq.write_table(table, sink, compression="gzip")
            self.ns.put(prefix + uuid.uuid4().hex[:20], sink.getvalue())
            location = self.ns.full(prefix)
        answer: dict[str, Any] = {"run_id": run_id, "gc_uncommitted_location": location}
        if next_mark:
            answer["continuation_token"] = base64.b64encode(json.dumps(next_mark).encode()).decode()
        return lakefs_sdk.PrepareGCUncommittedResponse(**answer)

    def _diff(self, branch: str) -> list[lakefs_sdk.Diff]:
        head = self.head(branch).tree
        diffs = []
        for path in sorted(self.branches[branch].staging):
            entry = self.branches[branch].staging[path]
            if entry is None:
                if path in head:
                    diffs.append(lakefs_sdk.Diff(type="removed", path=path, path_type="object"))
            else:
                kind = "changed" if path in head else "added"
                diffs.append(lakefs_sdk.Diff(type=kind, path=path, path_type="object", size_bytes=entry.size))
        return diffs

    def _stat(self, ref: str, path: str) -> lakefs_sdk.ObjectStats | None:
        tree = self.tree(ref) if ref in self.branches else self.commits[self.tags.get(ref, ref)].tree
        entry = tree.get(path)
        if entry is None:
            return None
        physical = entry.address if entry.address_type == "FULL" else self.ns.full(entry.address)
        return lakefs_sdk.ObjectStats(
            path=path, path_type="object", physical_address=physical, checksum=entry.etag or "x",
            mtime=int(entry.last_modified.timestamp()), size_bytes=entry.size,
        )

    def _task(self, kind: str, result: Any) -> str:
        prefix = {"dump": "DR", "gc": "GCP"}[kind]
        task_id = f"{prefix}{uuid.uuid4().hex[:18]}"
        self.tasks[task_id] = _Task(kind, result)
        return task_id

    # -- HTTP ---------------------------------------------------------------------------------

    def serve(self) -> "RunningServer":
        handler = type("Handler", (_Handler,), {"fake": self})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        return RunningServer(server, f"http://127.0.0.1:{server.server_address[1]}")

    def paths(self, method: str | None = None) -> list[str]:
        return [p for m, p in self.requests if method is None or m == method]


@dataclass
class RunningServer:
    server: ThreadingHTTPServer
    endpoint: str

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _page(items: list[Any], query: dict[str, list[str]], key: Any, page_size: int) -> dict[str, Any]:
    """lakeFS pagination: ``after`` is the id of the last item of the previous page."""
    after = query.get("after", [""])[0]
    amount = int(query.get("amount", ["100"])[0] or 100)
    limit = max(1, min(amount if amount >= 0 else 1000, 1000, page_size))
    rest = [item for item in items if key(item) > after] if after else list(items)
    chunk = rest[:limit]
    has_more = len(rest) > limit
    pagination = lakefs_sdk.Pagination(
        has_more=has_more, next_offset=key(chunk[-1]) if has_more else "", results=len(chunk), max_per_page=limit
    )
    return {"pagination": pagination.to_dict(), "results": [item.to_dict() for item in chunk]}


_ROUTES: list[tuple[str, str, str]] = [
    ("GET", r"", "get_repository"),
    ("GET", r"/branches", "list_branches"),
    ("GET", r"/tags", "list_tags"),
    ("GET", r"/settings/gc_rules", "get_gc_rules"),
    ("GET", r"/branches/(?P<branch>[^/]+)/diff", "diff_branch"),
    ("GET", r"/refs/(?P<ref>[^/]+)/objects/stat", "stat_object"),
    ("POST", r"/dump", "dump_submit"),
    ("GET", r"/dump", "dump_status"),
    ("PUT", r"/refs/dump", "dump_refs"),
    ("POST", r"/gc/prepare_commits", "prepare_commits"),
    ("POST", r"/gc/prepare_commits/async", "prepare_commits_async"),
    ("GET", r"/gc/prepare_commits/status", "prepare_commits_status"),
    ("POST", r"/gc/prepare_uncommited", "prepare_uncommitted"),
]


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLakeFS

    def log_message(self, *_: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body, default=_json_default).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._send(status, lakefs_sdk.Error(message=message).to_dict())

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._dispatch("PUT")

    def _dispatch(self, method: str) -> None:
        fake = self.fake
        url = urlparse(self.path)
        query = parse_qs(url.query)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}") if length else {}
        with fake._lock:
            fake.requests.append((method, url.path))
            expected = "Basic " + base64.b64encode(f"{KEY}:{SECRET}".encode()).decode()
            if self.headers.get("Authorization") != expected:
                return self._error(401, "error authenticating request")
            match = re.fullmatch(r"/api/v1/repositories/([^/]+)(/.*)?", url.path)
            if not match:
                return self._error(404, "path not found")
            if unquote(match.group(1)) != fake.repo_id:
                return self._error(404, "repository not found")
            rest = match.group(2) or ""
            if fake.forbidden is not None and re.fullmatch(fake.forbidden, f"{method} {rest}"):
                return self._error(403, "insufficient permissions")
            for route_method, pattern, name in _ROUTES:
                m = re.fullmatch(pattern, rest)
                if m and route_method == method:
                    if name in fake.disabled:
                        return self._error(404, "path not found")
                    params = {k: unquote(v) for k, v in m.groupdict().items()}
                    action = fake.after_request.pop(name, None)
                    if action is None:
                        getattr(self, f"_{name}")(query, body, **params)
                        return None
                    # the answer is held back until the action has run: a client that already
                    # had it could send its next request before the action changed the state
                    wire, self.wfile = self.wfile, io.BytesIO()
                    try:
                        getattr(self, f"_{name}")(query, body, **params)
                        action(params)
                    finally:
                        held, self.wfile = self.wfile, wire
                        wire.write(held.getvalue())
                    return None
            return self._error(404, "path not found")

    # -- endpoints ----------------------------------------------------------------------------

    def _get_repository(self, query: Any, body: Any) -> None:
        fake = self.fake
        repo = lakefs_sdk.Repository(
            id=fake.repo_id, creation_date=int(fake.created.timestamp()), default_branch=fake.default_branch,
            storage_namespace=fake.ns.uri, read_only=False,
        )
        self._send(200, repo.to_dict())

    def _list_branches(self, query: Any, body: Any) -> None:
        fake = self.fake
        show_hidden = query.get("show_hidden", ["false"])[0].lower() == "true"
        refs = [
            lakefs_sdk.Ref(id=name, commit_id=b.commit_id)
            for name, b in sorted(fake.branches.items())
            if show_hidden or not b.hidden
        ]
        self._send(200, _page(refs, query, lambda r: r.id, fake.page_size))

    def _list_tags(self, query: Any, body: Any) -> None:
        fake = self.fake
        refs = [lakefs_sdk.Ref(id=t, commit_id=c) for t, c in sorted(fake.tags.items())]
        self._send(200, _page(refs, query, lambda r: r.id, fake.page_size))

    def _get_gc_rules(self, query: Any, body: Any) -> None:
        rules = self.fake.gc_rules
        if rules is None:
            return self._error(404, "not found")
        model = lakefs_sdk.GarbageCollectionRules(
            default_retention_days=rules["default_retention_days"],
            branches=[lakefs_sdk.GarbageCollectionRule(**b) for b in rules.get("branches", [])],
        )
        self._send(200, model.to_dict())

    def _diff_branch(self, query: Any, body: Any, branch: str) -> None:
        if branch not in self.fake.branches:
            return self._error(404, "branch not found")
        self._send(200, _page(self.fake._diff(branch), query, lambda d: d.path, self.fake.page_size))

    def _stat_object(self, query: Any, body: Any, ref: str) -> None:
        stat = self.fake._stat(ref, query.get("path", [""])[0])
        if stat is None:
            return self._error(404, "not found")
        self._send(200, stat.to_dict())

    def _dump_submit(self, query: Any, body: Any) -> None:
        task_id = self.fake._task("dump", self.fake._dump())
        self._send(202, lakefs_sdk.TaskInfo(id=task_id).to_dict())

    def _dump_status(self, query: Any, body: Any) -> None:
        task = self.fake.tasks.get(query.get("task_id", [""])[0])
        if task is None or task.kind != "dump":
            return self._error(404, "not found")
        task.polls += 1
        done = task.polls > 1  # the first poll finds the task still running
        status = lakefs_sdk.RepositoryDumpStatus(
            id=query["task_id"][0], done=done, update_time=datetime.now(timezone.utc),
            refs=task.result if done else None,
        )
        self._send(200, status.to_dict())

    def _dump_refs(self, query: Any, body: Any) -> None:
        self._send(201, self.fake._dump().to_dict())

    def _prepare_commits(self, query: Any, body: Any) -> None:
        if self.fake.gc_rules is None:
            return self._error(404, "get gc rules: not found")
        self._send(201, self.fake._prepare_commits().to_dict())

    def _prepare_commits_async(self, query: Any, body: Any) -> None:
        result = self.fake._prepare_commits() if self.fake.gc_rules is not None else None
        task_id = self.fake._task("gc", result)
        self._send(202, lakefs_sdk.TaskCreation(id=task_id).to_dict())

    def _prepare_commits_status(self, query: Any, body: Any) -> None:
        task = self.fake.tasks.get(query.get("id", [""])[0])
        if task is None or task.kind != "gc":
            return self._error(404, "not found")
        task.polls += 1
        done = task.polls > 1
        status = lakefs_sdk.PrepareGarbageCollectionCommitsStatus(
            task_id=query["id"][0], completed=done, update_time=datetime.now(timezone.utc),
            result=task.result if done else None,
            error=lakefs_sdk.Error(message="get gc rules: not found") if done and task.result is None else None,
        )
        self._send(200, status.to_dict())

    def _prepare_uncommitted(self, query: Any, body: Any) -> None:
        token = body.get("continuation_token") if isinstance(body, dict) else None
        try:
            answer = self.fake._prepare_uncommitted(token)
        except (ValueError, KeyError):
            return self._error(400, "invalid continuation token")
        self._send(201, answer.to_dict())



# -- the end-to-end scenario ----------------------------------------------------------------------

#: The scenario's clock (in the past of any machine running the tests: jobs run it as --now).
SCENARIO_NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
SCENARIO_RULES: dict[str, Any] = {
    "default_retention_days": 7,
    "branches": [{"branch_id": "main", "retention_days": 14}],
}


@dataclass
class Scenario:
    """The repository of the end-to-end tests, with names for what the tests check.

    History (days before :data:`SCENARIO_NOW`; GC rules: 7 days, main 14):

    * -60 "Repository created" (no metarange), ``dummy`` written at the namespace root;
    * -50 main ``m1``: a.csv (``A1``), b.csv (``B1``);
    * -45 branch ``side`` from m1, ``s1``: a.csv (``A3``), s.csv (``S1``);
    * -40 branch ``old-feature`` from m1, ``of1``: f.csv (``F1``); the branch is deleted;
    * -30 main ``m2``: a.csv (``A2``);
    * -20 branch ``wipe`` from m1, ``w1`` deletes everything: an empty metarange with an id;
    * -3 ``M``: version-0 merge of side into main (parents ``[s1, m2]``: the main parent last),
      source wins (a.csv -> A3); side is deleted; tag ``v1`` and hidden branch ``_sys`` on M;
    * -2 branch ``feature-x`` from M, ``X``: x.csv (``X1``); the branch is deleted, so X is a
      dangling tip 2 days old;
    * -1.5 staged: dev (from M) a new path new/d.csv (``D1``), main an overwrite of b.csv
      (``B2``), dev an entry outside the namespace;
    * objects no entry references: ``abandoned-1`` (-5), ``abandoned-2`` (-10) and
      ``abandoned-young`` (1 hour old).

    lakeFS keeps M, m2 (M's main parent, M being within main's 14 days), X (dangling, within
    the default 7 days) and w1 (wipe's head); c0, m1, s1 and of1 expire. Only A1 and F1 are held
    by expired commits alone; walking M by its first element (s1) would expire m2 and A2.
    """

    fake: FakeLakeFS
    commits: dict[str, str]
    addresses: dict[str, str]
    rules: dict[str, Any]
    now: datetime

    @property
    def committed_marked(self) -> set[str]:
        """What lakeFS's committed GC deletes: addresses held only by commits it does not keep."""
        active = self.fake.active_commits()
        return self.fake.addresses() - self.fake.addresses(active)

    @property
    def abandoned(self) -> set[str]:
        """What uncommitted GC may delete (old enough, referenced by nothing)."""
        return {self.addresses["abandoned-1"], self.addresses["abandoned-2"]}


def use_scenario_credentials(monkeypatch: Any, tmp_path: Path) -> None:
    """The environment extract reads in the end-to-end tests: the fake server's keys, no
    lakectl config file, and lakeFS's and extract's one clock (the scenario's)."""
    monkeypatch.setenv("LAKECTL_CREDENTIALS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("LAKECTL_CONFIG_FILE", str(tmp_path / "no-lakectl.yaml"))
    monkeypatch.setattr("lakewarden.extract.api._now", lambda: SCENARIO_NOW)


def build_scenario(namespace: Namespace, *, repo_id: str = "repo1", **options: Any) -> Scenario:
    now = SCENARIO_NOW

    def ago(days: float) -> datetime:
        return now - timedelta(days=days)

    fake = FakeLakeFS(repo_id, namespace, created=ago(60), now=now, **options)
    fake.gc_rules = SCENARIO_RULES
    names: dict[str, str] = {"c0": fake.branches["main"].commit_id}
    addr: dict[str, str] = {}
    addr["A1"] = fake.upload("main", "a.csv", ago(50))
    addr["B1"] = fake.upload("main", "b.csv", ago(50))
    names["m1"] = fake.commit("main", "first data", ago(50))

    fake.branch("side", "main")
    addr["A3"] = fake.upload("side", "a.csv", ago(45))
    addr["S1"] = fake.upload("side", "s.csv", ago(45))
    names["s1"] = fake.commit("side", "side work", ago(45))

    fake.branch("old-feature", "main")
    addr["F1"] = fake.upload("old-feature", "f.csv", ago(41))
    names["of1"] = fake.commit("old-feature", "old feature", ago(40))
    fake.delete_branch("old-feature")

    fake.branch("wipe", "main")
    addr["A2"] = fake.upload("main", "a.csv", ago(30))
    names["m2"] = fake.commit("main", "rewrite a", ago(30))
    fake.delete("wipe", "a.csv")
    fake.delete("wipe", "b.csv")
    names["w1"] = fake.commit("wipe", "empty the tree", ago(20))

    names["M"] = fake.merge("side", "main", ago(3), version=0)
    fake.delete_branch("side")
    fake.tag("v1", "main")
    fake.branch("_sys", "main", hidden=True)

    fake.branch("feature-x", "main")
    addr["X1"] = fake.upload("feature-x", "x.csv", ago(2.1))
    names["X"] = fake.commit("feature-x", "feature x", ago(2))
    fake.delete_branch("feature-x")

    fake.branch("dev", "main")
    addr["D1"] = fake.upload("dev", "new/d.csv", ago(1.5))
    fake.stage_external("dev", "ext.csv", "s3://elsewhere-bucket/ext.csv", ago(1.5))
    addr["B2"] = fake.upload("main", "b.csv", ago(1.5))

    for name, days in (("abandoned-1", 5), ("abandoned-2", 10), ("abandoned-young", 1 / 24)):
        addr[name] = f"data/{name}"
        fake.abandon(addr[name], ago(days))
    return Scenario(fake, names, addr, SCENARIO_RULES, now)


@pytest.fixture
def serve() -> Any:
    """A test's way to start fake lakeFS servers (``endpoint = serve(fake)``); every server
    started is stopped when the test ends. Import it into a test module to use it."""
    servers: list[RunningServer] = []

    def start(fake: FakeLakeFS) -> str:
        servers.append(fake.serve())
        return servers[-1].endpoint

    yield start
    for server in servers:
        server.stop()
