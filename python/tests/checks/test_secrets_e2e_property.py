"""Random secrets through every path of a live service, then every answer, the store and the log
grepped for every spelling of them (issue 19).

Each example starts a service whose environment holds a new random secret, renders it into a
check's URL path, query, headers (an echoing executor puts all of them into its error; an
unreachable one into a connection error), has an executor upload it in log appends cut at a random
place, echo it in callback metadata, restarts the service and echoes it again. Few examples (each
starts two services), so the suite stays fast; ``test_mask_property`` covers the mask itself with
many more.
"""

from __future__ import annotations

import base64
import json
import logging
import shutil
from pathlib import Path
from urllib.parse import quote, quote_plus

import requests
import requests.utils
import yaml
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from checks_support import CapturingServer, SnapshotBuilder, WebhookReceiver, start_service

# Printable Latin-1: what an HTTP header can carry (the mask's own property test covers all of Unicode).
SECRETS = st.text(st.characters(codec="latin-1", min_codepoint=0x21, blacklist_categories=("Cc",)),
                  min_size=8, max_size=20)


#: what the product and these tests spell by themselves: Hypothesis also draws strings found in
#: the code under test (an identifier such as ``check_type``, a column in the store's schema),
#: and a "secret" already written there cannot be told apart from a leak
VOCABULARY = "\n".join(
    path.read_text(encoding="utf-8", errors="replace")
    for root in (Path(__file__).resolve().parents[2] / "lakewarden", Path(__file__).resolve().parent)
    for path in sorted(root.rglob("*"))
    if path.suffix in (".py", ".html", ".js", ".css", ".sql")
)


def forms(secret: str) -> set[str]:
    return {
        secret,
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
        requests.utils.requote_uri(quote(secret, safe="!#$&'()*+,/:;=?@[]~")),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        base64.b64encode(secret.encode()).decode().rstrip("="),
    }


@settings(max_examples=4, deadline=None, database=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(secret=SECRETS, data=st.data())
def test_random_secrets_never_reach_an_answer_the_store_or_the_log(secret, data, tmp_path_factory, caplog) -> None:
    assume(not any(form in VOCABULARY for form in forms(secret)))
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    root = tmp_path_factory.mktemp("e2e")
    env = {"LAKEFSACTION_S": secret}
    template = "{{ ENV.LAKEFSACTION_S }}"
    spelled = data.draw(st.sampled_from([secret, quote(secret, safe=""), json.dumps(secret)[1:-1]]), label="spelling")
    cut = data.draw(st.integers(1, len(spelled) - 1), label="log cut inside the secret")
    shown: list[str] = []
    with CapturingServer(500) as echo, WebhookReceiver() as receiver:
        receiver.mode = "record"
        checks = [
            {"id": "echo", "type": "webhook", "properties": {
                "url": f"{echo.url}/p/{template}/x", "query_params": {"q": template, "r": [template, "b"]},
                "headers": {"Authorization": f"Bearer {template}", "X-Key": template}}},
            {"id": "gone", "type": "webhook", "properties": {"url": f"http://127.0.0.1:9/{template}?k={template}",
                                                            "timeout": "2s"}},
            {"id": "rec", "type": "webhook", "properties": {"url": receiver.url}},
            {"id": "rec2", "type": "webhook", "properties": {"url": receiver.url}},
        ]
        snapshot = SnapshotBuilder(root / "snapshot", root / "namespace")
        commit = snapshot.commit({"_lakefs_actions/c.yaml": yaml.safe_dump(
            {"name": "e2e", "on": {"pre-merge": {"branches": ["main"]}}, "checks": checks})}, branch="main")
        snapshot.write()
        live = start_service(snapshot.directory, root / "state", {}, env=env)
        try:
            shown.append(live.trigger("main").text)
            for check in ("echo", "gone"):
                live.wait_for("main", check, {"FAILED"}, timeout=15)
            events = {e["check_id"]: e for e in receiver.events(2, timeout=15)}
            out = events["rec"]["output_url"]
            log_text = f"begin {spelled} end\n"
            split = len("begin ") + cut
            for piece in (log_text[:split], log_text[split:]):
                shown.append(requests.post(out, data=piece.encode(), timeout=10).text)
            shown.append(requests.post(events["rec"]["callback_url"], timeout=10,
                                       json={"status": "FAILED", "metadata": {"echo": spelled, spelled: "key"}}).text)
            old_url = live.url
        finally:
            live.stop()
        # A restart: the secret is known before any check renders it again.
        live = start_service(snapshot.directory, root / "state", {}, env=env)
        try:
            shown.append(requests.post(events["rec2"]["callback_url"].replace(old_url, live.url), timeout=10,
                                       json={"status": "SUCCESS", "metadata": {"echo": secret}}).text)
            for ref in ("main", commit):
                shown.append(requests.get(live.checks_url(ref), timeout=10).text)
                for check in ("echo", "gone", "rec", "rec2"):
                    shown.append(requests.get(f"{live.checks_url(ref)}/{check}", timeout=10).text)
                    shown.append(requests.get(f"{live.checks_url(ref)}/{check}/output", timeout=10).text)
            for path in ("/api/v1/recent", "/api/v1/rejections"):
                shown.append(requests.get(live.url + path, timeout=10).text)
            assert "begin *** end" in requests.get(f"{live.checks_url(commit)}/rec/output", timeout=10).text
            assert live.checks(commit)["echo"]["error"].startswith("webhook answered HTTP 500")
        finally:
            live.stop()
        sent = echo.all_text()
    assert "/p/" in sent and "X-Key" in sent  # the echoing executor did get the secret
    answers = "\n".join(shown)
    logged = "\n".join(logging.Formatter().format(r) for r in caplog.records)
    stored = b"".join(p.read_bytes() for p in (root / "state").glob("checks.sqlite*"))
    for form in forms(secret):
        assert form not in answers, f"{form!r} in an answer"
        assert form not in logged, f"{form!r} in the log"
        assert form.encode() not in stored, f"{form!r} in the store"
    shutil.rmtree(root, ignore_errors=True)
