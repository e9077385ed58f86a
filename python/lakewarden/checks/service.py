"""The checks service: triggering, retrying, callbacks and the merge gate, independent of HTTP.

The order of work is what keeps bad input harmless: everything about a request (ref, action
files, templated properties) is resolved and validated first; only then are executions created,
and executors are called after the state change is committed, outside any transaction.
"""

from __future__ import annotations

import fnmatch
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping
from urllib.parse import quote

from lakewarden.checks.catalog import Catalog, ResolvedRef
from lakewarden.checks.config import CheckDefinition, ServiceConfig, collect_checks
from lakewarden.checks.errors import Conflict, NotFound
from lakewarden.checks.executors import EXECUTORS, ExecutionRequest, prepare_properties
from lakewarden.checks.states import RETRYABLE, Status, parse_callback_status
from lakewarden.checks.store import Execution, Store
from lakewarden.errors import BadInput

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GateDecision:
    """The merge gate's answer: ``allowed`` maps to HTTP 200, otherwise 412 with ``reasons``."""

    allowed: bool
    body: dict[str, Any]


class ChecksService:
    def __init__(
        self,
        catalog: Catalog,
        store: Store,
        config: ServiceConfig,
        *,
        env: Mapping[str, str] | None = None,
        public_url: str | None = None,
        max_parallel_starts: int = 8,
    ):
        self.catalog = catalog
        self.store = store
        self.config = config
        self.env = env if env is not None else os.environ
        self.public_url = (config.public_url or public_url or "").rstrip("/")
        self._pool = ThreadPoolExecutor(max_workers=max_parallel_starts, thread_name_prefix="checks-start")

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    # -- reading -------------------------------------------------------------------------------

    def definitions(self, resolved: ResolvedRef) -> list[CheckDefinition]:
        files = self.catalog.action_files(resolved.repository.repository_id, resolved.commit_id)
        return collect_checks(files, EXECUTORS)

    def list(self, repository: str, ref: str) -> dict[str, Any]:
        resolved = self.catalog.resolve(repository, ref)
        return self._report(resolved, self.store.list(repository, resolved.commit_id))

    def get(self, repository: str, ref: str, check_id: str) -> dict[str, Any]:
        resolved = self.catalog.resolve(repository, ref)
        found = self.store.get(repository, resolved.commit_id, check_id)
        if found is None:
            raise NotFound(f"check {check_id!r} has not run for commit {resolved.commit_id}", check_id=check_id)
        return {**found.to_json(), "mandatory_for": self._mandatory_for(resolved, check_id)}

    def _mandatory_for(self, resolved: ResolvedRef, check_id: str) -> list[str]:
        return [
            rule.branch
            for rule in self.config.protected_branches
            if check_id in rule.mandatory_checks
            and fnmatch.fnmatchcase(resolved.repository.repository_id, rule.repository)
        ]

    @staticmethod
    def _report(resolved: ResolvedRef, executions: list[Execution], **extra: Any) -> dict[str, Any]:
        return {
            "repository": resolved.repository.repository_id,
            "ref": resolved.ref,
            "ref_kind": resolved.kind,
            "commit_id": resolved.commit_id,
            "commit_message": resolved.message,
            "committer": resolved.committer,
            "checks": [e.to_json() for e in executions],
            **extra,
        }

    # -- triggering ----------------------------------------------------------------------------

    def trigger(self, repository: str, ref: str, check_id: str | None = None) -> dict[str, Any]:
        """Start every check of the commit (or one) that has no execution yet.

        Checks that already ran or are running are reported unchanged (``triggered: false``);
        FAILED and LOST ones are started again with :meth:`retry`.
        """
        resolved = self.catalog.resolve(repository, ref)
        definitions = self.definitions(resolved)
        if check_id is not None:
            definitions = [d for d in definitions if d.id == check_id]
            if not definitions:
                raise NotFound(f"no check {check_id!r} defined at commit {resolved.commit_id}", check_id=check_id)
        prepared = [(d, self._prepare(d)) for d in definitions]
        started: list[tuple[Execution, str, dict[str, Any]]] = []
        results: list[tuple[str, bool]] = []
        for definition, properties in prepared:
            execution, token = self.store.start(
                repository, resolved.commit_id, ref, definition, definition.timeout or self.config.default_timeout
            )
            results.append((definition.id, token is not None))
            if token is not None:
                started.append((execution, token, properties))
        self._dispatch(resolved, started)
        triggered = dict(results)
        executions = [e for e in self.store.list(repository, resolved.commit_id) if e.check_id in triggered]
        report = self._report(resolved, executions)
        for item in report["checks"]:
            item["triggered"] = triggered[item["id"]]
        return report

    def retry(self, repository: str, ref: str, check_id: str) -> dict[str, Any]:
        """Start a FAILED or LOST check again: new execution id, new token, attempt + 1."""
        resolved = self.catalog.resolve(repository, ref)
        current = self.store.get(repository, resolved.commit_id, check_id)
        if current is None:
            raise NotFound(f"check {check_id!r} has not run for commit {resolved.commit_id}", check_id=check_id)
        if current.status not in RETRYABLE:
            raise Conflict(
                f"check {check_id!r} is {current.status.value}; only FAILED or LOST checks can be retried",
                check_id=check_id,
                status=current.status.value,
            )
        properties = self._prepare(current.definition)
        execution, token = self.store.retry(
            repository, resolved.commit_id, check_id, current.definition.timeout or self.config.default_timeout
        )
        self._dispatch(resolved, [(execution, token, properties)])
        found = self.store.get(repository, resolved.commit_id, check_id)
        assert found is not None
        return self._report(resolved, [found])

    def _prepare(self, definition: CheckDefinition) -> dict[str, Any]:
        return prepare_properties(definition, self.config.executors, self.env, self.config.env_prefix)

    def callback_url(self, repository: str, commit_id: str, check_id: str, token: str) -> str:
        path = f"/api/v1/repositories/{quote(repository, safe='')}/refs/{commit_id}/checks/{quote(check_id, safe='')}"
        return f"{self.public_url}{path}?token={quote(token, safe='')}"

    def event(self, resolved: ResolvedRef, execution: Execution, token: str) -> dict[str, Any]:
        """The JSON an executor receives (webhook body, Airflow ``conf``); see the README."""
        repo = resolved.repository
        return {
            "event_type": "check",
            "event_time": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
            "action_name": execution.definition.action_name,
            "hook_id": execution.check_id,
            "check_id": execution.check_id,
            "check_type": execution.check_type,
            "execution_id": execution.execution_id,
            "attempt": execution.attempt,
            "repository_id": repo.repository_id,
            "storage_namespace": repo.storage_namespace,
            "ref": resolved.ref,
            "branch_id": resolved.branch_id,
            "source_ref": resolved.ref,
            "commit_id": resolved.commit_id,
            "commit_message": resolved.message,
            "committer": resolved.committer,
            "commit_metadata": resolved.commit_metadata,
            "properties": execution.definition.properties,
            "deadline": execution.deadline_at.isoformat().replace("+00:00", "Z"),
            "callback_url": self.callback_url(repo.repository_id, resolved.commit_id, execution.check_id, token),
            "token": token,
        }

    def _dispatch(self, resolved: ResolvedRef, started: list[tuple[Execution, str, dict[str, Any]]]) -> None:
        """Call the executors in parallel and wait, so the answer shows EXECUTING or FAILED."""
        futures = [self._pool.submit(self._start_one, resolved, e, t, p) for e, t, p in started]
        for future in futures:
            future.result()

    def _start_one(self, resolved: ResolvedRef, execution: Execution, token: str, properties: dict[str, Any]) -> None:
        request = ExecutionRequest(
            check_id=execution.check_id,
            execution_id=execution.execution_id,
            event=self.event(resolved, execution, token),
            properties=properties,
        )
        try:
            started = EXECUTORS[execution.check_type].start(request)
        except Exception as exc:  # any failure to hand over the job fails the execution
            message = str(exc) or exc.__class__.__name__
            log.warning("check %s@%s: executor failed: %s", execution.check_id, resolved.commit_id[:12], message)
            self.store.mark_start_failed(execution.row_id, execution.execution_id, message)
            return
        self.store.mark_executing(execution.row_id, execution.execution_id, started.output_url)

    # -- callbacks -----------------------------------------------------------------------------

    def callback(self, repository: str, ref: str, check_id: str, token: str | None, body: Any) -> dict[str, Any]:
        """Record an executor's result; only the check's latest unused token is accepted."""
        if not token:
            raise BadInput("callback needs ?token=", field="token")
        if not isinstance(body, dict):
            raise BadInput('callback body must be {"status": "SUCCESS"|"FAILED", "metadata": {...}}')
        try:
            status = parse_callback_status(body.get("status"))
        except ValueError as exc:
            raise BadInput(str(exc), field="status") from None
        metadata = body.get("metadata") or {}
        if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
        ):
            raise BadInput("metadata must map strings to strings", field="metadata")
        unknown = set(body) - {"status", "metadata"}
        if unknown:
            raise BadInput(f"unknown keys {sorted(unknown)}")
        commit_id = ref
        if self.store.get(repository, ref, check_id) is None:
            commit_id = self.catalog.resolve(repository, ref).commit_id
        return self.store.callback(repository, commit_id, check_id, token, status, metadata).to_json()

    # -- merge gate ----------------------------------------------------------------------------

    def gate(self, event: Any) -> GateDecision:
        """Decide a lakeFS ``pre-merge`` event from state alone (plus, rarely, one ref lookup)."""
        if not isinstance(event, dict):
            raise BadInput("expected a lakeFS event (JSON object)")
        event_type = event.get("event_type", "pre-merge")
        if event_type != "pre-merge":
            raise BadInput(f"the merge gate handles pre-merge events, got {event_type!r}", field="event_type")
        for key in ("repository_id", "branch_id", "source_ref"):
            if not isinstance(event.get(key), str) or not event[key]:
                raise BadInput(f"{key} is missing", field=key)
        repository, branch, source_ref = event["repository_id"], event["branch_id"], event["source_ref"]
        base = {"repository": repository, "branch": branch, "source_ref": source_ref}
        if not self.config.is_protected(repository, branch):
            return GateDecision(True, {**base, "allowed": True, "message": f"branch {branch} is not protected"})
        mandatory = self.config.mandatory_checks(repository, branch)
        commit_id = source_ref
        executions = self.store.list(repository, source_ref)
        if not executions:
            try:
                commit_id = self.catalog.resolve(repository, source_ref).commit_id
            except NotFound:
                # lakeFS sends the source commit id for pre-merge; an unknown one has no checks.
                if isinstance(event.get("commit_id"), str) and event["commit_id"]:
                    commit_id = event["commit_id"]
            except Exception as exc:  # fail closed: a merge is never allowed on a guess
                reasons = [{"check": None, "status": None, "reason": f"cannot resolve {source_ref}: {exc}"}]
                return GateDecision(False, {**base, "allowed": False, "reasons": reasons, "message": reasons[0]["reason"]})
            executions = self.store.list(repository, commit_id)
        by_id = {e.check_id: e for e in executions}
        reasons = []
        for check in mandatory:
            execution = by_id.get(check)
            if execution is None:
                reasons.append({"check": check, "status": None, "reason": f"check {check} has not run for commit {commit_id}"})
            elif execution.status is not Status.SUCCESS:
                reasons.append(
                    {"check": check, "status": execution.status.value, "reason": f"check {check} is {execution.status.value}"}
                )
        body = {**base, "commit_id": commit_id, "mandatory_checks": mandatory, "allowed": not reasons}
        if reasons:
            body["reasons"] = reasons
            body["message"] = f"merge into {branch} blocked: " + "; ".join(r["reason"] for r in reasons)
        else:
            body["message"] = f"all {len(mandatory)} mandatory checks of {branch} passed"
        return GateDecision(not reasons, body)
