"""The lakeFS REST API calls extract makes, through the official ``lakefs-sdk`` client.

Every call goes through :meth:`LakeFSApi._call`, which turns transport and HTTP errors into
one-line :class:`~lakewarden.errors.BadInput` reasons (unreachable endpoint, rejected
credentials, unknown repository) and never includes credentials in a message.

The calls (paths relative to ``/api/v1``; see docs/extract.md for why each is used):

* ``GET /repositories/{repo}``, ``GET .../settings/gc_rules``;
* ``POST .../gc/prepare_commits/async`` + ``GET .../gc/prepare_commits/status`` (or the
  synchronous ``POST .../gc/prepare_commits`` on servers without the async one);
* ``POST .../gc/prepare_uncommited`` (lakeFS's spelling), once per continuation token;
* ``POST .../dump`` + ``GET .../dump?task_id=`` (or the deprecated ``PUT .../refs/dump``);
* ``GET .../branches`` (visible branches only: marks the others hidden);
* fallback for servers without prepare_uncommited: ``GET .../branches?show_hidden=true``,
  ``GET .../branches/{b}/diff`` and ``GET .../refs/{b}/objects/stat`` per staged object.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar

import lakefs_sdk
import urllib3
from lakefs_sdk.exceptions import ApiException

from lakewarden.errors import BadInput
from lakewarden.lakefs.client import LakeFSConfig, sdk_client

__all__ = [
    "LakeFSApi",
    "NotFound",
    "BranchRow",
    "CommitRow",
    "StagedRow",
    "RefsDumpIds",
    "GCPreparation",
    "UncommittedPreparation",
]

log = logging.getLogger(__name__)
T = TypeVar("T")
PAGE_SIZE = 1000
REQUEST_TIMEOUT = 60.0
#: lakeFS computes the synchronous prepare_commits inside the request: give it time.
SLOW_REQUEST_TIMEOUT = 900.0
#: How long a background task (refs dump, GC preparation) may take before extract gives up.
TASK_TIMEOUT = 3600.0
#: HTTP statuses meaning "this lakeFS has no such endpoint" (older servers; proxies).
ABSENT = frozenset({404, 405, 501})


class NotFound(BadInput):
    """lakeFS answered 404 for something that existed a moment ago (a branch deleted while
    extract runs, an entry unstaged since it was listed): callers that expect such races catch
    it; anywhere else it is bad input like any other."""


@dataclass(frozen=True)
class CommitRow:
    commit_id: str
    parents: list[str]
    creation_date: datetime
    meta_range_id: str | None
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
    branch_id: str | None
    key: str | None
    address: str
    address_type: str
    last_modified: datetime


@dataclass(frozen=True)
class RefsDumpIds:
    """The three metaranges a refs dump wrote under ``_lakefs/``, and which endpoint did it."""

    commits: str
    branches: str
    tags: str
    endpoint: str


@dataclass(frozen=True)
class GCPreparation:
    """What prepare_commits answered: its run id and the commits CSV's location."""

    run_id: str
    commits_location: str
    prepared_at: datetime
    endpoint: str


@dataclass(frozen=True)
class UncommittedPreparation:
    """What prepare_uncommited answered over all its pages."""

    run_id: str
    locations: list[str]
    calls: int


def _now() -> datetime:
    """The moment a GC preparation is asked for (one place, so tests can share a fake's clock)."""
    return datetime.now(timezone.utc)


