"""What a check is (:class:`CheckDefinition`, one ``checks:`` entry of an action file or of the
server config) and where it may run (:class:`ExecutorEndpoint`, a named endpoint of the server
config): the types the config parser makes (lakewarden.checks.config) and the executors, the
store and the service use, kept apart from the parser so the executors need not import it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Mapping


@dataclass(frozen=True)
class CheckDefinition:
    """One ``checks:`` entry of an action file, as committed (properties not yet templated)."""

    id: str
    type: str
    properties: dict[str, Any]
    source: str
    action_name: str
    description: str = ""
    timeout: timedelta | None = None
    #: Name of an executor endpoint of the server config (its URL and credentials), or None.
    executor: str | None = None
    #: Protected branches whose head defines this check exactly so (set when triggered); the
    #: merge gate counts an execution for branch B only when B is listed here or it is "config".
    pinned_for: tuple[str, ...] = ()
    #: Defined in the server config (the operator's), not in an action file anyone can commit.
    operator_owned: bool = False

    def to_json(self) -> dict[str, Any]:
        """The definition as stored with each execution, so a retry needs no catalog access."""
        return {
            "id": self.id,
            "type": self.type,
            "properties": self.properties,
            "source": self.source,
            "action_name": self.action_name,
            "description": self.description,
            "timeout_seconds": self.timeout.total_seconds() if self.timeout else None,
            "executor": self.executor,
            "pinned_for": list(self.pinned_for),
            "operator_owned": self.operator_owned,
        }

    def digest_json(self) -> dict[str, Any]:
        """What makes two definitions the same check (where they were read from does not)."""
        data = self.to_json()
        for key in ("source", "pinned_for", "action_name", "operator_owned"):
            data.pop(key)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CheckDefinition":
        timeout = data.get("timeout_seconds")
        return cls(
            id=data["id"],
            type=data["type"],
            properties=dict(data.get("properties") or {}),
            source=data.get("source", ""),
            action_name=data.get("action_name", ""),
            description=data.get("description", ""),
            timeout=timedelta(seconds=timeout) if timeout else None,
            executor=data.get("executor"),
            pinned_for=tuple(data.get("pinned_for") or ()),
            operator_owned=bool(data.get("operator_owned", False)),
        )


@dataclass(frozen=True)
class ExecutorEndpoint:
    """A named executor endpoint of the server config: where a check runs and with which credentials.

    Credentials in the config are the service operator's, so they go only to this endpoint's URL:
    a check uses them by naming the endpoint (``executor: prod-airflow``) and cannot change the URL.
    """

    name: str
    type: str
    properties: dict[str, Any]
    #: Airflow: the DAG ids (globs) action files may start with this endpoint's login; None (the
    #: key absent) allows none. Checks of the server config's ``checks:`` are not limited.
    allowed_dags: tuple[str, ...] | None = None
