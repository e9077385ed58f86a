"""No rendered secret leaves its place: not in any API answer, page, log line or stored row; and
credentials of the server config go only to the executor endpoint the config names."""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import quote, quote_plus

import requests
import yaml

from checks_support import REPO, CapturingServer, WebhookReceiver

ACTION_SECRET = "hunter2/Secret+Value=1"
CONFIG_SECRET = "config-only-secret-9876"
ENV = {"LAKEFSACTION_HOOK_TOKEN": ACTION_SECRET, "LAKEWARDEN_PROD_HOOK_PASSWORD": CONFIG_SECRET}


def action(name: str, checks: list[dict]) -> str:
    return yaml.safe_dump({"name": name, "on": {"pre-merge": {"branches": ["main"]}}, "checks": checks})


def forms(secret: str) -> list[str]:
    return [secret, quote(secret, safe=""), quote_plus(secret)]


def test_rendered_secrets_are_masked_everywhere(snapshot, service_factory, tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    with CapturingServer(500) as echo, CapturingServer(202) as prod, WebhookReceiver() as logger:
        logger.mode = "record"
        secret_header = {"Authorization": "Bearer {{ ENV.LAKEFSACTION_HOOK_TOKEN }}"}
        checks = [
            # Answers 500 and echoes headers and query: the error would carry the secret.
            {"id": "echo", "type": "webhook", "properties": {
                "url": echo.url + "/hook", "headers": secret_header,
                "query_params": {"key": "{{ ENV.LAKEFSACTION_HOOK_TOKEN }}"}}},
            # Unreachable: the connection error names the URL with its query string.
            {"id": "unreachable", "type": "webhook", "properties": {
                "url": "http://127.0.0.1:9/x", "timeout": "2s", "query_params": {"key": "{{ ENV.LAKEFSACTION_HOOK_TOKEN }}"}}},
            {"id": "logger", "type": "webhook", "properties": {"url": logger.url, "headers": secret_header}},
            {"id": "via-config", "type": "webhook", "executor": "prod-hook"},
        ]
        commit = snapshot.commit({"_lakefs_actions/checks.yaml": action("secret checks", checks)}, branch="main")
        snapshot.write()
        config = {
            "protected_branches": [{"branch": "main", "mandatory_checks": ["echo", "via-config"]}],
            "executors": {"prod-hook": {"type": "webhook", "url": prod.url + "/prod",
                                        "headers": {"Authorization": "Bearer {{ ENV.LAKEWARDEN_PROD_HOOK_PASSWORD }}"}}},
        }
        live = service_factory(snapshot.directory, config, env=ENV)
        answers = [live.trigger("main")]
        for check in ("echo", "unreachable"):
            failed = live.wait_for("main", check, {"FAILED"})
            assert failed["error"], failed
        assert "HTTP 500" in live.checks("main")["echo"]["error"]
        # The secrets did go where they belong.
        assert f"Bearer {ACTION_SECRET}" in echo.all_text()
        live.wait_for("main", "via-config", {"EXECUTING"})
        assert f"Bearer {CONFIG_SECRET}" in prod.all_text()

        # An executor that writes the secret into its log and its result metadata.
        event = logger.events(1)[0]
        assert logger.received[0].headers["Authorization"] == f"Bearer {ACTION_SECRET}"
        answers.append(requests.post(event["output_url"], data=f"token was {ACTION_SECRET}\n".encode(), timeout=10))
        answers.append(requests.post(event["callback_url"], timeout=10,
                                     json={"status": "SUCCESS", "metadata": {"seen": ACTION_SECRET}}))
        assert answers[-1].status_code == 200
        answers.append(requests.post(event["callback_url"], json={"status": "SUCCESS"}, timeout=10))  # rejected

        base = live.checks_url("main")
        for path in ["", "/echo", "/unreachable", "/logger", "/via-config", "/logger/output", "/echo/output"]:
            answers.append(requests.get(base + path, timeout=10))
        for path in ["/api/v1/recent", "/api/v1/rejections", "/api/v1/openapi.json", "/",
                     f"/ui/repositories/{REPO}/refs/{commit}", "/ui/assets/commit.js"]:
            answers.append(requests.get(live.url + path, timeout=10))
        answers.append(live.gate("main", commit))
        answers.append(live.retry("main", "echo"))
        live.wait_for("main", "echo", {"FAILED"})
        answers.append(requests.get(base + "/echo", timeout=10))

        assert "***" in requests.get(base + "/logger/output", timeout=10).text
        assert requests.get(base + "/logger", timeout=10).json()["metadata"] == {"seen": "***"}
        shown = "\n".join(f"{a.status_code} {a.headers} {a.text}" for a in answers)
        logged = "\n".join(r.getMessage() for r in caplog.records)
        stored = b"".join(p.read_bytes() for p in tmp_path.glob("state-*/checks.sqlite*"))
        assert stored  # the store was written
        for secret in (ACTION_SECRET, CONFIG_SECRET):
            for form in forms(secret):
                assert form not in shown, f"{form!r} in an API answer or page"
                assert form not in logged, f"{form!r} in the service log"
                assert form.encode() not in stored, f"{form!r} in the state store"


def test_config_credentials_never_go_to_a_url_an_action_chose(snapshot, service_factory) -> None:
    with CapturingServer(202) as prod, CapturingServer(202) as elsewhere:
        endpoints = {
            "prod-hook": {"type": "webhook", "url": prod.url + "/hook",
                          "headers": {"Authorization": "Bearer {{ ENV.LAKEWARDEN_PROD_HOOK_PASSWORD }}"}},
            "prod-airflow": {"type": "airflow", "url": prod.url, "username": "checks",
                             "password": "{{ ENV.LAKEWARDEN_PROD_HOOK_PASSWORD }}"},
        }
        cases = {
            # Naming the endpoint but choosing the URL: refused before anything is sent.
            "steal-url": ({"id": "a", "type": "webhook", "executor": "prod-hook", "properties": {"url": elsewhere.url}},
                          "url come(s) from executor 'prod-hook' of the server config"),
            "steal-airflow": ({"id": "b", "type": "airflow", "executor": "prod-airflow",
                               "properties": {"url": elsewhere.url, "dag_id": "d"}}, "url come(s) from executor 'prod-airflow'"),
            "wrong-type": ({"id": "c", "type": "airflow", "executor": "prod-hook", "properties": {"dag_id": "d"}},
                           "executor 'prod-hook' is a webhook endpoint"),
            "unknown": ({"id": "d", "type": "webhook", "executor": "nope"}, "unknown executor 'nope'"),
            # Its own URL and no endpoint: nothing from the config is merged in.
            "own-airflow": ({"id": "e", "type": "airflow", "properties": {"url": elsewhere.url, "dag_id": "d"}},
                            "airflow needs username and password, or token"),
        }
        for branch, (check, _) in cases.items():
            snapshot.commit({"_lakefs_actions/c.yaml": action("stealing checks", [check])}, branch=branch)
        own_hook = {"id": "f", "type": "webhook", "properties": {"url": elsewhere.url + "/own"}}
        snapshot.commit({"_lakefs_actions/c.yaml": action("own checks", [own_hook])}, branch="own-hook")
        snapshot.write()
        live = service_factory(snapshot.directory, {"executors": endpoints}, env=ENV)
        for branch, (_, reason) in cases.items():
            answer = live.trigger(branch)
            assert answer.status_code == 400, (branch, answer.text)
            assert reason in answer.json()["error"], (branch, answer.text)
            assert live.checks(branch) == {}
        assert live.trigger("own-hook").status_code == 202
        live.wait_for("own-hook", "f", {"EXECUTING"})
        assert "POST /own" in elsewhere.all_text()
        assert CONFIG_SECRET not in elsewhere.all_text()
        assert prod.requests == []