def _epoch(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


class LakeFSApi:
    """Typed access to one repository's refs, settings and GC preparations."""

    def __init__(self, config: LakeFSConfig, repository: str, *, poll_interval: float = 0.05) -> None:
        self.config = config
        self.repository = repository
        self.poll_interval = poll_interval
        self.calls = 0
        # lakewarden.lakefs.client: the API base, the credentials, the retry policy
        self._client = sdk_client(config)
        self.repositories = lakefs_sdk.RepositoriesApi(self._client)
        self.branches_api = lakefs_sdk.BranchesApi(self._client)
        self.objects_api = lakefs_sdk.ObjectsApi(self._client)
        self.internal = lakefs_sdk.InternalApi(self._client)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "LakeFSApi":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    # -- error mapping ------------------------------------------------------------------------

    def _call(self, what: str, fn: Callable[..., T], *args: Any, absent_ok: bool = False, **kwargs: Any) -> T | None:
        """Call ``fn``; with ``absent_ok``, a missing endpoint (404/405/501) returns None."""
        kwargs.setdefault("_request_timeout", REQUEST_TIMEOUT)
        self.calls += 1
        try:
            return fn(*args, **kwargs)
        except ApiException as exc:
            if absent_ok and exc.status in ABSENT:
                log.info("lakeFS has no endpoint for %s (%s): %s", what, exc.status, _server_message(exc))
                return None
            raise self._api_error(what, exc) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise self._unreachable(exc) from None

    def _must(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        result = self._call(what, fn, *args, **kwargs)
        assert result is not None
        return result

    def _unreachable(self, exc: BaseException) -> BadInput:
        text = str(getattr(exc, "reason", None) or exc).lower()
        for needle, reason in (  # noqa: B007 - reason is read after the loop (for/else)
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
            return NotFound(f"not found in lakeFS ({what}): {_server_message(exc)}", field="--repo")
        return BadInput(f"lakeFS error {status} while {what}: {_server_message(exc)}")

    def _wait(self, what: str, poll: Callable[[], T | None]) -> T:
        """Poll a background task until ``poll`` returns its result (backing off to 2 s)."""
        deadline = time.monotonic() + TASK_TIMEOUT
        delay = self.poll_interval
        while True:
            result = poll()
            if result is not None:
                return result
            if time.monotonic() > deadline:
                raise BadInput(f"lakeFS did not finish {what} within {TASK_TIMEOUT:.0f} s")
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    # -- repository ---------------------------------------------------------------------------

    def repository_info(self) -> dict[str, str]:
        """repository.json: id, storage namespace, default branch."""
        self.calls += 1
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

    def gc_rules(self) -> dict[str, Any] | None:
        """The repository's GC rules (lakeFS JSON), or None when none are set."""
        self.calls += 1
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

    def _pages(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
        after = ""
        while True:
            page = self._must(what, fn, *args, after=after, amount=PAGE_SIZE, **kwargs)
            yield from page.results
            if not page.pagination.has_more:
                return
            after = page.pagination.next_offset

    def branch_ids(self, *, show_hidden: bool) -> list[tuple[str, str]]:
        """(branch_id, commit_id) of every branch the listing API shows."""
        refs = self._pages("listing branches", self.branches_api.list_branches, self.repository, show_hidden=show_hidden)
        return [(ref.id, ref.commit_id) for ref in refs]

    # -- refs dump ----------------------------------------------------------------------------

    def dump_refs(self) -> RefsDumpIds:
        """Make lakeFS write every commit, branch and tag as metaranges under ``_lakefs/``.

        The task API (``POST /dump`` + status) first; the deprecated synchronous ``PUT
        /refs/dump`` when the server has no task API.
        """
        task = self._call("submitting a refs dump", self.repositories.dump_submit, self.repository, absent_ok=True)
        if task is not None:

            def poll() -> lakefs_sdk.RefsDump | None:
                status = self._must(
                    "reading the refs dump status", self.repositories.dump_status, self.repository, task.id
                )
                if status.error:
                    raise BadInput(f"lakeFS refs dump {task.id} failed: {status.error.splitlines()[0]}")
                if not status.done:
                    return None
                if status.refs is None:
                    raise BadInput(f"lakeFS refs dump {task.id} finished without metarange ids")
                return status.refs

            refs = self._wait("the refs dump", poll)
            endpoint = "POST /repositories/{repository}/dump"
        else:
            legacy = self._call(
                "dumping refs", self.internal.dump_refs, self.repository, absent_ok=True,
                _request_timeout=SLOW_REQUEST_TIMEOUT,
            )
            if legacy is None:
                raise BadInput(
                    f"lakeFS at {self.config.endpoint} has neither POST /repositories/{{repository}}/dump nor "
                    "PUT /repositories/{repository}/refs/dump: extract needs a refs dump to see every commit",
                    field="--lakefs-endpoint",
                )
            refs = legacy
            endpoint = "PUT /repositories/{repository}/refs/dump"
        return RefsDumpIds(
            commits=refs.commits_meta_range_id,
            branches=refs.branches_meta_range_id,
            tags=refs.tags_meta_range_id,
            endpoint=endpoint,
        )

    # -- GC preparations ----------------------------------------------------------------------

    def prepare_gc_commits(self) -> GCPreparation:
        """lakeFS's own active-commit computation (needs GC rules): its CSV location and run id."""
        prepared_at = _now()
        task = self._call(
            "submitting GC commits preparation",
            self.internal.prepare_garbage_collection_commits_async,
            self.repository,
            absent_ok=True,
        )
        if task is not None:

            def poll() -> lakefs_sdk.GarbageCollectionPrepareResponse | None:
                status = self._must(
                    "reading the GC commits preparation status",
                    self.internal.prepare_garbage_collection_commits_status,
                    self.repository,
                    task.id,
                )
                if status.error is not None:
                    message = (status.error.message or "error").splitlines()[0]
                    raise BadInput(f"lakeFS GC commits preparation {task.id} failed: {message}")
                if not status.completed:
                    return None
                if status.result is None:
                    raise BadInput(f"lakeFS GC commits preparation {task.id} finished without a result")
                return status.result

            result = self._wait("the GC commits preparation", poll)
            endpoint = "POST /repositories/{repository}/gc/prepare_commits/async"
        else:
            result = self._must(
                "preparing GC commits",
                self.internal.prepare_garbage_collection_commits,
                self.repository,
                _request_timeout=SLOW_REQUEST_TIMEOUT,
            )
            endpoint = "POST /repositories/{repository}/gc/prepare_commits"
        return GCPreparation(result.run_id, result.gc_commits_location, prepared_at, endpoint)

    def prepare_gc_uncommitted(self) -> UncommittedPreparation | None:
        """Every page of prepare_uncommited; None when the server has no such endpoint."""
        token: str | None = None
        run_id = ""
        locations: list[str] = []
        calls = 0
        while True:
            request = lakefs_sdk.PrepareGCUncommittedRequest(continuation_token=token)
            answer = self._call(
                "preparing uncommitted GC data",
                self.internal.prepare_garbage_collection_uncommitted,
                self.repository,
                request,
                absent_ok=calls == 0,
                _request_timeout=SLOW_REQUEST_TIMEOUT,
            )
            if answer is None:
                return None
            calls += 1
            if run_id and answer.run_id != run_id:
                raise BadInput(f"lakeFS changed the uncommitted GC run id mid-way ({run_id} -> {answer.run_id})")
            run_id = answer.run_id
            if answer.gc_uncommitted_location and answer.gc_uncommitted_location not in locations:
                locations.append(answer.gc_uncommitted_location)
            token = answer.continuation_token or None
            if token is None:
                return UncommittedPreparation(run_id, locations, calls)

    # -- staged entries, fallback ------------------------------------------------------------

    def staged_by_diff(self, branch_id: str, storage_namespace: str) -> list[StagedRow]:
        """Fallback for servers without prepare_uncommited: a branch's uncommitted diff, each
        added/changed object stat-ed (one round trip per staged object).

        Tombstones (``removed``) are not listed. Physical addresses inside the namespace are
        made RELATIVE, like committed entries, so the jobs compare like with like.

        An object the diff listed whose stat answers 404 was deleted or reset since (or its
        branch was): it is no longer staged, and lakeFS's own GC would not protect it either, so
        it is skipped. A 404 on the diff itself raises :class:`NotFound` (the branch is gone,
        or never was: the caller decides).
        """
        rows: list[StagedRow] = []
        prefix = storage_namespace.rstrip("/") + "/"
        diffs = self._pages(f"diffing branch {branch_id!r}", self.branches_api.diff_branch, self.repository, branch_id)
        for diff in diffs:
            if diff.type not in ("added", "changed") or diff.path_type != "object":
                continue
            try:
                stat = self._must(
                    f"stat-ing {diff.path!r} on {branch_id!r}",
                    self.objects_api.stat_object,
                    self.repository,
                    branch_id,
                    diff.path,
                )
            except NotFound:
                log.info("%r on branch %r is no longer staged (gone since the diff listed it)", diff.path, branch_id)
                continue
            address = stat.physical_address
            if address.startswith(prefix):
                address, address_type = address[len(prefix):], "RELATIVE"
            else:
                address_type = "FULL"
            rows.append(StagedRow(branch_id, diff.path, address, address_type, _epoch(stat.mtime)))
        return rows


def _server_message(exc: ApiException) -> str:
    """lakeFS's error body is ``{"message": ...}``; fall back to the HTTP reason."""
    try:
        message = json.loads(exc.body or "{}").get("message")
    except (TypeError, ValueError, AttributeError):
        message = None
    return (str(message) if message else str(exc.reason or "error")).splitlines()[0]
