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

from checks_support import REPO, CapturingServer, WebhookReceiver, webhook_actions
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


def test_1_the_connection_limits_are_set_in_the_config() -> None:
    from lakewarden.checks.config import parse_service_config
    from lakewarden.errors import BadInput

    config = parse_service_config({"connections": {"header_timeout": "5s", "per_client_pending": 16}},
                                  source="c.yaml", env={})
    limits = ConnectionLimits(**config.connection_limits)
    assert (limits.header_timeout, limits.per_client_pending, limits.body_timeout) == (5.0, 16, 30.0)
    for bad in ({"header_timeot": "5s"}, {"max_active": 0}, {"body_timeout": "2h"}):
        with pytest.raises(BadInput):
            parse_service_config({"connections": bad}, source="c.yaml", env={})


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
    assert secret[:4] not in error, error
    assert "HTTP 500" in error and "***" in error


# -- 4 and 5: log appends and restarts ---------------------------------------------------------------------

SECRET_45 = "ciTOKEN-9f8e7d6c5b4a"


def test_4_a_secret_split_across_log_appends_is_never_stored_nor_shown_after_a_restart(
    snapshot, service_factory, tmp_path
) -> None:
    env = {"LAKEFSACTION_CI_TOKEN": SECRET_45}
    db = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    with WebhookReceiver() as receiver:
        receiver.mode = "record"
        commit = snapshot.commit({"_lakefs_actions/c.yaml": action([
            {"id": "ci", "type": "webhook", "properties": {"url": receiver.url}}])}, branch="main")
        first = service_factory(snapshot.write(), env=env, db_url=db)
        first.trigger("main")
        out = receiver.events(1)[0]["output_url"]
        assert requests.post(out, data=b"token is ...ciTOKEN-9f8e", timeout=10).status_code == 200
        assert SECRET_45[:10].encode() not in stored_bytes(tmp_path)  # the beginning is held back
        assert requests.post(out, data=b"7d6c5b4a... done\n", timeout=10).status_code == 200
        first.stop()
        # After a restart (even one whose environment no longer has the value) the log is as stored.
        second = service_factory(snapshot.directory, db_url=db)
        shown = everything_shown(second, ["main", commit])
    assert "token is ...***... done" in shown
    assert SECRET_45 not in shown and SECRET_45[:10] not in shown and SECRET_45[-8:] not in shown
    stored = stored_bytes(tmp_path)
    assert SECRET_45[:10].encode() not in stored and SECRET_45[-8:].encode() not in stored


def test_5_after_a_restart_the_mask_knows_every_value_before_a_check_renders_it(
    snapshot, service_factory, tmp_path
) -> None:
    env = {"LAKEFSACTION_CI_TOKEN": SECRET_45}
    db = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    with WebhookReceiver() as receiver:
        receiver.mode = "record"
        commit = snapshot.commit({"_lakefs_actions/c.yaml": action([
            {"id": "ci", "type": "webhook", "properties": {"url": receiver.url}}])}, branch="main")
        first = service_factory(snapshot.write(), env=env, db_url=db)
        first.trigger("main")
        event = receiver.events(1)[0]
        first.stop()
        second = service_factory(snapshot.directory, env=env, db_url=db)  # nothing triggered since
        answer = requests.post(event["callback_url"].replace(first.url, second.url), timeout=10,
                               json={"status": "SUCCESS", "metadata": {"echo": SECRET_45, "url": quote(SECRET_45)}})
        assert answer.status_code == 200
        shown = everything_shown(second, ["main", commit], [answer])
    assert SECRET_45 not in shown and quote(SECRET_45) not in shown
    assert SECRET_45.encode() not in stored_bytes(tmp_path)


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


