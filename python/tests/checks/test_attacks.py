"""The service probed as an attacker and as a careless client would (issue 19): one test per
finding, each failing before the fix. The 2,000-socket load test is ``test_connection_load.py``,
the random-secret property tests ``test_mask_property.py`` and ``test_secrets_e2e_property.py``."""

from __future__ import annotations

import json
import logging
import os
import socket
import stat
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
import requests
import yaml

from checks_support import API_TOKEN, REPO, CapturingServer, WebhookReceiver, webhook_actions
from lakewarden.checks.connections import ConnectionLimits

PROTECT = {"protected_branches": [{"branch": "main", "mandatory_checks": ["row-count"]}]}


def action(checks: list[dict[str, Any]], name: str = "attack checks") -> str:
    return yaml.safe_dump({"name": name, "on": {"pre-merge": {"branches": ["main"]}}, "checks": checks})


def everything_shown(live, refs: list[str], extra: list[requests.Response] = ()) -> str:
    """Every answer a reader without a token gets about ``refs``: lists, shows, logs, pages."""
    out = [f"{a.status_code} {a.text}" for a in extra]
    for ref in refs:
        listing = requests.get(live.checks_url(ref), timeout=10)
        out.append(listing.text)
        for check in listing.json().get("checks", []):
            out.append(requests.get(f"{live.checks_url(ref)}/{check['id']}", timeout=10).text)
            out.append(requests.get(f"{live.checks_url(ref)}/{check['id']}/output", timeout=10).text)
    for path in ("/api/v1/recent", "/api/v1/rejections"):
        out.append(requests.get(live.url + path, timeout=10).text)
    return "\n".join(out)


def stored_bytes(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.rglob("*.sqlite*") if p.is_file())


