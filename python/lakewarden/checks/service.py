"""The checks service: triggering, retrying, callbacks and the merge gate, independent of HTTP.

The order of work is what keeps bad input harmless: everything about a request (ref, action
files, templated properties) is resolved and validated first; only then are executions created,
and executors are called after the state change is committed, outside any transaction.
"""

from __future__ import annotations

import builtins
import dataclasses
import fnmatch
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping
from urllib.parse import quote

from lakewarden.checks.catalog import Catalog, ResolvedRef
from lakewarden.checks.config import ServiceConfig, collect_checks
from lakewarden.checks.definitions import CheckDefinition
from lakewarden.checks.dag_watch import DagRunWatcher
from lakewarden.checks.errors import Conflict, NotFound
from lakewarden.checks.executors import EXECUTORS, ExecutionRequest, prepare_properties
from lakewarden.checks.masking import SecretMask, install_log_masking
from lakewarden.checks.states import RETRYABLE, Status, parse_callback_status
from lakewarden.checks.store import Execution, Store
from lakewarden.checks.templating import render_env
from lakewarden.errors import BadInput

log = logging.getLogger(__name__)

#: The largest executor log kept per execution (characters); appends beyond it are refused.
MAX_OUTPUT_CHARS = 256 * 1024
#: The longest error kept for an execution (characters, after masking).
MAX_ERROR_CHARS = 2000


@dataclass(frozen=True)
class GateDecision:
    """The merge gate's answer: ``allowed`` maps to HTTP 200, otherwise 412 with ``reasons``."""

    allowed: bool
    body: dict[str, Any]


