"""Recorded contract of the Airflow executor: the exact requests for Airflow 2 and Airflow 3.

A local fake plays Airflow and asserts each request's method, path, auth and body, as the real
REST APIs expect them (Airflow 2.x ``/api/v1`` with basic auth; Airflow 3 ``/api/v2`` with a JWT
from ``POST /auth/token`` and ``logical_date`` in the body). The real Airflow 3 round trip is in
``test_airflow_live.py``.
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

from lakewarden.checks.executors import ExecutionRequest, ExecutorError
from lakewarden.checks.executors.airflow import AirflowExecutor
from lakewarden.errors import BadInput

EVENT = {"event_type": "check", "check_id": "rows", "commit_id": "c" * 64, "callback_url": "http://127.0.0.1:1/cb?token=t", "token": "t"}


class FakeAirflow:
    """Answers like Airflow and records every request as (method, path, headers, body)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.dag_run_status = 200
        #: statuses for the next DAG-run POSTs, in order (then dag_run_status)
        self.dag_run_statuses: list[int] = []
        self.run_state = "running"
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                outer.requests.append(("GET", self.path, dict(self.headers.items()), None))
                data = json.dumps({"dag_run_id": self.path.rsplit("/", 1)[-1], "state": outer.run_state}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw) if raw else None
                outer.requests.append(("POST", self.path, dict(self.headers.items()), body))
                if self.path == "/auth/token":
                    status, answer = 201, {"access_token": "jwt-123"}
                else:
                    status = outer.dag_run_statuses.pop(0) if outer.dag_run_statuses else outer.dag_run_status
                    answer = {"dag_run_id": body["dag_run_id"], "state": "queued"}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def airflow() -> Iterator[FakeAirflow]:
    fake = FakeAirflow()
    yield fake
    fake.close()


def request(properties: dict[str, Any]) -> ExecutionRequest:
    return ExecutionRequest(check_id="rows", execution_id="e" * 32, event=dict(EVENT), properties=properties)


def test_airflow2_v1_basic_auth(airflow: FakeAirflow) -> None:
    props = {"url": airflow.url, "dag_id": "count_rows", "api_version": "v1", "username": "admin", "password": "pw",
             "dag_conf": {"extra": "1", "check_id": "overridden"}}
    started = AirflowExecutor().start(request(props))
    [(method, path, headers, body)] = airflow.requests
    assert (method, path) == ("POST", "/api/v1/dags/count_rows/dagRuns")
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"admin:pw").decode()
    assert headers["Content-Type"] == "application/json"
    run_id = f"lakewarden__rows__{'e' * 32}"
    # lakeFS's shape: dag_conf at the top, the event under lakeFS_event (which dag_conf cannot replace).
    assert body == {"dag_run_id": run_id, "conf": {"extra": "1", "check_id": "overridden", "lakeFS_event": EVENT}}
    assert started.output_url == f"{airflow.url}/dags/count_rows/grid?dag_run_id={run_id}"


def test_airflow3_v2_token_then_dag_run(airflow: FakeAirflow) -> None:
    props = {"url": airflow.url + "/", "dag_id": "count_rows", "username": "admin", "password": "pw"}
    started = AirflowExecutor().start(request(props))
    (m1, p1, _, b1), (m2, p2, h2, b2) = airflow.requests
    assert (m1, p1, b1) == ("POST", "/auth/token", {"username": "admin", "password": "pw"})
    assert (m2, p2) == ("POST", "/api/v2/dags/count_rows/dagRuns")
    assert h2["Authorization"] == "Bearer jwt-123"
    assert b2 == {"dag_run_id": f"lakewarden__rows__{'e' * 32}", "conf": {"lakeFS_event": EVENT}, "logical_date": None}
    assert started.poll_run_id is None  # wait_for_dag not set: the DAG calls back
    assert started.output_url == f"{airflow.url}/dags/count_rows/runs/lakewarden__rows__{'e' * 32}"


def test_static_bearer_token_and_refusal(airflow: FakeAirflow) -> None:
    airflow.dag_run_status = 404
    with pytest.raises(ExecutorError, match="airflow refused the DAG run: HTTP 404"):
        AirflowExecutor().start(request({"url": airflow.url, "dag_id": "missing", "token": "tok"}))
    [(_, path, headers, _)] = airflow.requests
    assert path == "/api/v2/dags/missing/dagRuns" and headers["Authorization"] == "Bearer tok"


def test_wait_for_dag_is_accepted_and_the_run_state_is_polled(airflow: FakeAirflow) -> None:
    props = {"url": airflow.url, "dag_id": "count_rows", "username": "admin", "password": "pw", "wait_for_dag": True}
    executor = AirflowExecutor()
    executor.validate(props, source="f.yaml", field="p")
    started = executor.start(request(props))
    run_id = f"lakewarden__rows__{'e' * 32}"
    assert started.poll_run_id == run_id
    assert executor.run_state(props, run_id) == "running"
    airflow.run_state = "failed"
    assert executor.run_state(props, run_id) == "failed"
    gets = [(m, p, h["Authorization"]) for m, p, h, _ in airflow.requests if m == "GET"]
    assert gets == [("GET", f"/api/v2/dags/count_rows/dagRuns/{run_id}", "Bearer jwt-123")] * 2
    with pytest.raises(BadInput, match="wait_for_dag must be true or false"):
        executor.validate({**props, "wait_for_dag": "yes"}, source="f.yaml", field="p")



def test_a_5xx_is_retried_with_the_same_run_id_and_its_409_means_created(airflow: FakeAirflow, monkeypatch) -> None:
    """Airflow's metadata database busy answers 500; the run may or may not exist. The trigger is
    sent again with the same run id: a 409 then is the first attempt's run, not a refusal."""
    import lakewarden.checks.executors.airflow as module

    monkeypatch.setattr(module, "TRIGGER_RETRY_PAUSES", (0.01, 0.01))
    airflow.dag_run_statuses = [500, 409]
    started = AirflowExecutor().start(request({"url": airflow.url, "dag_id": "count_rows", "token": "tok"}))
    run_id = f"lakewarden__rows__{'e' * 32}"
    assert [body["dag_run_id"] for method, _, _, body in airflow.requests if method == "POST"] == [run_id, run_id]
    assert started.output_url == f"{airflow.url}/dags/count_rows/runs/{run_id}"


def test_a_409_to_the_first_trigger_and_a_lasting_5xx_are_refusals(airflow: FakeAirflow, monkeypatch) -> None:
    import lakewarden.checks.executors.airflow as module

    monkeypatch.setattr(module, "TRIGGER_RETRY_PAUSES", (0.01, 0.01))
    airflow.dag_run_statuses = [409]
    with pytest.raises(ExecutorError, match="airflow refused the DAG run: HTTP 409"):
        AirflowExecutor().start(request({"url": airflow.url, "dag_id": "count_rows", "token": "tok"}))
    assert len(airflow.requests) == 1
    airflow.dag_run_statuses = [503, 503, 503]
    with pytest.raises(ExecutorError, match="airflow refused the DAG run: HTTP 503"):
        AirflowExecutor().start(request({"url": airflow.url, "dag_id": "count_rows", "token": "tok"}))
    assert len(airflow.requests) == 1 + 3