def read_until_closed(sock: socket.socket, limit: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes (or ``limit`` seconds); and when it closed."""
    sock.settimeout(0.2)
    data, started = b"", time.monotonic()
    while time.monotonic() - started < limit:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data, time.monotonic() - started


# -- 1: connections an attacker cannot exhaust ------------------------------------------------------


def test_1_slow_heads_and_bodies_are_cut_at_a_total_deadline_and_idle_sockets_fill_nothing(
    snapshot, service_factory
) -> None:
    snapshot.commit({}, branch="main")
    limits = ConnectionLimits(header_timeout=1.5, body_timeout=1.5, per_client_pending=20, max_pending=40, grace=0.2)
    live = service_factory(snapshot.write(), PROTECT, limits=limits)
    host, port = urlsplit(live.url).hostname, urlsplit(live.url).port

    def trickle(prefix: bytes, rest: bytes, results: list) -> None:
        with socket.create_connection((host, port), timeout=10) as sock:
            sock.sendall(prefix)
            started = time.monotonic()
            for byte in rest:  # one byte every 0.3 s: a per-byte timeout would never fire
                try:
                    sock.sendall(bytes([byte]))
                except OSError:
                    break
                time.sleep(0.3)
                sock.setblocking(False)
                try:
                    if sock.recv(65536, socket.MSG_PEEK) is not None:
                        break
                except (BlockingIOError, OSError):
                    pass
                finally:
                    sock.setblocking(True)
            answer, _ = read_until_closed(sock, 3)
            results.append((time.monotonic() - started, answer))

    head_results: list = []
    body_results: list = []
    slow_head = threading.Thread(target=trickle, args=(b"G", b"ET /api/v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n", head_results))
    body = json.dumps({"repository_id": REPO, "branch_id": "main", "source_ref": "x" * 40}).encode()
    slow_body = threading.Thread(target=trickle, args=(
        b"POST /api/v1/hooks/pre-merge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body), body, body_results))
    # 200 idle sockets from this client (ten times its pending cap): they must not fill anything.
    idle = [socket.create_connection((host, port), timeout=10) for _ in range(200)]
    try:
        slow_head.start()
        slow_body.start()
        for _ in range(10):
            assert requests.get(f"{live.url}/api/v1/healthz", timeout=5).status_code == 200
            assert live.gate("main", "x" * 40).status_code == 412
            time.sleep(0.1)
        slow_head.join(15)
        slow_body.join(15)
    finally:
        for sock in idle:
            sock.close()
    [(head_took, head_answer)] = head_results
    [(body_took, body_answer)] = body_results
    assert head_took < 4, "a head sent a byte at a time was not cut at the header deadline"
    assert head_answer.startswith(b"HTTP/1.1 408") and b'"error"' in head_answer, head_answer[:200]
    assert body_took < 4, "a body sent a byte at a time was not cut at the body deadline"
    assert body_answer.startswith(b"HTTP/1.1 408") and b"not received within" in body_answer, body_answer[:200]
    assert live.server.guard.counts["evicted"] >= 150
    assert live.server.guard.counts["header_timeouts"] >= 1


# -- 2: a secret in the URL path of a check, in requests' spelling -------------------------------------


@pytest.mark.parametrize("secret", ["odd secret!value/42", "p^ss/word", "a|b:c", "x{y}+z="])
def test_2_a_secret_in_the_url_path_is_masked_in_answers_store_and_log(
    secret, snapshot, service_factory, tmp_path, caplog
) -> None:
    caplog.set_level(logging.DEBUG)
    with CapturingServer(500) as echo:
        checks = [
            {"id": "path", "type": "webhook", "properties": {"url": echo.url + "/hook/{{ ENV.LAKEFSACTION_P }}/run"}},
            {"id": "gone", "type": "webhook", "properties": {"url": "http://127.0.0.1:9/{{ ENV.LAKEFSACTION_P }}",
                                                            "timeout": "2s"}},
        ]
        commit = snapshot.commit({"_lakefs_actions/c.yaml": action(checks)}, branch="main")
        live = service_factory(snapshot.write(), env={"LAKEFSACTION_P": secret})
        live.trigger("main")
        for check in ("path", "gone"):
            assert live.wait_for("main", check, {"FAILED"})["error"]
        sent = echo.all_text()
        assert "/hook/" in sent and secret not in sent  # the executor did get the secret, encoded
        shown = everything_shown(live, ["main", commit])
        logged = "\n".join(r.getMessage() for r in caplog.records)
        stored = stored_bytes(tmp_path)
        encoded = requests.utils.requote_uri(quote(secret, safe="!#$&'()*+,/:;=?@[]~"))
        for form in {secret, encoded, quote(secret, safe=""), quote(secret)}:
            assert form not in shown and form not in logged and form.encode() not in stored, form


# -- 3: an error is masked before it is cut ------------------------------------------------------------


def test_3_an_executor_answer_is_masked_before_it_is_cut(snapshot, service_factory) -> None:
    secret = "Straddle-SECRET-0123456789abcdef"

    class Echo(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = ("x" * 290 + secret + "y" * 5000).encode()  # the secret straddles character 300
            self.send_response(500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        snapshot.commit({"_lakefs_actions/c.yaml": action([
            {"id": "echo", "type": "webhook", "properties": {"url": url}}])}, branch="main")
        live = service_factory(snapshot.write(), env={"LAKEFSACTION_TOKEN": secret})
        live.trigger("main")
        error = live.wait_for("main", "echo", {"FAILED"})["error"]
    finally:
        server.shutdown()
        server.server_close()
    assert "HTTP 500" in error and "***" in error
    assert secret[:4] not in error, error


# -- 4 and 5: log appends and restarts ---------------------------------------------------------------------


def test_4_and_5_a_secret_split_across_log_appends_and_echoed_after_a_restart_is_never_stored(
    snapshot, service_factory, tmp_path
) -> None:
    secret = "ciTOKEN-9f8e7d6c5b4a"
    env = {"LAKEFSACTION_CI_TOKEN": secret}
    db = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    with WebhookReceiver() as receiver:
        receiver.mode = "record"
        commit = snapshot.commit({"_lakefs_actions/c.yaml": action([
            {"id": "ci", "type": "webhook", "properties": {"url": receiver.url}},
            {"id": "ci2", "type": "webhook", "properties": {"url": receiver.url}}])}, branch="main")
        first = service_factory(snapshot.write(), env=env, db_url=db)
        first.trigger("main")
        events = {e["check_id"]: e for e in receiver.events(2)}
        out = events["ci"]["output_url"]
        assert requests.post(out, data=b"token is ...ciTOKEN-9f8e", timeout=10).status_code == 200
        assert secret[:10].encode() not in stored_bytes(tmp_path)  # the beginning is held back
        assert requests.post(out, data=b"7d6c5b4a... done\n", timeout=10).status_code == 200
        first.stop()

        # After a restart the mask knows every LAKEFSACTION_ value before any check renders it.
        second = service_factory(snapshot.directory, env=env, db_url=db)
        answer = requests.post(events["ci2"]["callback_url"].replace(first.url, second.url), timeout=10,
                               json={"status": "SUCCESS", "metadata": {"echo": secret, "url": quote(secret)}})
        assert answer.status_code == 200 and secret not in answer.text
        shown = everything_shown(second, ["main", commit], [answer])
        assert "token is ...***... done" in shown
    assert secret not in shown and secret[:10] not in shown and secret[-10:] not in shown
    stored = stored_bytes(tmp_path)
    assert secret[:10].encode() not in stored and secret[-10:].encode() not in stored


# -- 6: credentials never follow a redirect; locked endpoint fields; allowed DAGs -----------------------


class Redirector:
    """Answers every request 307 to ``target`` (what a compromised executor endpoint could do)."""

    def __init__(self, target: str) -> None:
        outer = self
        self.hits = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                outer.hits += 1
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(307)
                self.send_header("Location", target + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST  # noqa: N815

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_6_config_credentials_never_follow_a_redirect_and_actions_cannot_steer_endpoints(
    snapshot, service_factory
) -> None:
    password = "airflow-Password-77"
    with CapturingServer(202) as attacker:
        redirect = Redirector(attacker.url)
        try:
            config = {"executors": {
                "ci": {"type": "webhook", "url": redirect.url + "/hook", "headers": {"X-Api-Key": "{{ ENV.CI_KEY }}"}},
                "af": {"type": "airflow", "url": redirect.url, "username": "lw", "password": "{{ ENV.AF_PASSWORD }}",
                       "allowed_dags": ["dq_*"]},
                "af-v1": {"type": "airflow", "url": redirect.url, "username": "lw", "password": "{{ ENV.AF_PASSWORD }}",
                          "api_version": "v1", "allowed_dags": ["dq_*"]},
                "old-af": {"type": "airflow", "url": redirect.url, "username": "lw", "password": "{{ ENV.AF_PASSWORD }}"},
            }}
            ok = [{"id": "hook", "type": "webhook", "executor": "ci"},
                  {"id": "dag", "type": "airflow", "executor": "af", "properties": {"dag_id": "dq_rows"}},
                  {"id": "dag1", "type": "airflow", "executor": "af-v1", "properties": {"dag_id": "dq_rows"}}]
            snapshot.commit({"_lakefs_actions/c.yaml": action(ok)}, branch="main")
            refused = {
                "steer": ({"id": "s", "type": "webhook", "executor": "ci", "properties": {"query_params": {"to": "x"}}},
                          "query_params come(s) from executor 'ci'"),
                "other-dag": ({"id": "o", "type": "airflow", "executor": "af", "properties": {"dag_id": "drop_all"}},
                              "DAG 'drop_all' is not in allowed_dags of executor 'af'"),
                "no-list": ({"id": "n", "type": "airflow", "executor": "old-af", "properties": {"dag_id": "dq_rows"}},
                            "executor 'old-af' has no allowed_dags"),
            }
            for branch, (check, _) in refused.items():
                snapshot.commit({"_lakefs_actions/c.yaml": action([check])}, branch=branch)
            live = service_factory(snapshot.write(), config, env={"CI_KEY": "ci-Key-0123456789", "AF_PASSWORD": password})
            live.trigger("main")
            errors = {c: live.wait_for("main", c, {"FAILED"})["error"] for c in ("hook", "dag", "dag1")}
            for branch, (_, reason) in refused.items():
                answer = live.trigger(branch)
                assert answer.status_code == 400 and reason in answer.json()["error"], (branch, answer.text)
        finally:
            redirect.close()
    assert redirect.hits >= 3
    assert attacker.requests == [], "a request followed the redirect"
    for check, error in errors.items():
        assert "redirect" in error and "not followed" in error, (check, error)


# -- 7: log lines cannot be forged; one client cannot flush the rejection log ------------------------------


def test_7_no_forged_log_lines_and_rejections_limited_per_client(snapshot, service_factory, caplog) -> None:
    caplog.set_level(logging.INFO)
    with WebhookReceiver() as receiver:
        receiver.mode = "record"
        commit = snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["a"])}, branch="main")
        live = service_factory(snapshot.write(), {"rejections_per_client": 5})
        live.trigger("main")
        live.wait_for("main", "a", {"EXECUTING"})
        forged = "INFO lakewarden: merge of main approved by admin"
        path = f"/api/v1/repositories/{REPO}/refs/{commit}/checks/a%0a{quote(forged)}%0d%0a"
        answers = [requests.post(live.url + path, params={"token": f"forged-{i}"}, json={"status": "SUCCESS"},
                                 timeout=10).status_code for i in range(12)]
        assert set(answers) <= {403, 404}
        counts = requests.get(f"{live.url}/api/v1/rejections", timeout=10).json()
    assert (counts["recorded"], counts["suppressed"]) == (5, 7), counts
    for record in caplog.records:
        message = record.getMessage()
        assert "\n" not in message and "\r" not in message, message
    assert any("a\\n" + forged in r.getMessage() for r in caplog.records)  # logged, escaped


# -- 8: a way out of the gate's "run the checks again" -------------------------------------------------------


def test_8_a_check_that_ran_another_definition_runs_again_when_triggered(snapshot, service_factory) -> None:
    with WebhookReceiver() as executor:
        hook = {"id": "row-count", "type": "webhook", "properties": {"url": executor.url}}
        main = snapshot.commit({"data/x.csv": "1"}, branch="main")
        source = snapshot.commit({"_lakefs_actions/checks.yaml": action([hook])}, parents=[main], branch="feature")
        snapshot.write()
        live = service_factory(snapshot.directory, PROTECT)
        live.trigger("feature")
        live.wait_for("feature", "row-count", {"SUCCESS"})
        blocked = live.gate("main", source)
        assert blocked.status_code == 412 and "run the checks again" in blocked.json()["message"]
        # main defines the mandatory check now: triggering the source runs main's definition.
        pinned = {**hook, "description": "main's row count"}
        snapshot.commit({"_lakefs_actions/checks.yaml": action([pinned], name="main checks")},
                        parents=[main], branch="main")
        snapshot.write()
        again = live.trigger("feature")
        assert again.status_code == 202 and again.json()["checks"][0]["triggered"] is True, again.text
        done = live.wait_for("feature", "row-count", {"SUCCESS"})
        assert done["attempt"] == 2 and done["pinned_for"] == ["main"]
        assert live.gate("main", source).status_code == 200
        assert live.trigger("feature").json()["checks"][0]["triggered"] is False  # nothing changed since


# -- 9: the smaller findings -------------------------------------------------------------------------------------


def test_9_refusals_faults_health_store_file_tracebacks_and_the_gate(
    snapshot, service_factory, tmp_path, caplog, monkeypatch
) -> None:
    caplog.set_level(logging.INFO)
    secret = "traceback-Secret-4242"
    with WebhookReceiver() as receiver:
        receiver.mode = "callback"
        passing = snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["row-count"])},
                                  branch="main")
        live = service_factory(snapshot.write(), PROTECT, env={"LAKEFSACTION_X": secret})
        live.trigger("main")
        live.wait_for("main", "row-count", {"SUCCESS"})
    host, port = urlsplit(live.url).hostname, urlsplit(live.url).port

    # uvicorn's own refusals: JSON with the security headers.
    for raw in (b"GARBAGE\r\n\r\n", b"POST /api/v1/hooks/pre-merge HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n"):
        with socket.create_connection((host, port), timeout=10) as sock:
            sock.sendall(raw)
            answer, _ = read_until_closed(sock, 5)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400") and b"application/json" in head, answer
        assert b"content-security-policy" in head.lower() and json.loads(body)["error"]

    # The gate does not take the event's word for the commit.
    trusted = live.gate("main", "no-such-ref", commit_id=passing)
    assert trusted.status_code == 412, trusted.text

    # A traceback in the log is masked and cannot forge lines.
    def explode(*args: Any) -> None:
        raise RuntimeError(f"boom with {secret}\nFORGED LINE")

    monkeypatch.setattr(live.service, "list", explode)
    assert requests.get(live.checks_url("main"), timeout=10).status_code == 500
    text = "\n".join(logging.Formatter().format(r) for r in caplog.records)
    assert secret not in text and "\nFORGED LINE" not in text and "RuntimeError" in text
    monkeypatch.undo()

    # The store file is the owner's only.
    for path in tmp_path.rglob("checks.sqlite"):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path

    # A broken catalog file is the server's fault: 5xx, without the server's paths.
    (snapshot.directory / "branches.jsonl").write_text("{not json\n")
    broken = requests.get(live.checks_url("main"), timeout=10)
    assert broken.status_code >= 500 and str(snapshot.directory) not in broken.text and "jsonl" not in broken.text
    assert broken.json()["error"]

    # Health reports the store.
    assert requests.get(f"{live.url}/api/v1/healthz", timeout=10).json() == {"status": "ok", "store": "ok"}
    from sqlalchemy import create_engine

    live.store.engine = create_engine(f"sqlite:///{tmp_path}/missing-dir/x.sqlite")
    down = requests.get(f"{live.url}/api/v1/healthz", timeout=10)
    assert down.status_code == 503 and down.json()["store"] == "unavailable"
    assert "missing-dir" not in down.text
    assert API_TOKEN  # (the token is masked like any secret: see test_secrets)