def test_6_config_credentials_never_follow_a_redirect(snapshot, service_factory) -> None:
    password = "airflow-Password-77"
    with CapturingServer(202) as attacker:
        redirect = Redirector(attacker.url)
        try:
            config = {
                "executors": {
                    "ci": {"type": "webhook", "url": redirect.url + "/hook", "headers": {"X-Api-Key": "{{ ENV.CI_KEY }}"}},
                    "af": {"type": "airflow", "url": redirect.url, "username": "lw", "password": "{{ ENV.AF_PASSWORD }}"},
                    "af-v1": {"type": "airflow", "url": redirect.url, "username": "lw",
                              "password": "{{ ENV.AF_PASSWORD }}", "api_version": "v1"},
                },
                # The operator's own checks (so no allowed_dags is needed for this test).
                "checks": [{"id": "hook", "type": "webhook", "executor": "ci"},
                           {"id": "dag", "type": "airflow", "executor": "af", "properties": {"dag_id": "dq_rows"}},
                           {"id": "dag1", "type": "airflow", "executor": "af-v1", "properties": {"dag_id": "dq_rows"}}],
                "protected_branches": [{"branch": "main", "mandatory_checks": ["hook", "dag", "dag1"]}],
            }
            snapshot.commit({"data/x.csv": "1"}, branch="main")
            live = service_factory(snapshot.write(), config, env={"CI_KEY": "ci-Key-0123456789", "AF_PASSWORD": password})
            assert live.trigger("main").status_code == 202
            errors = {c: live.wait_for("main", c, {"FAILED", "EXECUTING", "SUCCESS"}, timeout=30).get("error") or ""
                      for c in ("hook", "dag", "dag1")}
        finally:
            redirect.close()
    assert redirect.hits >= 3
    assert attacker.requests == [], "a request (with the endpoint's credentials and the event) followed the redirect"
    for check, error in errors.items():
        assert "redirect" in error and "not followed" in error, (check, error)


def test_6_actions_cannot_steer_a_config_endpoint_nor_start_dags_it_does_not_allow(snapshot, service_factory) -> None:
    config = {"executors": {
        "ci": {"type": "webhook", "url": "http://127.0.0.1:9/hook", "headers": {"X-Api-Key": "k-0123456789"}},
        "af": {"type": "airflow", "url": "http://127.0.0.1:9", "username": "lw", "password": "pw-0123456789",
               "allowed_dags": ["dq_*"]},
        "old-af": {"type": "airflow", "url": "http://127.0.0.1:9", "username": "lw", "password": "pw-0123456789"},
    }}
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
    snapshot.commit({"_lakefs_actions/c.yaml": action([
        {"id": "ok", "type": "airflow", "executor": "af", "properties": {"dag_id": "dq_rows", "timeout": "2s"}}])},
        branch="allowed")
    snapshot.write()
    live = service_factory(snapshot.directory, config)
    for branch, (_, reason) in refused.items():
        answer = live.trigger(branch)
        assert answer.status_code == 400 and reason in answer.json()["error"], (branch, answer.text)
        assert live.checks(branch) == {}
    assert live.trigger("allowed").status_code == 202


# -- 7: log lines cannot be forged; one client cannot flush the rejection log ------------------------------


def _forged_callbacks(live, commit: str, count: int, forged: str = "") -> list[int]:
    path = f"/api/v1/repositories/{REPO}/refs/{commit}/checks/a{forged}"
    return [requests.post(live.url + path, params={"token": f"forged-{i}"}, json={"status": "SUCCESS"},
                          timeout=10).status_code for i in range(count)]


def test_7_a_request_cannot_forge_a_line_of_the_service_log(snapshot, service_factory, caplog) -> None:
    caplog.set_level(logging.INFO)
    with WebhookReceiver() as receiver:
        receiver.mode = "record"
        commit = snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["a"])}, branch="main")
        live = service_factory(snapshot.write())
        live.trigger("main")
        live.wait_for("main", "a", {"EXECUTING"})
        forged = "INFO lakewarden: merge of main approved by admin"
        assert set(_forged_callbacks(live, commit, 3, f"%0a{quote(forged)}%0d%0a")) <= {403, 404}
    for record in caplog.records:
        message = record.getMessage()
        assert "\n" not in message and "\r" not in message, message
    assert any("a\\n" + forged in r.getMessage() for r in caplog.records)  # logged, escaped


