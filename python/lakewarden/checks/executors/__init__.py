"""Executors start a check somewhere else and return; the result arrives later by callback.

Each executor type validates its own ``properties`` (after ``{{ ENV.NAME }}`` templating) so that
a bad definition is refused when the check is triggered, before any state changes.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from lakewarden.checks.config import CheckDefinition
from lakewarden.checks.templating import render_env


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


class Executor(Protocol):
    type_name: str

    def validate(self, properties: Mapping[str, Any], *, source: str, field: str) -> None:
        """Raise :class:`~lakewarden.errors.BadInput` naming the field of a bad property."""
        ...

    def start(self, request: ExecutionRequest) -> ExecutionStarted:
        """Hand the job over; raise :class:`ExecutorError` when that fails."""
        ...


def _registry() -> dict[str, Executor]:
    from lakewarden.checks.executors.airflow import AirflowExecutor
    from lakewarden.checks.executors.webhook import WebhookExecutor

    return {"webhook": WebhookExecutor(), "airflow": AirflowExecutor()}


def prepare_properties(
    definition: CheckDefinition,
    defaults: Mapping[str, Mapping[str, Any]],
    env: Mapping[str, str],
    env_prefix: str,
) -> dict[str, Any]:
    """The check's properties over the config's defaults for its type, templated and validated."""
    merged: dict[str, Any] = copy.deepcopy(dict(defaults.get(definition.type, {})))
    merged.update(copy.deepcopy(definition.properties))
    where = f"checks[{definition.id}].properties"
    rendered = render_env(merged, env, prefix=env_prefix, source=definition.source, field=where)
    EXECUTORS[definition.type].validate(rendered, source=definition.source, field=where)
    return dict(rendered)


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
