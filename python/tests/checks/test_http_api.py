"""The HTTP layer: OpenAPI kept in the repository, malformed requests always 4xx with one line,
bounded bodies, logs and rejection log, triggers that do not wait for executors."""

from __future__ import annotations

import json
import random
import socket
import time
from collections import Counter
from urllib.parse import urlsplit

import requests

from checks_support import REPO, WebhookReceiver, webhook_actions
from lakewarden.checks.server import OPENAPI_FILE, OPENAPI_PATH
from lakewarden.checks.service import MAX_OUTPUT_CHARS


def raw_request(url: str, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """Send bytes as they are (requests would fix a bad Content-Length); the status and the rest."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n\r\n" + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data


def test_openapi_served_equals_the_committed_document(snapshot, service_factory) -> None:
    snapshot.commit({}, branch="main")
    live = service_factory(snapshot.write())
    served = requests.get(live.url + OPENAPI_PATH, timeout=10)
    assert served.status_code == 200
    committed = json.loads(OPENAPI_FILE.read_text(encoding="utf-8"))
    assert served.json() == committed, "regenerate with: python -m lakewarden.checks.server"
    paths = committed["paths"]
    assert "/api/v1/repositories/{repo}/refs/{ref}/checks/{check_id}" in paths
    assert "/api/v1/repositories/{repo}/refs/{ref}/checks/{check_id}/output" in paths
    assert committed["components"]["schemas"]["CallbackBody"]["additionalProperties"] is False


def test_trigger_answers_before_a_slow_executor(snapshot, service_factory) -> None:
    with WebhookReceiver() as slow:
        slow.mode = "record"
        release = []
        original = slow.httpd.RequestHandlerClass.do_POST

        def sleepy(handler):  # the executor takes 3 s to accept the job
            time.sleep(3)
            release.append(1)
            original(handler)

        slow.httpd.RequestHandlerClass.do_POST = sleepy
        snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(slow.url, ["a", "b"])}, branch="main")
        live = service_factory(snapshot.write())
        started = time.monotonic()
        answer = live.trigger("main")
        assert time.monotonic() - started < 1.5
        assert answer.status_code == 202 and {c["status"] for c in answer.json()["checks"]} == {"STARTING"}
        assert live.wait_for("main", "a", {"EXECUTING"}, timeout=20)
        assert release


def test_executor_log_is_appendable_bounded_and_token_bound(snapshot, service_factory) -> None:
    with WebhookReceiver() as receiver:
        receiver.mode = "record"
        commit = snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["a"])}, branch="main")
        live = service_factory(snapshot.write())
        live.trigger("main")
        event = receiver.events(1)[0]
        out = event["output_url"]
        assert requests.post(out, data=b"line 1\n", timeout=10).json()["size"] == 7
        bearer = out.split("?")[0]
        second = requests.post(bearer, data="line 2 \u2713\n".encode(), timeout=10,
                               headers={"Authorization": f"Bearer {event['callback_token']}"})
        assert second.status_code == 200, second.text
        log_url = f"{live.checks_url(commit)}/a/output"
        assert requests.get(log_url, timeout=10).text == "line 1\nline 2 \u2713\n"
        too_big = requests.post(out, data=b"x" * MAX_OUTPUT_CHARS, timeout=10)
        assert too_big.status_code == 413 and "refused" in too_big.json()["error"]
        assert requests.get(log_url, timeout=10).text.endswith("\u2713\n")  # unchanged
        assert requests.post(out, data=b"\xff\xfe", timeout=10).status_code == 400
        assert requests.post(bearer + "?token=forged", data=b"x", timeout=10).status_code == 403
        assert requests.post(bearer, data=b"x", timeout=10).status_code == 400  # no token
        # The log may still be uploaded after the callback (the final lines), by the same token.
        assert requests.post(event["callback_url"], json={"status": "FAILED"}, timeout=10).status_code == 200
        assert requests.post(out, data=b"done\n", timeout=10).status_code == 200
        shown = live.checks(commit)["a"]
        assert shown["log_url"] == urlsplit(log_url).path
        assert requests.get(f"{live.checks_url(commit)}/a", timeout=10).json()["log"].endswith("done\n")
        # A retry starts a new execution with an empty log; the old token no longer writes.
        assert live.retry(commit, "a").status_code == 202
        receiver.events(2)
        stale = requests.post(out, data=b"late\n", timeout=10)
        assert stale.status_code == 403 and "superseded" in stale.json()["error"]
        assert requests.get(log_url, timeout=10).text == ""


def test_rejection_log_is_bounded_oldest_dropped_and_counted(snapshot, service_factory) -> None:
    with WebhookReceiver() as receiver:
        receiver.mode = "record"
        commit = snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["a"])}, branch="main")
        live = service_factory(snapshot.write(), {"max_rejections": 5})
        live.trigger("main")
        live.wait_for("main", "a", {"EXECUTING"})
        url = f"{live.checks_url(commit)}/a"
        for i in range(12):
            assert requests.post(url, params={"token": f"forged-{i}"}, json={"status": "SUCCESS"}, timeout=10).status_code == 403
        answer = requests.get(f"{live.url}/api/v1/rejections", timeout=10).json()
        assert (answer["recorded"], answer["kept"], answer["dropped"]) == (12, 5, 7)
        assert [r["reason"] for r in answer["rejections"]] == ["unknown token"] * 5
        assert len(live.store.rejections()) == 5


def fuzz_cases(rng: random.Random, callback: str, base: str, url: str) -> list[tuple[str, str, dict]]:
    """(method, url, requests kwargs) of malformed requests, each of which must be a 4xx."""
    huge = [10**30, -(10**30), -1, 1e308, 2**63, -(2**63)]
    bad_json = [b"{", b"[1,", b"\x00\xff", b'{"status": "SUCCESS",}', b"nul", b'"SUCCESS"', b"1e999999", b"{" * 5000]
    cases: list[tuple[str, str, dict]] = []
    for _ in range(40):
        kind = rng.choice(["json", "numbers", "unknown", "token", "gate", "trigger", "output", "query"])
        if kind == "json":
            cases.append(("POST", callback, {"data": rng.choice(bad_json), "headers": {"Content-Type": "application/json"}}))
        elif kind == "numbers":
            body = rng.choice([{"status": rng.choice(huge)}, {"status": "SUCCESS", "metadata": {"n": rng.choice(huge)}},
                               {"status": "SUCCESS", "metadata": [rng.choice(huge)]}])
            cases.append(("POST", callback, {"data": json.dumps(body).encode(), "headers": {"Content-Type": "application/json"}}))
        elif kind == "unknown":
            cases.append(("POST", callback, {"json": {"status": "SUCCESS", rng.choice(["statuss", "token", "x"]): 1}}))
        elif kind == "token":
            token = rng.choice(["forged", "", "x" * 5000, "\u00e9\u00e8", "a" * 43])
            cases.append(("POST", callback.split("?")[0], {"params": {"token": token}, "json": {"status": "SUCCESS"}}))
        elif kind == "gate":
            body = rng.choice([{}, {"repository_id": REPO}, {"repository_id": 1, "branch_id": "main", "source_ref": "x"},
                               {"event_type": "pre-commit", "repository_id": REPO, "branch_id": "main", "source_ref": "x"},
                               {"repository_id": REPO, "branch_id": "main", "source_ref": rng.choice(huge)}, []])
            cases.append(("POST", f"{url}/api/v1/hooks/pre-merge", {"json": body}))
        elif kind == "trigger":
            cases.append(("POST", base, {"params": {"id": rng.choice(["../x", "-1", "a b"])},
                                         "headers": {"Authorization": "Bearer test-api-token-0123456789"}}))
            cases.append(("POST", base, {"json": {"id": "a", "extra": rng.choice(huge)},
                                         "headers": {"Authorization": "Bearer test-api-token-0123456789"}}))
            cases.append(("POST", base, {"headers": {"Authorization": rng.choice(["Bearer wrong", "Basic x", ""])}}))
        elif kind == "output":
            cases.append(("POST", callback.split("?")[0] + "/output", {"params": {"token": "forged"}, "data": b"log"}))
        else:
            cases.append(("GET", f"{url}/api/v1/rejections", {"params": {"limit": rng.choice(huge)}}))
            cases.append(("GET", f"{url}/api/v1/repositories/{REPO}/refs/{'z' * 300}/checks", {}))
    return cases


def test_fuzz_malformed_requests_are_4xx_and_leave_the_store_consistent(snapshot, service_factory) -> None:
    with WebhookReceiver() as receiver:
        receiver.mode = "record"
        commit = snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["a"])}, branch="main")
        snapshot.write()
        live = service_factory(snapshot.directory, {"protected_branches": [{"branch": "main", "mandatory_checks": ["a"]}]})
        live.trigger("main")
        live.wait_for("main", "a", {"EXECUTING"})
        callback = receiver.events(1)[0]["callback_url"]
        base = live.checks_url("main")
        codes: Counter[int] = Counter()
        rng = random.Random(12)
        for method, target, kwargs in fuzz_cases(rng, callback, base, live.url):
            answer = requests.request(method, target, timeout=30, **kwargs)
            assert 400 <= answer.status_code < 500, (method, target, kwargs, answer.status_code, answer.text)
            if answer.headers.get("content-type", "").startswith("application/json"):
                error = answer.json()["error"]
                assert error and "\n" not in error
            codes[answer.status_code] += 1
        path = urlsplit(callback).path
        for head, body in [
            (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: abc", b""),
            (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: -1", b""),
            (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999", b""),
            (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3", b"{}"),
            (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {2 << 20}", b"{}"),
            (f"POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked", b"200000\r\n" + b"x" * (2 << 20) + b"\r\n0\r\n\r\n"),
            ("POST /api/v1/hooks/pre-merge HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Type: application/json", b"[[[[["),
        ]:
            status, _ = raw_request(live.url, head, body)
            assert 400 <= status < 500, (head, status)
            codes[status] += 1
        assert codes[500] == 0 and set(codes) <= {400, 401, 403, 404, 408, 409, 412, 413}, codes

        # Nothing of that changed the check or used up its token.
        assert live.checks("main")["a"]["status"] == "EXECUTING"
        ok = requests.post(callback, json={"status": "SUCCESS", "metadata": {"rows": "1"}}, timeout=10)
        assert ok.status_code == 200 and ok.json()["status"] == "SUCCESS"
        assert live.gate("main", commit).status_code == 200
        assert requests.get(f"{live.url}/api/v1/healthz", timeout=10).json() == {"status": "ok", "store": "ok"}
        counts = live.store.rejection_counts()
        assert counts["recorded"] == counts["kept"] == codes[403]


def test_pages_send_a_content_security_policy(snapshot, service_factory) -> None:
    snapshot.commit({}, branch="main")
    live = service_factory(snapshot.write())
    for path in ["/", f"/ui/repositories/{REPO}/refs/main", "/ui/assets/commit.js", "/api/v1/healthz"]:
        answer = requests.get(live.url + path, timeout=10)
        assert answer.status_code == 200
        csp = answer.headers["Content-Security-Policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
    page = requests.get(f"{live.url}/ui/repositories/{REPO}/refs/main", timeout=10).text
    assert "<script>" not in page and "<style>" not in page  # nothing inline for the CSP to block
    assert requests.get(f"{live.url}/ui/assets/../server.py", timeout=10).status_code == 404


def test_a_slow_client_gets_408_and_holds_nothing(snapshot, service_factory) -> None:
    snapshot.commit({}, branch="main")
    live = service_factory(snapshot.write(), body_timeout=1.0)
    parts = urlsplit(live.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as slow:
        slow.sendall(b"POST /api/v1/hooks/pre-merge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{")
        started = time.monotonic()
        # Meanwhile the service answers others at once.
        assert requests.get(f"{live.url}/api/v1/healthz", timeout=5).status_code == 200
        answer = b""
        while b"not received" not in answer and time.monotonic() - started < 5:
            chunk = slow.recv(65536)
            if not chunk:
                break
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
        assert b"not received within 1s" in answer
        assert time.monotonic() - started < 5
