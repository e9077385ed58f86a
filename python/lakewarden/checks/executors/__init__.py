"""Executors start a check somewhere else and return; the result arrives later by callback.

Each executor type validates its own ``properties`` (after ``{{ ENV.NAME }}`` templating) so that
a bad definition is refused when the check is triggered, before any state changes.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from lakewarden.checks.config import CheckDefinition, ExecutorEndpoint
from lakewarden.checks.templating import render_env
from lakewarden.errors import BadInput


class ExecutorError(Exception):
    """Calling the executor failed; the execution goes to FAILED with this message."""


@dataclass(frozen=True)
class ExecutionRequest:
    """What an executor gets: the event JSON (including callback URL and token) and properties."""

    check_id: str
    execution_id: str
    event: dict[str, Any]
    properties: dict[str, Any]


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
        clash = sorted(set(own) & executor.bound_keys)
        if clash:
            raise BadInput(
                f"{', '.join(clash)} come(s) from executor {endpoint.name!r} of the server config; remove from the action",
                source=definition.source,
                field=where,
            )
        # The operator's config may read any variable; its values are secrets all the same.
        merged.update(render_env(copy.deepcopy(endpoint.properties), env, prefix="", source="server config",
                                 field=f"executors.{endpoint.name}", rendered=rendered))
    merged.update(render_env(own, env, prefix=env_prefix, source=definition.source, field=where, rendered=rendered))
    executor.validate(merged, source=definition.source, field=where)
    return merged


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
