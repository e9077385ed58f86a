"""The ``airflow`` executor: trigger a DAG run whose ``conf`` is the check event.

Properties: ``url`` (Airflow base URL), ``dag_id``, ``api_version`` (``v2``, Airflow 3, default;
``v1``, Airflow 2), ``username``/``password`` (v1: HTTP basic auth; v2: exchanged for a bearer
token at ``POST /auth/token``), or ``token`` (a bearer token used as is), ``dag_conf`` (conf keys
at the top level), ``wait_for_dag`` (lakeFS's: poll the run and complete the check from its final
state when the DAG does not call back), ``timeout`` (HTTP, default 30s), ``output_url`` (override
of the link to the run in the Airflow UI).

A DAG run is triggered again, twice at most, after a 5xx answer or none (the run id is the
execution's, so Airflow answers 409 to a second attempt whose first one created the run, and that
409 counts as created); any other refusal fails the execution at once.

The conf is lakeFS's shape: ``{**dag_conf, "lakeFS_event": event}``, so a DAG written for a lakeFS
Airflow hook reads the event where it expects it.
"""

from __future__ import annotations

import time
from typing import Any, Mapping
from urllib.parse import quote

import requests

from lakewarden.durations import parse_duration
from lakewarden.checks.executors import (
    ExecutionRequest,
    ExecutionStarted,
    ExecutorError,
    answer_excerpt,
    bounded_json,
    fill_placeholders,
    no_redirect,
)
from lakewarden.checks.executors.webhook import check_url, event_placeholders
from lakewarden.errors import BadInput

_KEYS = {
    "url", "dag_id", "api_version", "username", "password", "token", "dag_conf", "timeout", "output_url", "wait_for_dag",
}

#: Pauses (seconds) before triggering a DAG run again after a 5xx or a lost answer: three attempts.
TRIGGER_RETRY_PAUSES = (0.5, 2.0)

#: Airflow DAG run states that end a run, and the check status each means.
FINAL_STATES = {"success": "SUCCESS", "failed": "FAILED"}


def dag_run_id(request: ExecutionRequest) -> str:
    """Unique per execution, and within Airflow's default allowed run-id characters."""
    return f"lakewarden__{request.check_id}__{request.execution_id}"


def dag_conf(properties: Mapping[str, Any], event: Mapping[str, Any]) -> dict[str, Any]:
    """The DAG run's conf as lakeFS builds it: ``dag_conf`` at the top, the event under lakeFS_event."""
    return {**dict(properties.get("dag_conf") or {}), "lakeFS_event": dict(event)}


