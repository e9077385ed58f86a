"""Executors start a check somewhere else and return; the result arrives later by callback.

Each executor type validates its own ``properties`` (after ``{{ ENV.NAME }}`` templating) so that
a bad definition is refused when the check is triggered, before any state changes.
"""

from __future__ import annotations

import copy
import fnmatch
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Protocol

import requests

from lakewarden.checks.definitions import CheckDefinition, ExecutorEndpoint
from lakewarden.checks.templating import render_env
from lakewarden.errors import BadInput

if TYPE_CHECKING:
    from lakewarden.checks.masking import SecretMask

#: At most this much of an executor's answer is read (a hostile executor may answer gigabytes).
ANSWER_READ_BYTES = 64 * 1024
#: At most this much of it (masked) goes into an error.
ANSWER_EXCERPT_CHARS = 1000


class ExecutorError(Exception):
    """Calling the executor failed; the execution goes to FAILED with this message."""


@dataclass(frozen=True)
class ExecutionRequest:
    """What an executor gets: the event JSON (including callback URL and token) and properties."""

    check_id: str
    execution_id: str
    event: dict[str, Any]
    properties: dict[str, Any]
    #: The service's secret mask: answers are masked before they are cut into an error.
    secrets: "SecretMask | None" = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ExecutionStarted:
    """The executor accepted the job; ``output_url`` is where its logs are, when known."""

    output_url: str | None = None
    #: Set when the service itself must watch the job to completion (Airflow ``wait_for_dag``).
    poll_run_id: str | None = None


class Executor(Protocol):
    type_name: str

    def validate(self, properties: Mapping[str, Any], *, source: str, field: str) -> None:
        """Raise :class:`~lakewarden.errors.BadInput` naming the field of a bad property."""
        ...

    #: Properties that carry an endpoint and its credentials: set by the server config's executor
    #: endpoint when a check names one, and then not settable by the action file.
    bound_keys: frozenset[str]
    #: The only properties an action file may set on a check that names a config endpoint; every
    #: other one (also those the endpoint leaves unset) is locked, so an action cannot steer where
    #: the endpoint's credentials go.
    action_keys: frozenset[str]

    def start(self, request: ExecutionRequest) -> ExecutionStarted:
        """Hand the job over; raise :class:`ExecutorError` when that fails."""
        ...


def _registry() -> dict[str, Executor]:
    from lakewarden.checks.executors.airflow import AirflowExecutor
    from lakewarden.checks.executors.webhook import WebhookExecutor

    return {"webhook": WebhookExecutor(), "airflow": AirflowExecutor()}


