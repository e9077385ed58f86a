"""Repository catalogs: resolve a ref to its commit and read the commit's action files.

Two implementations share one small protocol: :class:`SnapshotCatalog` reads a snapshot directory
(docs/contract.md §2) with object contents from its storage namespace, and :class:`LakeFSCatalog`
asks a live lakeFS server through ``lakefs-sdk``. The service never needs more than this, which
keeps the merge gate and the state machine independent of where the repository lives.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

from lakewarden.checks.config import ACTIONS_PREFIX, is_action_path
from lakewarden.checks.errors import CatalogError, NotFound
from lakewarden.errors import BadInput
from lakewarden.lakefs.client import LakeFSConfig, sdk_client
from lakewarden.snapshot import Repository as RepositoryInfo

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResolvedRef:
    """A ref dereferenced to its commit; ``kind`` is ``branch``, ``tag`` or ``commit``."""

    repository: RepositoryInfo
    ref: str
    kind: str
    commit_id: str
    message: str = ""
    committer: str = ""
    creation_date: str | None = None
    commit_metadata: dict[str, str] = field(default_factory=dict)

    @property
    def branch_id(self) -> str | None:
        return self.ref if self.kind == "branch" else None


class Catalog(Protocol):
    """What the checks service needs to know about repositories."""

    def resolve(self, repository: str, ref: str) -> ResolvedRef:
        """The commit ``ref`` points to; :class:`NotFound` for an unknown repository or ref."""
        ...

    def action_files(self, repository: str, commit_id: str) -> list[tuple[str, bytes]]:
        """``(path, content)`` of every ``_lakefs_actions/*.yaml`` object at the commit."""
        ...

    def branches(self, repository: str) -> list[str]:
        """Names of the repository's branches (to match protection globs such as ``release-*``)."""
        ...


def read_uri(uri: str) -> bytes:
    """Bytes of an object by URI: ``file://`` from local disk, ``s3://`` through boto3."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        path = Path(unquote(parsed.path))
        try:
            return path.read_bytes()
        except OSError as exc:
            raise CatalogError(f"cannot read {uri}: {exc.strerror}") from None
    if parsed.scheme in {"s3", "s3a"}:
        from lakewarden.s3client import s3_client  # deferred: only snapshots on S3 need it

        try:
            obj = s3_client().get_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"))
            return bytes(obj["Body"].read())
        except Exception as exc:  # botocore raises many types; all mean "cannot read"
            raise CatalogError(f"cannot read {uri}: {exc}") from None
    raise CatalogError(f"cannot read {uri}: unsupported storage scheme {parsed.scheme!r}")


def join_namespace(namespace: str, address: str) -> str:
    """The URI of a RELATIVE address inside the storage namespace."""
    return namespace.rstrip("/") + "/" + address.lstrip("/")


class SnapshotCatalog:
    """A snapshot directory (one repository); tables are re-read when their files change.

    Only action-file rows of the ``ranges`` table are kept in memory, so large snapshots cost one
    scan per change of the file, not one per request.
    """

    TABLES = ("branches", "tags", "commits", "metaranges", "ranges")

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        if not (self.directory / "repository.json").is_file():
            raise BadInput("not a snapshot directory (no repository.json)", source=str(self.directory))
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[tuple[Any, ...], Any]] = {}

    # -- table loading -------------------------------------------------------------------------

    def _table_path(self, name: str) -> Path | None:
        for candidate in (self.directory / f"{name}.jsonl", self.directory / f"{name}.parquet"):
            if candidate.exists():
                return candidate
        return None

    @staticmethod
    def _signature(path: Path) -> tuple[Any, ...]:
        if path.is_dir():
            return tuple(sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in path.iterdir()))
        st = path.stat()
        return (st.st_mtime_ns, st.st_size)

    @staticmethod
    def _read_rows(path: Path) -> list[dict[str, Any]]:
        if path.suffix == ".jsonl":
            rows = []
            with path.open(encoding="utf-8") as fh:
                for lineno, line in enumerate(fh, 1):
                    if line.strip():
                        try:
                            rows.append(json.loads(line))
                        except json.JSONDecodeError as exc:
                            raise BadInput(f"line {lineno}: invalid JSON ({exc.msg})", source=str(path)) from None
            return rows
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()

    def _load(self, name: str, build: Any) -> Any:
        """The table ``name`` transformed by ``build(rows)``, cached until the file changes."""
        if name == "repository":
            path: Path | None = self.directory / "repository.json"
        else:
            path = self._table_path(name)
        if path is None:
            signature: tuple[Any, ...] = ("missing",)
        else:
            signature = self._signature(path)
        with self._lock:
            cached = self._cache.get(name)
            if cached and cached[0] == signature:
                return cached[1]
        try:
            if path is None:
                value = build([])
            elif name == "repository":
                value = build(json.loads(path.read_text(encoding="utf-8")))
            else:
                value = build(self._read_rows(path))
        except (BadInput, OSError, ValueError, KeyError, TypeError, ImportError) as exc:
            # The snapshot is the server's, not the client's: a fault of the server (5xx), told
            # in the log with the file; the answer names neither file nor path.
            log.error("snapshot table %s unreadable: %s", name, exc)
            raise CatalogError(f"the repository snapshot ({name}) is unreadable; see the service log") from None
        except Exception as exc:  # pyarrow's errors are many
            log.error("snapshot table %s unreadable: %s: %s", name, exc.__class__.__name__, exc)
            raise CatalogError(f"the repository snapshot ({name}) is unreadable; see the service log") from None
        with self._lock:
            self._cache[name] = (signature, value)
        return value

    def info(self) -> RepositoryInfo:
        def build(doc: Any) -> RepositoryInfo:
            try:
                return RepositoryInfo(
                    repository_id=str(doc["repository_id"]),
                    storage_namespace=str(doc["storage_namespace"]),
                    default_branch=str(doc.get("default_branch", "main")),
                )
            except (KeyError, TypeError):
                raise BadInput(
                    "needs repository_id and storage_namespace", source=str(self.directory / "repository.json")
                ) from None

        info: RepositoryInfo = self._load("repository", build)
        return info

    def _repository(self, repository: str) -> RepositoryInfo:
        info = self.info()
        if repository != info.repository_id:
            raise NotFound(f"repository {repository!r} not found", repository=repository)
        return info

    # -- Catalog -------------------------------------------------------------------------------

    def resolve(self, repository: str, ref: str) -> ResolvedRef:
        info = self._repository(repository)
        branches: dict[str, str] = self._load("branches", lambda rows: {r["branch_id"]: r["commit_id"] for r in rows})
        tags: dict[str, str] = self._load("tags", lambda rows: {r["tag_id"]: r["commit_id"] for r in rows})
        commits: dict[str, dict[str, Any]] = self._load("commits", lambda rows: {r["commit_id"]: r for r in rows})
        if ref in branches:
            kind, commit_id = "branch", branches[ref]
        elif ref in tags:
            kind, commit_id = "tag", tags[ref]
        elif ref in commits:
            kind, commit_id = "commit", ref
        else:
            raise NotFound(f"ref {ref!r} not found in repository {repository!r}", ref=ref)
        commit = commits.get(commit_id, {})
        # a datetime when the file's loader parsed a timestamp, else as written (a string or absent)
        created: Any = commit.get("creation_date")
        return ResolvedRef(
            repository=info,
            ref=ref,
            kind=kind,
            commit_id=commit_id,
            message=str(commit.get("message") or ""),
            committer=str(commit.get("committer") or ""),
            creation_date=created.isoformat() if hasattr(created, "isoformat") else created,
            commit_metadata={str(k): str(v) for k, v in (commit.get("metadata") or {}).items()}
            if isinstance(commit.get("metadata"), dict)
            else {},
        )

    def branches(self, repository: str) -> list[str]:
        self._repository(repository)
        names: dict[str, str] = self._load("branches", lambda rows: {r["branch_id"]: r["commit_id"] for r in rows})
        return sorted(names)

    def action_files(self, repository: str, commit_id: str) -> list[tuple[str, bytes]]:
        info = self._repository(repository)
        commits: dict[str, dict[str, Any]] = self._load("commits", lambda rows: {r["commit_id"]: r for r in rows})
        commit = commits.get(commit_id)
        if commit is None:
            raise NotFound(f"commit {commit_id!r} not found in repository {repository!r}", ref=commit_id)

        def build_metaranges(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
            out: dict[str, list[str]] = {}
            for r in rows:
                out.setdefault(r["meta_range_id"], []).append(r["range_id"])
            return out

        def build_action_rows(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
            out: dict[str, list[dict[str, Any]]] = {}
            for r in rows:
                if str(r.get("key", "")).startswith(ACTIONS_PREFIX):
                    out.setdefault(r["range_id"], []).append(r)
            return out

        metaranges: dict[str, list[str]] = self._load("metaranges", build_metaranges)
        action_rows: dict[str, list[dict[str, Any]]] = self._load("ranges", build_action_rows)
        files: dict[str, bytes] = {}
        for range_id in metaranges.get(commit.get("meta_range_id") or "", []):
            for row in action_rows.get(range_id, []):
                key = row["key"]
                if not is_action_path(key):
                    continue
                address = row["address"]
                if str(row.get("address_type", "RELATIVE")).upper() == "FULL":
                    uri = address
                else:
                    uri = join_namespace(info.storage_namespace, address)
                files[key] = read_uri(uri)
        return sorted(files.items())




class LakeFSCatalog:
    """A live lakeFS server, through the one ``lakefs-sdk`` client (lakewarden.lakefs.client:
    the server and credentials by lakectl's rule, the retry policy)."""

    def __init__(self, config: LakeFSConfig):
        self._client = sdk_client(config)  # first: without lakefs-sdk, its one-line bad input
        import lakefs_sdk

        self._sdk = lakefs_sdk
        self._lock = threading.Lock()

    def _call(self, fn: Any, *args: Any, not_found: str, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except self._sdk.exceptions.NotFoundException:
            raise NotFound(not_found) from None
        except self._sdk.exceptions.ApiException as exc:
            raise CatalogError(f"lakeFS answered {exc.status}: {exc.reason}") from None
        except Exception as exc:  # connection errors from urllib3
            raise CatalogError(f"cannot reach lakeFS: {exc}") from None

    def _repository(self, repository: str) -> RepositoryInfo:
        repo = self._call(
            self._sdk.RepositoriesApi(self._client).get_repository,
            repository,
            not_found=f"repository {repository!r} not found",
        )
        return RepositoryInfo(repo.id, repo.storage_namespace, repo.default_branch)

    def resolve(self, repository: str, ref: str) -> ResolvedRef:
        info = self._repository(repository)
        kind = "commit"
        target = ref
        try:
            branch = self._call(self._sdk.BranchesApi(self._client).get_branch, repository, ref, not_found="")
            kind, target = "branch", branch.commit_id
        except NotFound:
            try:
                tag = self._call(self._sdk.TagsApi(self._client).get_tag, repository, ref, not_found="")
                kind, target = "tag", tag.commit_id
            except NotFound:
                pass
        commit = self._call(
            self._sdk.CommitsApi(self._client).get_commit,
            repository,
            target,
            not_found=f"ref {ref!r} not found in repository {repository!r}",
        )
        return ResolvedRef(
            repository=info,
            ref=ref,
            kind=kind,
            commit_id=commit.id,
            message=commit.message or "",
            committer=commit.committer or "",
            creation_date=str(commit.creation_date) if commit.creation_date is not None else None,
            commit_metadata=dict(commit.metadata or {}),
        )

    def branches(self, repository: str) -> list[str]:
        api = self._sdk.BranchesApi(self._client)
        names: list[str] = []
        after = ""
        while True:
            page = self._call(api.list_branches, repository, after=after, amount=1000,
                              not_found=f"repository {repository!r} not found")
            names.extend(b.id for b in page.results)
            if not page.pagination.has_more:
                return names
            after = page.pagination.next_offset

    def action_files(self, repository: str, commit_id: str) -> list[tuple[str, bytes]]:
        objects = self._sdk.ObjectsApi(self._client)
        paths: list[str] = []
        after = ""
        while True:
            page = self._call(
                objects.list_objects,
                repository,
                commit_id,
                prefix=ACTIONS_PREFIX,
                after=after,
                amount=1000,
                not_found=f"commit {commit_id!r} not found in repository {repository!r}",
            )
            paths.extend(o.path for o in page.results if is_action_path(o.path))
            if not page.pagination.has_more:
                break
            after = page.pagination.next_offset
        out = []
        for path in paths:
            data = self._call(objects.get_object, repository, commit_id, path, not_found=f"{path} vanished")
            out.append((path, bytes(data)))
        return out