def test_7_one_client_cannot_push_other_rejections_out_of_the_log(snapshot, service_factory) -> None:
    with WebhookReceiver() as receiver:
        receiver.mode = "record"
        commit = snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["a"])}, branch="main")
        live = service_factory(snapshot.write(), {"max_rejections": 10})
        live.trigger("main")
        live.wait_for("main", "a", {"EXECUTING"})
        assert set(_forged_callbacks(live, commit, 80)) == {403}  # default: 60 recorded a minute per client
        counts = requests.get(f"{live.url}/api/v1/rejections", timeout=10).json()
    assert counts["recorded"] <= 66 and counts["suppressed"] >= 14, counts


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


@pytest.fixture
def passing(snapshot, service_factory):
    """A service whose main has a mandatory check that passed; the live service and main's commit."""
    with WebhookReceiver() as receiver:
        receiver.mode = "callback"
        commit = snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["row-count"])},
                                 branch="main")
        live = service_factory(snapshot.write(), PROTECT, env={"LAKEFSACTION_X": "traceback-Secret-4242"})
        live.trigger("main")
        live.wait_for("main", "row-count", {"SUCCESS"})
        receiver.answers(1)
    return live, commit


def test_9_uvicorns_own_refusals_are_json_with_the_security_headers(passing) -> None:
    live, _ = passing
    host, port = urlsplit(live.url).hostname, urlsplit(live.url).port
    for raw in (b"GARBAGE\r\n\r\n", b"POST /api/v1/hooks/pre-merge HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n"):
        with socket.create_connection((host, port), timeout=10) as sock:
            sock.sendall(raw)
            answer, _ = read_until_closed(sock, 5)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400") and b"application/json" in head, answer
        assert b"content-security-policy" in head.lower() and json.loads(body)["error"]


def test_9_the_gate_does_not_take_the_events_word_for_the_commit(passing) -> None:
    live, commit = passing
    assert live.gate("main", commit).status_code == 200
    trusted = live.gate("main", "no-such-ref", commit_id=commit)
    assert trusted.status_code == 412, trusted.text


def test_9_tracebacks_in_the_log_are_masked_and_cannot_forge_lines(passing, caplog, monkeypatch) -> None:
    live, _ = passing
    caplog.set_level(logging.INFO)

    def explode(*args: Any) -> None:
        raise RuntimeError("boom with traceback-Secret-4242\nFORGED LINE")

    monkeypatch.setattr(live.service, "list", explode)
    assert requests.get(live.checks_url("main"), timeout=10).status_code == 500
    text = "\n".join(logging.Formatter().format(r) for r in caplog.records)
    assert "RuntimeError" in text
    assert "traceback-Secret-4242" not in text and "\nFORGED LINE" not in text


def test_9_the_store_file_is_the_owners_only(passing, tmp_path) -> None:
    files = list(tmp_path.rglob("checks.sqlite"))
    assert files
    for path in files:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path


def test_9_a_broken_catalog_file_is_a_server_fault_without_paths(passing, snapshot) -> None:
    live, _ = passing
    (snapshot.directory / "branches.jsonl").write_text("{not json\n")
    broken = requests.get(live.checks_url("main"), timeout=10)
    assert broken.status_code >= 500, broken.text
    assert str(snapshot.directory) not in broken.text and "jsonl" not in broken.text and broken.json()["error"]


def test_9_health_reports_the_store(passing, tmp_path) -> None:
    live, _ = passing
    assert requests.get(f"{live.url}/api/v1/healthz", timeout=10).json()["status"] == "ok"
    from sqlalchemy import create_engine

    for gone in (f"sqlite:///{tmp_path}/missing-dir/x.sqlite",  # the database file is gone
                 "postgresql+psycopg://checks@127.0.0.1:1/checks"):  # PostgreSQL is down (nothing listens)
        live.store.engine = create_engine(gone)
        down = requests.get(f"{live.url}/api/v1/healthz", timeout=10)
        assert down.status_code == 503 and down.json()["store"] == "unavailable", down.text
        assert "missing-dir" not in down.text and "127.0.0.1:1" not in down.text
