"""The lakeFS REST API calls extract needs, through the official ``lakefs-sdk`` client.

Every call goes through :meth:`LakeFSApi._call`, which turns transport and HTTP errors into
one-line :class:`~lakewarden.errors.BadInput` reasons (unreachable endpoint, rejected
credentials, unknown repository) and never includes credentials in a message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar

import lakefs_sdk
import urllib3
from lakefs_sdk.exceptions import ApiException

from lakewarden.errors import BadInput
from lakewarden.extract.config import LakeFSConfig, api_base_url

__all__ = ["LakeFSApi", "BranchRow", "CommitRow", "StagedRow"]

log = logging.getLogger(__name__)
T = TypeVar("T")
PAGE_SIZE = 1000
REQUEST_TIMEOUT = 60.0


@dataclass(frozen=True)
class CommitRow:
    commit_id: str
    parents: list[str]
    creation_date: datetime
    meta_range_id: str
    committer: str
    message: str
    version: int


@dataclass(frozen=True)
class BranchRow:
    branch_id: str
    commit_id: str
    hidden: bool


@dataclass(frozen=True)
class StagedRow:
    branch_id: str
    key: str
    address: str
    address_type: str
    last_modified: datetime


def _epoch(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


class LakeFSApi:
    """Thin, typed access to one repository's refs and settings."""

    def __init__(self, config: LakeFSConfig, repository: str) -> None:
        self.config = config
        self.repository = repository
        configuration = lakefs_sdk.Configuration(
            host=api_base_url(config.endpoint),
            username=config.access_key_id,
            password=config.secret_access_key,
        )
        # An unreachable endpoint fails at once (no connect retries); a dropped read is retried.
        configuration.retries = urllib3.Retry(total=2, connect=0, read=2, status=0, backoff_factor=0.5)
        self._client = lakefs_sdk.ApiClient(configuration)
        self.repositories = lakefs_sdk.RepositoriesApi(self._client)
        self.branches_api = lakefs_sdk.BranchesApi(self._client)
        self.tags_api = lakefs_sdk.TagsApi(self._client)
        self.refs_api = lakefs_sdk.RefsApi(self._client)
        self.objects_api = lakefs_sdk.ObjectsApi(self._client)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "LakeFSApi":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    # -- error mapping ------------------------------------------------------------------------

    def _call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        kwargs.setdefault("_request_timeout", REQUEST_TIMEOUT)
        try:
            return fn(*args, **kwargs)
        except ApiException as exc:
            raise self._api_error(what, exc) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise self._unreachable(exc) from None

    def _unreachable(self, exc: BaseException) -> BadInput:
        text = str(getattr(exc, "reason", None) or exc).lower()
        for needle, reason in (
            ("refused", "connection refused"),
            ("timed out", "timed out"),
            ("name or service not known", "unknown host"),
            ("nodename nor servname", "unknown host"),
            ("temporary failure in name resolution", "unknown host"),
        ):
            if needle in text:
                break
        else:
            reason = type(getattr(exc, "reason", None) or exc).__name__
        return BadInput(f"cannot reach lakeFS at {self.config.endpoint} ({reason})", field="--lakefs-endpoint")

    def _api_error(self, what: str, exc: ApiException) -> BadInput:
        status = exc.status or 0
        if status in (401, 403):
            hint = "" if self.config.has_credentials else " (no credentials: set LAKECTL_CREDENTIALS_*)"
            verb = "rejected the credentials" if status == 401 else "denied access"
            return BadInput(f"lakeFS at {self.config.endpoint} {verb} ({status}) while {what}{hint}")
        if status == 404:
            return BadInput(f"not found in lakeFS ({what}): {_server_message(exc)}", field="--repo")
        return BadInput(f"lakeFS error {status} while {what}: {_server_message(exc)}")

    # -- calls --------------------------------------------------------------------------------

    def repository_info(self) -> dict[str, str]:
        """repository.json: id, storage namespace, default branch."""
        try:
            repo = self.repositories.get_repository(self.repository, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status == 404:
                raise BadInput(f"repository {self.repository!r} does not exist", field="--repo") from None
            raise self._api_error(f"reading repository {self.repository!r}", exc) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise self._unreachable(exc) from None
        return {
            "repository_id": repo.id,
            "storage_namespace": repo.storage_namespace,
            "default_branch": repo.default_branch,
        }

    def _pages(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
        after = ""
        while True:
            page = self._call(what, fn, *args, after=after, amount=PAGE_SIZE, **kwargs)
            yield from page.results
            if not page.pagination.has_more:
                return
            after = page.pagination.next_offset

    def branches(self) -> list[BranchRow]:
        """Every branch, hidden ones included (the API's Ref has no hidden flag, so a branch
        listed only with ``show_hidden`` is the hidden one)."""
        listing = self.branches_api.list_branches
        visible = {ref.id for ref in self._pages("listing branches", listing, self.repository)}
        refs = self._pages("listing branches", listing, self.repository, show_hidden=True)
        return [BranchRow(ref.id, ref.commit_id, ref.id not in visible) for ref in refs]

    def tags(self) -> list[tuple[str, str]]:
        """(tag_id, commit_id) of every tag."""
        return [(ref.id, ref.commit_id) for ref in self._pages("listing tags", self.tags_api.list_tags, self.repository)]

    def commits(self, heads: list[str]) -> dict[str, CommitRow]:
        """Every commit reachable from ``heads``, each walked with the log API.

        A walk stops as soon as every commit it still has to reach is already known: commits
        found by an earlier (complete) walk have their whole ancestry known, so branches sharing
        history cost one walk of the shared part, not one per branch.
        """
        known: dict[str, CommitRow] = {}
        for head in dict.fromkeys(heads):
            if head in known:
                continue
            pending = {head}
            for commit in self._pages(f"reading the log of {head}", self.refs_api.log_commits, self.repository, head):
                if commit.id not in known:
                    known[commit.id] = CommitRow(
                        commit_id=commit.id,
                        parents=list(commit.parents),
                        creation_date=_epoch(commit.creation_date),
                        meta_range_id=commit.meta_range_id or "",
                        committer=commit.committer,
                        message=commit.message,
                        version=int(commit.version or 0),
                    )
                    pending.update(p for p in commit.parents if p not in known)
                pending.discard(commit.id)
                if not pending:
                    break
        return known

    def gc_rules(self) -> dict[str, Any] | None:
        """The repository's GC rules (lakeFS JSON), or None when none are set."""
        try:
            rules = self.repositories.get_gc_rules(self.repository, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise self._api_error("reading GC rules", exc) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise self._unreachable(exc) from None
        return {
            "default_retention_days": rules.default_retention_days,
            "branches": [{"branch_id": b.branch_id, "retention_days": b.retention_days} for b in rules.branches],
        }

    def staged(self, branch_id: str, storage_namespace: str) -> list[StagedRow]:
        """Uncommitted entries of a branch: its diff against HEAD, each added/changed path stat-ed.

        Tombstones (``removed``) are not listed. Physical addresses inside the namespace are
        made RELATIVE, like committed entries, so the jobs compare like with like.
        """
        rows: list[StagedRow] = []
        prefix = storage_namespace.rstrip("/") + "/"
        diffs = self._pages(f"diffing branch {branch_id!r}", self.branches_api.diff_branch, self.repository, branch_id)
        for diff in diffs:
            if diff.type not in ("added", "changed") or diff.path_type != "object":
                continue
            stat = self._call(
                f"stat-ing {diff.path!r} on {branch_id!r}",
                self.objects_api.stat_object,
                self.repository,
                branch_id,
                diff.path,
            )
            address = stat.physical_address
            if address.startswith(prefix):
                address, address_type = address[len(prefix):], "RELATIVE"
            else:
                address_type = "FULL"
            rows.append(StagedRow(branch_id, diff.path, address, address_type, _epoch(stat.mtime)))
        return rows


def _server_message(exc: ApiException) -> str:
    """lakeFS's error body is ``{"message": ...}``; fall back to the HTTP reason."""
    import json

    try:
        message = json.loads(exc.body or "{}").get("message")
    except (TypeError, ValueError, AttributeError):
        message = None
    return (str(message) if message else str(exc.reason or "error")).splitlines()[0]