def is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")


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
        self.secrets = SecretMask()
        install_log_masking(self.secrets)
        # Every value that can ever be rendered is a secret from the first moment (also after a
        # restart, before any check renders it again): every variable an action file may read...
        self.secrets.add([v for k, v in self.env.items() if k.startswith(config.env_prefix)])
        if config.api_token:
            self.secrets.add([config.api_token])
        for endpoint in config.executors.values():
            # ... and every value the config renders. Render now: a missing variable stops serve
            # at once.
            rendered: set[str] = set()
            properties = render_env(endpoint.properties, self.env, prefix="", source=config.source,
                                    field=f"executors.{endpoint.name}", rendered=rendered)
            self.secrets.add(rendered)
            self._add_basic_auth(properties)
        store.mask = self.secrets.mask
        store.rejection_limit.per_minute = config.rejections_per_client
        self._pool = ThreadPoolExecutor(max_workers=max_parallel_starts, thread_name_prefix="checks-start")
        self.watcher = DagRunWatcher(store, config.airflow_poll_interval.total_seconds(), self.secrets)
        # Log appends: the end of a piece that could begin a secret waits for the next piece.
        self._append_lock = threading.Lock()
        self._held: dict[str, str] = {}

    def close(self) -> None:
        self.watcher.stop()
        self._pool.shutdown(wait=True)

    def mask(self, value: Any) -> Any:
        return self.secrets.mask_obj(value)

    # -- definitions ---------------------------------------------------------------------------

    def protected_branches(self, repository: str) -> list[str]:
        """Existing branches of the repository that a protection rule matches, in rule order."""
        rules = [r for r in self.config.protected_branches if fnmatch.fnmatchcase(repository, r.repository)]
        if not rules:
            return []
        existing: list[str] | None = None
        out: list[str] = []
        for rule in rules:
            if is_glob(rule.branch):
                if existing is None:
                    existing = self.catalog.branches(repository)
                names = [b for b in existing if fnmatch.fnmatchcase(b, rule.branch)]
            else:
                names = [rule.branch]
            out.extend(n for n in names if n not in out)
        return out

    def pinned_definitions(self, repository: str) -> dict[str, CheckDefinition]:
        """Every mandatory check of the repository's protected branches, defined by the server
        config or else by the head of the protected branch that requires it (never by the commit
        being checked). ``pinned_for`` lists the protected branches that definition satisfies."""
        config_defs = {d.id: d for d in self.config.checks}
        heads: dict[str, dict[str, CheckDefinition]] = {}
        chosen: dict[str, CheckDefinition] = {}
        for branch in self.protected_branches(repository):
            for check_id in self.config.mandatory_checks(repository, branch):
                if check_id in config_defs:
                    candidate: CheckDefinition | None = config_defs[check_id]
                else:
                    if branch not in heads:
                        try:
                            head = self.catalog.resolve(repository, branch)
                        except NotFound:
                            heads[branch] = {}
                            continue
                        try:
                            heads[branch] = {d.id: d for d in self._definitions_at(head)}
                        except BadInput as exc:  # say where: the file is the protected branch's
                            raise BadInput(f"{exc} (at the head of protected branch {branch})") from None
                    candidate = heads[branch].get(check_id)
                if candidate is None:
                    continue
                previous = chosen.get(check_id)
                if previous is None:
                    chosen[check_id] = dataclasses.replace(candidate, pinned_for=(branch,))
                elif previous.digest_json() == candidate.digest_json():
                    chosen[check_id] = dataclasses.replace(previous, pinned_for=(*previous.pinned_for, branch))
        return chosen

    def _definitions_at(self, resolved: ResolvedRef) -> list[CheckDefinition]:
        files = self.catalog.action_files(resolved.repository.repository_id, resolved.commit_id)
        return collect_checks(files, EXECUTORS)

    def definitions(self, resolved: ResolvedRef) -> list[CheckDefinition]:
        """The checks to run for a commit: its own, with every mandatory check replaced by (or
        added as) its pinned definition."""
        own = self._definitions_at(resolved)
        pinned = self.pinned_definitions(resolved.repository.repository_id)
        out = [pinned.get(d.id, d) for d in own]
        out.extend(d for check_id, d in pinned.items() if check_id not in {o.id for o in own})
        return out

    # -- reading -------------------------------------------------------------------------------

    def list(self, repository: str, ref: str) -> dict[str, Any]:
        resolved = self.catalog.resolve(repository, ref)
        executions = self.store.list(repository, resolved.commit_id)
        return self._report(resolved, executions, merge=self.merge_status(repository, resolved.commit_id, executions))

    def get(self, repository: str, ref: str, check_id: str) -> dict[str, Any]:
        resolved = self.catalog.resolve(repository, ref)
        found = self.store.get(repository, resolved.commit_id, check_id)
        if found is None:
            raise NotFound(f"check {check_id!r} has not run for commit {resolved.commit_id}", check_id=check_id)
        return {**self._check_json(found), "mandatory_for": self._mandatory_for(resolved, check_id),
                "log": self.secrets.mask(self.store.output(found))}

    def _mandatory_for(self, resolved: ResolvedRef, check_id: str) -> builtins.list[str]:
        return [
            rule.branch
            for rule in self.config.protected_branches
            if check_id in rule.mandatory_checks
            and fnmatch.fnmatchcase(resolved.repository.repository_id, rule.repository)
        ]

    def log_path(self, e: Execution) -> str:
        return (f"/api/v1/repositories/{quote(e.repository, safe='')}/refs/{e.commit_id}"
                f"/checks/{quote(e.check_id, safe='')}/output")

    def _check_json(self, e: Execution) -> dict[str, Any]:
        return {**e.to_json(), "log_url": self.log_path(e), "pinned_for": list(e.definition.pinned_for)}

    def _report(self, resolved: ResolvedRef, executions: builtins.list[Execution], **extra: Any) -> dict[str, Any]:
        return {
            "repository": resolved.repository.repository_id,
            "ref": resolved.ref,
            "ref_kind": resolved.kind,
            "commit_id": resolved.commit_id,
            "commit_message": resolved.message,
            "committer": resolved.committer,
            "checks": [self._check_json(e) for e in executions],
            **extra,
        }

    def output(self, repository: str, ref: str, check_id: str) -> str:
        resolved = self.catalog.resolve(repository, ref) if self.store.get(repository, ref, check_id) is None else None
        commit_id = resolved.commit_id if resolved else ref
        found = self.store.get(repository, commit_id, check_id)
        if found is None:
            raise NotFound(f"check {check_id!r} has not run for commit {commit_id}", check_id=check_id)
        return str(self.secrets.mask(self.store.output(found)))

    def append_output(
        self, repository: str, ref: str, check_id: str, token: str | None, text: str, *, client: str | None = None
    ) -> dict[str, Any]:
        """Append to the executor log of the execution ``token`` belongs to (the event's output_url)."""
        if not token:
            raise BadInput("the log endpoint needs ?token= (the event's callback_token)", field="token")
        execution = self.store.execution_for_token(repository, ref, check_id, token, client=client)
        with self._append_lock:
            # Mask the held-back end of the previous piece together with this one, so a secret
            # split across two appends is masked whole; keep back this piece's end if it could be
            # the beginning of a secret. Nothing of a secret is ever stored.
            held = self._held.pop(execution.execution_id, "")
            now, keep = self.secrets.mask_piece(held, text)
            try:
                total = self.store.append_output(execution, now, MAX_OUTPUT_CHARS)
            except Exception:
                if held:
                    self._held[execution.execution_id] = held
                raise
            if keep:
                if len(self._held) >= 10_000:  # bounded: the oldest held ends are dropped
                    self._held.pop(next(iter(self._held)))
                self._held[execution.execution_id] = keep
        return {"id": check_id, "execution_id": execution.execution_id, "size": total, "limit": MAX_OUTPUT_CHARS}

    # -- triggering ----------------------------------------------------------------------------

    def trigger(self, repository: str, ref: str, check_id: str | None = None) -> dict[str, Any]:
        """Start every check of the commit (or one) that has no execution yet, in the background.

        Checks that already ran or are running are reported unchanged (``triggered: false``);
        FAILED and LOST ones are started again with :meth:`retry`. The answer comes before any
        executor is called: the checks are STARTING, and move on as executors answer.
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
            timeout = definition.timeout or self.config.default_timeout
            execution, token = self.store.start(repository, resolved.commit_id, ref, definition, timeout)
            if token is None and self._definition_changed(execution.definition, definition):
                # It ran another definition than the one now pinned (the protected branch defined
                # or changed the check since): the gate would refuse it for good, so run it again.
                log.info("check %s@%s: definition changed since it ran; running it again",
                         definition.id, resolved.commit_id[:12])
                execution, token = self.store.rerun(execution, definition, timeout)
            results.append((definition.id, token is not None))
            if token is not None:
                started.append((execution, token, properties))
        triggered = dict(results)
        executions = [e for e in self.store.list(repository, resolved.commit_id) if e.check_id in triggered]
        self._dispatch(resolved, started)
        report = self._report(resolved, executions)
        for item in report["checks"]:
            item["triggered"] = triggered[item["id"]]
        return report

    @staticmethod
    def _definition_changed(ran: CheckDefinition, now: CheckDefinition) -> bool:
        return ran.digest_json() != now.digest_json() or set(ran.pinned_for) != set(now.pinned_for)

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
        return self._report(resolved, [execution])

    def _prepare(self, definition: CheckDefinition) -> dict[str, Any]:
        rendered: set[str] = set()
        try:
            properties = prepare_properties(definition, self.config.executors, self.env, self.config.env_prefix,
                                            rendered)
        finally:
            self.secrets.add(rendered)
        self._add_basic_auth(properties)
        return properties

    def _add_basic_auth(self, properties: Mapping[str, Any]) -> None:
        """The exact ``Authorization: Basic`` form of a rendered password (short ones included)."""
        if properties.get("username") is not None and properties.get("password") is not None:
            self.secrets.add([str(properties["password"])], basic_auth_user=str(properties["username"]))

    def check_url(self, repository: str, commit_id: str, check_id: str, suffix: str, token: str) -> str:
        path = f"/api/v1/repositories/{quote(repository, safe='')}/refs/{commit_id}/checks/{quote(check_id, safe='')}"
        return f"{self.public_url}{path}{suffix}?token={quote(token, safe='')}"

    def event(self, resolved: ResolvedRef, execution: Execution, token: str) -> dict[str, Any]:
        """The JSON an executor receives (webhook body; Airflow ``conf["lakeFS_event"]``).

        The design's fields first (docs/contract.md §6): ``source_ref`` is the commit the ref was
        dereferenced to, so the executor checks exactly what the result will be recorded for.
        """
        repo = resolved.repository
        return {
            "repository_id": repo.repository_id,
            "branch_id": resolved.branch_id,
            "source_ref": resolved.commit_id,
            "check_id": execution.check_id,
            "storage_namespace": repo.storage_namespace,
            "callback_token": token,
            "output_url": self.check_url(repo.repository_id, resolved.commit_id, execution.check_id, "/output", token),
            "callback_url": self.check_url(repo.repository_id, resolved.commit_id, execution.check_id, "", token),
            "event_type": "check",
            "event_time": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
            "action_name": execution.definition.action_name,
            "hook_id": execution.check_id,
            "check_type": execution.check_type,
            "execution_id": execution.execution_id,
            "attempt": execution.attempt,
            "ref": resolved.ref,
            "commit_id": resolved.commit_id,
            "commit_message": resolved.message,
            "committer": resolved.committer,
            "commit_metadata": resolved.commit_metadata,
            "properties": execution.definition.properties,
            "deadline": execution.deadline_at.isoformat().replace("+00:00", "Z"),
        }

    def _dispatch(self, resolved: ResolvedRef, started: builtins.list[tuple[Execution, str, dict[str, Any]]]) -> None:
        """Hand the executor calls to the start pool and return at once."""
        for e, t, p in started:
            self._pool.submit(self._start_one, resolved, e, t, p)

    def _start_one(self, resolved: ResolvedRef, execution: Execution, token: str, properties: dict[str, Any]) -> None:
        request = ExecutionRequest(
            check_id=execution.check_id,
            execution_id=execution.execution_id,
            event=self.event(resolved, execution, token),
            properties=properties,
            secrets=self.secrets,
        )
        try:
            started = EXECUTORS[execution.check_type].start(request)
        except Exception as exc:  # any failure to hand over the job fails the execution
            # Masked whole, then cut: a cut first could split a secret the mask would not know.
            message = self.secrets.mask_cut(str(exc) or exc.__class__.__name__, MAX_ERROR_CHARS)
            log.warning("check %s@%s: executor failed: %s", execution.check_id, resolved.commit_id[:12], message)
            try:
                self.store.mark_start_failed(execution.row_id, execution.execution_id, message)
            except Exception:
                log.exception("check %s: recording the failed start failed; the timeout reaper will end it", execution.check_id)
            return
        link = self.secrets.mask(started.output_url)
        if link and not link.startswith(("http://", "https://")):
            log.warning("check %s: executor log link %r is not http(s); not kept", execution.check_id, link[:100])
            link = None
        self.store.mark_executing(execution.row_id, execution.execution_id, link)
        if started.poll_run_id:
            self.watcher.watch(execution, properties, started.poll_run_id)

    # -- callbacks -----------------------------------------------------------------------------

    def callback(
        self, repository: str, ref: str, check_id: str, token: str | None, body: Any, *, client: str | None = None
    ) -> dict[str, Any]:
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
        result = self.store.callback(repository, commit_id, check_id, token, status, self.mask(metadata), client=client)
        return self._check_json(result)

    # -- merge gate ----------------------------------------------------------------------------

    def decide(self, repository: str, branch: str, commit_id: str, executions: builtins.list[Execution]) -> dict[str, Any]:
        """May ``commit_id`` merge into ``branch``? Every mandatory check must be SUCCESS, and run
        with the definition pinned for this branch (a source's own definition does not count)."""
        mandatory = self.config.mandatory_checks(repository, branch)
        by_id = {e.check_id: e for e in executions}
        checks = []
        reasons = []
        for check in mandatory:
            e = by_id.get(check)
            item: dict[str, Any] = {"id": check, "status": e.status.value if e else None,
                                    "pinned": bool(e and branch in e.definition.pinned_for)}
            checks.append(item)
            if e is None:
                reasons.append({"check": check, "status": None, "reason": f"check {check} has not run for commit {commit_id}"})
            elif branch not in e.definition.pinned_for:
                reasons.append({"check": check, "status": e.status.value,
                                "reason": f"check {check} ran a definition from {e.definition.source or 'the source'}, "
                                          f"not the one {branch} requires; run the checks again"})
            elif e.status is not Status.SUCCESS:
                reasons.append({"check": check, "status": e.status.value, "reason": f"check {check} is {e.status.value}"})
        return {"branch": branch, "mandatory_checks": mandatory, "checks": checks, "mergeable": not reasons,
                "reasons": reasons}

    def merge_status(self, repository: str, commit_id: str, executions: builtins.list[Execution]) -> builtins.list[dict[str, Any]]:
        try:
            branches = self.protected_branches(repository)
        except Exception as exc:  # the page still shows the checks; the answer says why not more
            return [{"branch": None, "mergeable": False, "checks": [], "mandatory_checks": [],
                     "reasons": [{"check": None, "status": None, "reason": f"cannot list branches: {exc}"}]}]
        return [self.decide(repository, b, commit_id, executions) for b in branches]

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
        commit_id = source_ref
        executions = self.store.list(repository, source_ref)
        if not executions:
            try:
                commit_id = self.catalog.resolve(repository, source_ref).commit_id
            except NotFound:
                # An unknown source has no checks. The event's own commit_id is not trusted: anyone
                # can POST an event naming a commit whose checks passed.
                pass
            except Exception as exc:  # fail closed: a merge is never allowed on a guess
                reasons = [{"check": None, "status": None, "reason": f"cannot resolve {source_ref}: {exc}"}]
                return GateDecision(False, {**base, "allowed": False, "reasons": reasons, "message": reasons[0]["reason"]})
            executions = self.store.list(repository, commit_id)
        decision = self.decide(repository, branch, commit_id, executions)
        reasons = decision["reasons"]
        body = {**base, "commit_id": commit_id, "mandatory_checks": decision["mandatory_checks"], "allowed": not reasons}
        if reasons:
            body["reasons"] = reasons
            body["message"] = f"merge into {branch} blocked: " + "; ".join(r["reason"] for r in reasons)
        else:
            body["message"] = f"all {len(decision['mandatory_checks'])} mandatory checks of {branch} passed"
        return GateDecision(not reasons, body)
