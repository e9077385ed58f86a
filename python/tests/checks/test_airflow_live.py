"""A real Apache Airflow 3 runs a check: DAG run triggered with the event as conf, calls back.

The Airflow processes (api-server, scheduler, dag-processor) run from ``.venv-airflow`` (created by
``scripts/setup-airflow.sh`` when missing), on 127.0.0.1 only, with AIRFLOW_HOME in a tmp dir;
the fixture kills their process groups at the end, whatever happens.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Iterator

import pytest
import requests

REPO_ROOT = Path(__file__).resolve().parents[3]
#: The Airflow installation: $AIRFLOW_VENV, else the checkout's .venv-airflow (setup-airflow.sh).
AIRFLOW_VENV = Path(os.environ.get("AIRFLOW_VENV") or REPO_ROOT / ".venv-airflow")
DAG_ID = "lakewarden_row_count"
QUIET_DAG_ID = "lakewarden_quiet"
USER, PASSWORD = "checks", "airflow-test-password"

pytestmark = pytest.mark.airflow

# The DAG validates something real: the number of data rows of a CSV object at the checked commit,
# found through the snapshot's tables and read from the storage namespace the event names.
DAG_SOURCE = textwrap.dedent(
    '''
    import json, urllib.request
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    import pendulum
    from airflow.sdk import dag, get_current_context, task


    def rows_of(path):
        return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


    @dag(dag_id="lakewarden_row_count", schedule=None, start_date=pendulum.datetime(2024, 1, 1), catchup=False)
    def row_count():
        @task
        def count_rows():
            # lakeFS's conf: dag_conf at the top, the event under lakeFS_event.
            props = get_current_context()["dag_run"].conf
            event = props["lakeFS_event"]
            snapshot = Path(props["snapshot_dir"])
            commit = next(c for c in rows_of(snapshot / "commits.jsonl") if c["commit_id"] == event["source_ref"])
            ranges = {m["range_id"] for m in rows_of(snapshot / "metaranges.jsonl") if m["meta_range_id"] == commit["meta_range_id"]}
            entry = next(r for r in rows_of(snapshot / "ranges.jsonl") if r["range_id"] in ranges and r["key"] == props["csv_key"])
            namespace = unquote(urlparse(event["storage_namespace"]).path)
            lines = (Path(namespace) / entry["address"]).read_text().splitlines()
            rows = len([line for line in lines[1:] if line.strip()])
            status = "SUCCESS" if rows >= int(props["min_rows"]) else "FAILED"
            log = f"{props['csv_key']} at {event['source_ref'][:12]}: {rows} rows, at least {props['min_rows']} wanted\\n"
            upload = urllib.request.Request(event["output_url"], data=log.encode(), method="POST")
            with urllib.request.urlopen(upload, timeout=30) as answer:
                assert answer.status == 200, answer.status
            body = json.dumps({"status": status, "metadata": {"rows": str(rows), "min_rows": str(props["min_rows"])}})
            request = urllib.request.Request(
                event["callback_url"], data=body.encode(), method="POST", headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=30) as answer:
                assert answer.status == 200, answer.status
            return rows

        count_rows()


    row_count()


    @dag(dag_id="lakewarden_quiet", schedule=None, start_date=pendulum.datetime(2024, 1, 1), catchup=False)
    def quiet():
        # A DAG written for lakeFS's wait_for_dag: it never calls back; its run state is the result.
        @task
        def judge():
            props = get_current_context()["dag_run"].conf
            assert props["lakeFS_event"]["check_id"] == "quiet-dag"
            if props.get("fail"):
                raise RuntimeError("asked to fail")

        judge()


    quiet()
    '''
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_groups(procs: list[subprocess.Popen[bytes]], grace: float = 10.0) -> None:
    """SIGTERM every process group at once, then SIGKILL what is left after ``grace`` seconds
    (the groups may hold task runners even if a leader exited): the shutdowns overlap, so
    stopping costs the slowest one, not their sum."""
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=15)


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not (AIRFLOW_VENV / "bin" / "airflow").exists():
        subprocess.run([str(REPO_ROOT / "scripts" / "setup-airflow.sh")], check=True, timeout=900)
    home = tmp_path_factory.mktemp("airflow-home")
    dags = home / "dags"
    dags.mkdir()
    (dags / "row_count.py").write_text(DAG_SOURCE)
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({USER: PASSWORD}))
    port = free_port()
    env = {
        **os.environ,
        "PATH": f"{AIRFLOW_VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__API_AUTH__JWT_SECRET": "lakewarden-test-jwt-secret-0123456789abcdef",
        "AIRFLOW__API__SECRET_KEY": "lakewarden-test-secret-key",
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "no_proxy": "*",
    }
    env.pop("VIRTUAL_ENV", None)
    subprocess.run(["airflow", "db", "migrate"], env=env, check=True, timeout=300, capture_output=True)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for name, cmd in [
            ("api-server", ["airflow", "api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]),
            ("scheduler", ["airflow", "scheduler", "--skip-serve-logs"]),
            ("dag-processor", ["airflow", "dag-processor"]),
        ]:
            log = open(home / f"{name}.log", "wb")
            procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            log.close()
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        token = None
        while time.monotonic() < deadline:
            for proc in procs:
                assert proc.poll() is None, f"airflow process exited: {proc.args}; logs in {home}"
            try:
                answer = requests.post(f"{base}/auth/token", json={"username": USER, "password": PASSWORD}, timeout=5)
                if answer.status_code in (200, 201):
                    token = answer.json()["access_token"]
                    dag = requests.get(f"{base}/api/v2/dags/{DAG_ID}", headers={"Authorization": f"Bearer {token}"}, timeout=5)
                    if dag.status_code == 200 and not dag.json().get("is_paused"):
                        break
            except requests.RequestException:
                pass
            time.sleep(0.5)
        else:
            pytest.fail(f"airflow did not serve DAG {DAG_ID} within 120s; logs in {home}")
        yield base
    finally:
        stop_groups(procs)


def test_airflow3_dag_run_counts_rows_and_calls_back(airflow: str, snapshot, service_factory) -> None:
    def action(min_rows: int, *, quiet_fail: bool | None = None) -> str:
        quiet = ""
        if quiet_fail is not None:
            quiet = (
                "  - id: quiet-dag\n"
                "    type: airflow\n"
                "    executor: airflow\n"
                "    timeout: 2m\n"
                "    properties:\n"
                f"      dag_id: {QUIET_DAG_ID}\n"
                "      wait_for_dag: true\n"
                f"      dag_conf: {{fail: {str(quiet_fail).lower()}}}\n"
            )
        return textwrap.dedent(
            f"""
            name: data quality
            on:
              pre-merge:
                branches: [main]
            checks:
              - id: row-count
                type: airflow
                executor: airflow
                description: the prices table has enough rows
                timeout: 2m
                properties:
                  dag_id: {DAG_ID}
                  dag_conf: {{snapshot_dir: "{snapshot.directory}", csv_key: data/prices.csv, min_rows: {min_rows}}}
            """
        ) + quiet

    main = snapshot.commit({"_lakefs_actions/quality.yaml": action(3), "data/prices.csv": "sku,price\na,1\nb,2\nc,3\n"},
                           branch="main")
    good = snapshot.commit(
        {"_lakefs_actions/quality.yaml": action(3, quiet_fail=False), "data/prices.csv": "sku,price\na,1\nb,2\nc,3\n"},
        parents=[main], branch="feature",
    )
    # The broken branch lowers nothing: it asks for 5 rows, but main's pinned definition (3) runs.
    bad = snapshot.commit(
        {"_lakefs_actions/quality.yaml": action(5, quiet_fail=True), "data/prices.csv": "sku,price\na,1\n"},
        parents=[main], branch="broken",
    )
    snapshot.write()
    config = {
        "protected_branches": [{"branch": "main", "mandatory_checks": ["row-count"]}],
        "executors": {
            "airflow": {"url": airflow, "username": USER, "password": "{{ ENV.AIRFLOW_TEST_PASSWORD }}",
                        "allowed_dags": [DAG_ID, QUIET_DAG_ID]}
        },
        "airflow_poll_interval": "1s",
    }
    live = service_factory(snapshot.directory, config, env={"AIRFLOW_TEST_PASSWORD": PASSWORD})

    # One DAG run request at a time: the test's Airflow keeps its metadata in SQLite, whose API
    # server answers concurrent writes with "Database error" (a limit of this Airflow setup).
    for ref in ("feature", "broken"):
        for check, dag in (("row-count", DAG_ID), ("quiet-dag", QUIET_DAG_ID)):
            answer = live.trigger(ref, check)
            assert answer.status_code == 202, answer.text
            started = live.wait_for(ref, check, {"EXECUTING", "SUCCESS", "FAILED"}, timeout=30)
            assert started["output_url"].startswith(f"{airflow}/dags/{dag}/runs/lakewarden__{check}__"), started

    passed = live.wait_for("feature", "row-count", {"SUCCESS", "FAILED"}, timeout=90)
    assert passed["status"] == "SUCCESS" and passed["metadata"] == {"rows": "3", "min_rows": "3"}
    failed = live.wait_for("broken", "row-count", {"SUCCESS", "FAILED"}, timeout=90)
    assert failed["status"] == "FAILED" and failed["metadata"] == {"rows": "1", "min_rows": "3"}
    log = requests.get(f"{live.checks_url(good)}/row-count/output", timeout=10).text
    assert log == f"data/prices.csv at {good[:12]}: 3 rows, at least 3 wanted\n"
    assert live.gate("main", good).status_code == 200
    assert live.gate("main", bad).status_code == 412

    # wait_for_dag: the DAGs never call back; the service completes the checks from the run state.
    quiet_ok = live.wait_for("feature", "quiet-dag", {"SUCCESS", "FAILED", "LOST"}, timeout=120)
    assert quiet_ok["status"] == "SUCCESS" and quiet_ok["metadata"]["dag_run_state"] == "success"
    quiet_bad = live.wait_for("broken", "quiet-dag", {"SUCCESS", "FAILED", "LOST"}, timeout=120)
    assert quiet_bad["status"] == "FAILED" and quiet_bad["metadata"]["dag_run_state"] == "failed"