def prepare_properties(
    definition: CheckDefinition,
    endpoints: Mapping[str, ExecutorEndpoint],
    env: Mapping[str, str],
    env_prefix: str,
    rendered: set[str],
) -> dict[str, Any]:
    """The properties the executor is called with, templated and validated.

    A check that names an executor endpoint (``executor: prod-airflow``) gets the endpoint's URL
    and credentials from the server config and may not set them itself; a check that names none
    gets nothing from the config. So configured credentials only ever go to configured URLs.
    Every value rendered from the environment is added to ``rendered`` (to be masked).
    """
    where = f"checks[{definition.id}].properties"
    executor = EXECUTORS[definition.type]
    own = copy.deepcopy(dict(definition.properties))
    merged: dict[str, Any] = {}
    if definition.executor is not None:
        endpoint = endpoints.get(definition.executor)
        if endpoint is None:
            known = ", ".join(sorted(endpoints)) or "none"
            raise BadInput(
                f"unknown executor {definition.executor!r} (the server config names: {known})",
                source=definition.source,
                field=f"checks[{definition.id}].executor",
            )
        if endpoint.type != definition.type:
            raise BadInput(
                f"executor {endpoint.name!r} is a {endpoint.type} endpoint, the check is {definition.type}",
                source=definition.source,
                field=f"checks[{definition.id}].executor",
            )
        clash = sorted(set(own) - executor.action_keys)
        if clash and not definition.operator_owned:
            raise BadInput(
                f"{', '.join(clash)} come(s) from executor {endpoint.name!r} of the server config; remove from the action"
                f" (an action may set only {', '.join(sorted(executor.action_keys))})",
                source=definition.source,
                field=where,
            )
        dags = endpoint.allowed_dags
        if definition.type == "airflow" and not definition.operator_owned:
            dag_id = own.get("dag_id")
            if dags is None:
                raise BadInput(
                    f"executor {endpoint.name!r} has no allowed_dags in the server config: action files may not start"
                    " DAGs with its login until the operator lists them",
                    source=definition.source,
                    field=f"checks[{definition.id}].executor",
                )
            if not isinstance(dag_id, str) or not any(fnmatch.fnmatchcase(dag_id, d) for d in dags):
                raise BadInput(
                    f"DAG {dag_id!r} is not in allowed_dags of executor {endpoint.name!r} ({', '.join(dags) or 'none'})",
                    source=definition.source,
                    field=f"{where}.dag_id",
                )
        # The operator's config may read any variable; its values are secrets all the same.
        merged.update(render_env(copy.deepcopy(endpoint.properties), env, prefix="", source="server config",
                                 field=f"executors.{endpoint.name}", rendered=rendered))
    merged.update(render_env(own, env, prefix=env_prefix, source=definition.source, field=where, rendered=rendered))
    executor.validate(merged, source=definition.source, field=where)
    return merged


def no_redirect(response: requests.Response, what: str) -> None:
    """Executor calls never follow redirects: the next request would carry the endpoint's
    credentials and the event (with its callback token) to wherever the answer points."""
    if response.is_redirect or 300 <= response.status_code < 400:
        target = response.headers.get("Location", "")
        raise ExecutorError(f"{what} answered HTTP {response.status_code} (a redirect to {target[:200]!r}); "
                            "redirects are not followed: configure the final URL")


def answer_excerpt(response: requests.Response, secrets: "SecretMask | None") -> str:
    """The beginning of an answer for an error message: at most ANSWER_READ_BYTES read, masked
    as a whole, then cut (never cut first: a cut could split a secret the mask would not know)."""
    try:
        raw = response.raw.read(ANSWER_READ_BYTES + 1, decode_content=True) if response.raw is not None else b""
    except Exception:  # the answer broke off: what arrived is enough
        raw = b""
    if not raw and response._content not in (False, None):  # already read (tests, non-streamed)
        raw = response.content[: ANSWER_READ_BYTES + 1]
    truncated = len(raw) > ANSWER_READ_BYTES
    text = raw[:ANSWER_READ_BYTES].decode(response.encoding or "utf-8", errors="replace")
    if secrets is None:
        return text[:ANSWER_EXCERPT_CHARS]
    return secrets.mask_cut(text, ANSWER_EXCERPT_CHARS, truncated=truncated)


def bounded_json(response: requests.Response, limit: int = 1 << 20) -> Any:
    """The JSON of an answer read up to ``limit`` bytes (a hostile server may answer gigabytes);
    ValueError when it is not JSON or longer."""
    raw = response.raw.read(limit + 1, decode_content=True) if response.raw is not None else b""
    if len(raw) > limit:
        raise ValueError("answer too long")
    return json.loads(raw)


def fill_placeholders(template: str, values: Mapping[str, str]) -> str:
    """Replace ``{{ name }}`` placeholders (execution_id, check_id, ...) in an output URL."""
    out = template
    for name, value in values.items():
        for form in (f"{{{{ {name} }}}}", f"{{{{{name}}}}}"):
            out = out.replace(form, value)
    return out


#: Every executor type, by the ``type`` a check definition names. Built last: the executor
#: modules import the helpers above.
EXECUTORS: dict[str, Executor] = _registry()