class AirflowExecutor:
    type_name = "airflow"
    bound_keys = frozenset({"url", "username", "password", "token", "api_version"})
    #: With a config endpoint, the action names the DAG (which must be in the endpoint's
    #: allowed_dags), its conf, and how the run is followed; never where or as whom.
    action_keys = frozenset({"dag_id", "dag_conf", "wait_for_dag", "timeout", "output_url"})

    def validate(self, properties: Mapping[str, Any], *, source: str, field: str) -> None:
        unknown = set(properties) - _KEYS
        if unknown:
            raise BadInput(f"unknown airflow properties {sorted(unknown)}", source=source, field=field)
        for key in ("url", "dag_id"):
            if not properties.get(key):
                raise BadInput(f"airflow needs {key}", source=source, field=f"{field}.{key}")
        check_url(properties["url"], source=source, field=f"{field}.url")
        if not isinstance(properties["dag_id"], str):
            raise BadInput("dag_id must be a string", source=source, field=f"{field}.dag_id")
        version = properties.get("api_version", "v2")
        if version not in ("v1", "v2"):
            raise BadInput(f"api_version must be v1 or v2, got {version!r}", source=source, field=f"{field}.api_version")
        has_password = properties.get("username") is not None and properties.get("password") is not None
        if not has_password and not properties.get("token"):
            raise BadInput("airflow needs username and password, or token", source=source, field=field)
        if "dag_conf" in properties and not isinstance(properties["dag_conf"], dict):
            raise BadInput("dag_conf must be a mapping", source=source, field=f"{field}.dag_conf")
        if "timeout" in properties:
            parse_duration(properties["timeout"], source=source, field=f"{field}.timeout")
        if not isinstance(properties.get("wait_for_dag", False), bool):
            raise BadInput("wait_for_dag must be true or false", source=source, field=f"{field}.wait_for_dag")

    def _session(self, p: Mapping[str, Any], base: str, timeout: float, secrets: Any = None) -> requests.Session:
        session = requests.Session()
        if p.get("token"):
            session.headers["Authorization"] = f"Bearer {p['token']}"
        elif p.get("api_version", "v2") == "v1":
            session.auth = (str(p["username"]), str(p["password"]))
        else:
            try:
                answer = session.post(
                    f"{base}/auth/token",
                    json={"username": str(p["username"]), "password": str(p["password"])},
                    timeout=timeout,
                    allow_redirects=False,
                    stream=True,
                )
            except requests.RequestException as exc:
                session.close()
                raise ExecutorError(f"airflow {base} unreachable: {exc.__class__.__name__}: {exc}") from None
            with answer:
                try:
                    no_redirect(answer, "airflow /auth/token")
                    if not 200 <= answer.status_code < 300:
                        raise ExecutorError(f"airflow refused the login: HTTP {answer.status_code}: "
                                            f"{answer_excerpt(answer, secrets)}")
                    try:
                        token = bounded_json(answer)["access_token"]
                    except (ValueError, KeyError, TypeError, requests.RequestException):
                        raise ExecutorError("airflow /auth/token answered without access_token") from None
                except ExecutorError:
                    session.close()
                    raise
            session.headers["Authorization"] = f"Bearer {token}"
        return session

    def start(self, request: ExecutionRequest) -> ExecutionStarted:
        p = request.properties
        base = str(p["url"]).rstrip("/")
        version = p.get("api_version", "v2")
        timeout = parse_duration(p.get("timeout", "30s")).total_seconds()
        run_id = dag_run_id(request)
        body: dict[str, Any] = {"dag_run_id": run_id, "conf": dag_conf(p, request.event)}
        if version == "v2":
            body["logical_date"] = None  # required in Airflow 3; null means "not data-interval bound"
        dag = quote(str(p["dag_id"]), safe="")
        with self._session(p, base, timeout, request.secrets) as session:
            self._trigger(session, base, f"/api/{version}/dags/{dag}/dagRuns", body, timeout, request.secrets)
        if p.get("output_url"):
            output_url = fill_placeholders(str(p["output_url"]), {**event_placeholders(request), "dag_run_id": run_id})
        elif version == "v2":
            output_url = f"{base}/dags/{dag}/runs/{quote(run_id, safe='')}"
        else:
            output_url = f"{base}/dags/{dag}/grid?dag_run_id={quote(run_id, safe='')}"
        return ExecutionStarted(output_url=output_url, poll_run_id=run_id if p.get("wait_for_dag") else None)

    def _trigger(self, session: requests.Session, base: str, path: str, body: Mapping[str, Any], timeout: float, secrets: Any) -> None:
        """POST the DAG run, again after an answer that may not mean "not created": a 5xx (Airflow's
        metadata database busy answered 500 "Database error" in a test once) or a lost answer.
        The run id is this execution's, so a retry cannot start a second run: Airflow answers
        409 to a run id it has, and after such an attempt that 409 is the first attempt's run.
        A 409 to the first attempt is a refusal (the id is taken by a run this did not start)."""
        for attempt, pause in enumerate((*TRIGGER_RETRY_PAUSES, None)):
            try:
                answer = session.post(base + path, json=body, timeout=timeout, allow_redirects=False, stream=True)
            except requests.RequestException as exc:
                if pause is None:
                    raise ExecutorError(f"airflow {base} unreachable: {exc.__class__.__name__}: {exc}") from None
                time.sleep(pause)
                continue
            with answer:  # read (bounded) while the session's connection is open
                no_redirect(answer, "airflow")
                if 200 <= answer.status_code < 300 or (answer.status_code == 409 and attempt > 0):
                    return
                if answer.status_code < 500 or pause is None:
                    raise ExecutorError(f"airflow refused the DAG run: HTTP {answer.status_code}: "
                                        f"{answer_excerpt(answer, secrets)}")
            time.sleep(pause)

    def run_state(self, properties: Mapping[str, Any], run_id: str, secrets: Any = None) -> str:
        """The state of a DAG run (``queued``, ``running``, ``success``, ``failed``, ...)."""
        p = properties
        base = str(p["url"]).rstrip("/")
        version = p.get("api_version", "v2")
        timeout = parse_duration(p.get("timeout", "30s")).total_seconds()
        dag = quote(str(p["dag_id"]), safe="")
        with self._session(p, base, timeout, secrets) as session:
            try:
                answer = session.get(f"{base}/api/{version}/dags/{dag}/dagRuns/{quote(run_id, safe='')}", timeout=timeout,
                                     allow_redirects=False, stream=True)
            except requests.RequestException as exc:
                raise ExecutorError(f"airflow {base} unreachable: {exc.__class__.__name__}: {exc}") from None
            with answer:  # read (bounded) while the session's connection is open
                no_redirect(answer, "airflow")
                if answer.status_code != 200:
                    raise ExecutorError(f"airflow refused the DAG run state: HTTP {answer.status_code}: "
                                        f"{answer_excerpt(answer, secrets)}")
                try:
                    return str(bounded_json(answer)["state"])
                except (ValueError, KeyError, TypeError, requests.RequestException):
                    raise ExecutorError("airflow answered a DAG run without state") from None
