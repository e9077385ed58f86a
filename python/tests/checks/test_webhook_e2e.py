"""End to end over HTTP on 127.0.0.1: trigger -> webhook -> callback -> state -> merge gate."""

from __future__ import annotations

import logging
import time

import requests

from checks_support import REPO, LiveService, SnapshotBuilder, WebhookReceiver, webhook_actions

SECRET_ENV = {"LAKEFSACTION_HOOK_SECRET": "s3cr3t"}
PROTECT_MAIN = {"protected_branches": [{"branch": "main", "mandatory_checks": ["row-count"]}]}


def feature_commit(snapshot: SnapshotBuilder, receiver: WebhookReceiver, **extra: object) -> str:
    """main defines the mandatory check; feature (branched from it) carries the same action file."""
    actions = webhook_actions(receiver.url + "/hook", ["row-count"], **extra)
    snapshot.commit({"_lakefs_actions/checks.yaml": actions, "data/a.csv": "x\n1\n"}, message="base", branch="main")
    commit = snapshot.commit(
        {
            "_lakefs_actions/checks.yaml": actions,
            "data/a.csv": "x\n1\n2\n3\n",
        },
        message="add rows",
        branch="feature",
    )
    snapshot.write()
    return commit


def test_trigger_callback_success_then_gate_allows(snapshot, receiver, service_factory) -> None:
    commit = feature_commit(
        snapshot,
        receiver,
        properties={
            "headers": {"Authorization": "Bearer {{ ENV.LAKEFSACTION_HOOK_SECRET }}"},
            "query_params": {"team": "data", "tags": ["a", "b"]},
            "output_url": "http://logs.example/{{ check_id }}/{{ execution_id }}",
        },
    )
    live: LiveService = service_factory(snapshot.directory, PROTECT_MAIN, env=SECRET_ENV)

    blocked = live.gate("main", "feature")
    assert blocked.status_code == 412
    assert "row-count has not run" in blocked.json()["message"]

    assert requests.post(live.checks_url("feature"), timeout=10).status_code == 401
    answer = live.trigger("feature")
    assert answer.status_code == 202, answer.text
    body = answer.json()
    assert body["commit_id"] == commit and body["ref_kind"] == "branch"
    assert [c["triggered"] for c in body["checks"]] == [True]

    done = live.wait_for("feature", "row-count", {"SUCCESS"})
    assert done["metadata"] == {"rows": "3"}
    assert done["output_url"] == f"http://logs.example/row-count/{done['execution_id']}"
    assert done["finished_at"] and done["attempt"] == 1

    [received] = receiver.received
    assert received.path == "/hook"
    assert received.headers["Authorization"] == "Bearer s3cr3t"
    assert received.query == {"team": ["data"], "tags": ["a", "b"]}
    event = received.body
    # The design's event (docs/contract.md §6): source_ref is the commit the ref was dereferenced to.
    design = {"repository_id", "branch_id", "source_ref", "check_id", "storage_namespace", "callback_token", "output_url"}
    assert design <= set(event)
    assert event["repository_id"] == REPO and event["branch_id"] == "feature" and event["source_ref"] == commit
    assert event["check_id"] == "row-count" and event["execution_id"] == done["execution_id"]
    assert event["storage_namespace"] == snapshot.namespace.as_uri()
    base = f"{live.url}/api/v1/repositories/{REPO}/refs/{commit}/checks/row-count"
    assert event["output_url"].startswith(f"{base}/output?token=")
    assert event["callback_url"] == f"{base}?token={event['callback_token']}"
    # The committed (untemplated) properties are passed on; the rendered secret is not.
    assert "s3cr3t" not in str(event)
    assert receiver.answers() == [200]

    allowed = live.gate("main", "feature")
    assert allowed.status_code == 200, allowed.text
    assert allowed.json()["allowed"] is True
    # lakeFS sends the source commit id; a commit id works as well as the branch name.
    assert live.gate("main", commit).status_code == 200
    # Triggering again leaves the finished execution alone.
    again = live.trigger("feature")
    assert again.status_code == 200 and again.json()["checks"][0]["triggered"] is False
    assert len(receiver.received) == 1


def test_stale_forged_and_reused_tokens_are_rejected_and_logged(snapshot, receiver, service_factory, caplog) -> None:
    receiver.mode = "record"
    commit = feature_commit(snapshot, receiver)
    live = service_factory(snapshot.directory, PROTECT_MAIN)
    assert live.trigger("feature").status_code == 202
    live.wait_for("feature", "row-count", {"EXECUTING"})
    first = receiver.events(1)[0]
    url = f"{live.checks_url(commit)}/row-count"
    caplog.set_level(logging.WARNING, logger="lakewarden.checks.store")

    forged = requests.post(url, params={"token": "not-a-token"}, json={"status": "SUCCESS"}, timeout=10)
    assert forged.status_code == 403 and forged.json()["error"] == "unknown token"
    assert requests.post(url, json={"status": "SUCCESS"}, timeout=10).status_code == 400  # no token at all

    failed = requests.post(first["callback_url"], json={"status": "FAILED", "metadata": {"why": "3 nulls"}}, timeout=10)
    assert failed.status_code == 200 and failed.json()["status"] == "FAILED"
    reused = requests.post(first["callback_url"], json={"status": "SUCCESS"}, timeout=10)
    assert reused.status_code == 403 and reused.json()["error"] == "token already used"

    assert live.retry(commit, "row-count").status_code == 202
    second = receiver.events(2)[1]
    assert second["execution_id"] != first["execution_id"] and second["attempt"] == 2
    stale = requests.post(first["callback_url"], json={"status": "SUCCESS"}, timeout=10)
    assert stale.status_code == 403
    assert stale.json()["error"] in {"token already used", "token of attempt 1 superseded by attempt 2"}
    assert live.checks(commit)["row-count"]["status"] == "EXECUTING"

    ok = requests.post(second["callback_url"], json={"status": "SUCCESS", "metadata": {"rows": "3"}}, timeout=10)
    assert ok.status_code == 200 and ok.json()["status"] == "SUCCESS"

    reasons = [r["reason"] for r in live.store.rejections(REPO)]
    assert reasons == ["unknown token", "token already used", stale.json()["error"]]
    assert sum("rejected callback" in r.getMessage() for r in caplog.records) == 3


def test_superseded_token_reason_names_the_attempt(snapshot, receiver, service_factory) -> None:
    receiver.mode = "record"
    commit = feature_commit(snapshot, receiver, timeout="1s")
    live = service_factory(snapshot.directory, PROTECT_MAIN, reaper_interval=0.1)
    live.trigger(commit)
    live.wait_for(commit, "row-count", {"LOST"}, timeout=10)
    assert live.retry(commit, "row-count").status_code == 202
    receiver.events(2)
    first = receiver.events()[0]
    stale = requests.post(first["callback_url"], json={"status": "SUCCESS"}, timeout=10)
    assert stale.status_code == 403
    assert stale.json()["error"] == "token of attempt 1 superseded by attempt 2"


def test_timeout_lost_then_retry_succeeds(snapshot, receiver, service_factory) -> None:
    receiver.mode = "record"
    commit = feature_commit(snapshot, receiver, timeout="1s")
    live = service_factory(snapshot.directory, PROTECT_MAIN, reaper_interval=0.1)
    started = time.monotonic()
    assert live.trigger("feature").status_code == 202
    live.wait_for("feature", "row-count", {"EXECUTING"})
    lost = live.wait_for("feature", "row-count", {"LOST"}, timeout=10)
    assert time.monotonic() - started >= 1.0
    assert "timeout" in lost["error"]
    assert live.gate("main", "feature").status_code == 412

    late = requests.post(receiver.events(1)[0]["callback_url"], json={"status": "SUCCESS"}, timeout=10)
    assert late.status_code == 409 and "LOST" in late.json()["error"]

    receiver.mode = "callback"
    answer = live.retry("feature", "row-count")
    assert answer.status_code == 202, answer.text
    done = live.wait_for("feature", "row-count", {"SUCCESS"})
    assert done["attempt"] == 2 and done["error"] is None
    assert live.gate("main", commit).status_code == 200
    assert live.retry(commit, "row-count").status_code == 409  # SUCCESS is final


def test_failed_check_blocks_the_merge(snapshot, receiver, service_factory) -> None:
    receiver.result = {"status": "FAILED", "metadata": {"nulls": "3", "column": "x"}}
    feature_commit(snapshot, receiver)
    config = {"protected_branches": [{"branch": "main", "mandatory_checks": ["row-count", "lint"]}, {"branch": "release-*", "mandatory_checks": ["row-count"]}]}
    live = service_factory(snapshot.directory, config)
    live.trigger("feature")
    failed = live.wait_for("feature", "row-count", {"FAILED"})
    assert failed["metadata"] == {"nulls": "3", "column": "x"}

    blocked = live.gate("main", "feature")
    assert blocked.status_code == 412
    reasons = {r["check"]: r for r in blocked.json()["reasons"]}
    assert reasons["row-count"]["status"] == "FAILED"
    assert reasons["lint"]["status"] is None and "has not run" in reasons["lint"]["reason"]
    assert live.gate("release-1", "feature").status_code == 412  # glob rule
    unprotected = live.gate("dev", "feature")
    assert unprotected.status_code == 200 and "not protected" in unprotected.json()["message"]


def test_executor_errors_fail_the_check(snapshot, receiver, service_factory) -> None:
    receiver.mode = "error"
    snapshot.commit(
        {
            "_lakefs_actions/a.yaml": webhook_actions(receiver.url, ["answers-500"]),
            "_lakefs_actions/b.yaml": webhook_actions("http://127.0.0.1:9/nothing", ["unreachable"], name="unreachable checks", properties={"timeout": "2s"}),
        },
        branch="main",
    )
    snapshot.write()
    live = service_factory(snapshot.directory)
    body = live.trigger("main").json()
    assert {c["status"] for c in body["checks"]} == {"STARTING"}  # the answer comes before the executors
    status = {c: live.wait_for("main", c, {"FAILED"}) for c in ("answers-500", "unreachable")}
    assert status["answers-500"]["status"] == "FAILED" and "HTTP 500" in status["answers-500"]["error"]
    assert status["unreachable"]["status"] == "FAILED" and "unreachable" in status["unreachable"]["error"]
    receiver.mode = "callback"
    assert live.retry("main", "answers-500").status_code == 202
    assert live.wait_for("main", "answers-500", {"SUCCESS"})["attempt"] == 2


def test_trigger_one_check_by_id(snapshot, receiver, service_factory) -> None:
    snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["one", "two"])}, branch="main")
    snapshot.write()
    live = service_factory(snapshot.directory)
    answer = live.trigger("main", "two")
    assert answer.status_code == 202 and [c["id"] for c in answer.json()["checks"]] == ["two"]
    live.wait_for("main", "two", {"SUCCESS"})
    assert set(live.checks("main")) == {"two"}
    missing = live.trigger("main", "three")
    assert missing.status_code == 404 and "three" in missing.json()["error"]


LAKEFS_ACTION = """\
name: branch checks
on:
  pre-merge:
    branches: [main]
hooks:
  - id: branch_checks_gate
    type: webhook
    properties:
      url: http://127.0.0.1:9/api/v1/hooks/pre-merge
checks:
  - id: row-count
    type: webhook
    properties:
      url: {url}
      headers: {{Authorization: "Bearer {{{{ ENV.LAKEFSACTION_HOOK_SECRET }}}}"}}
"""


def test_a_lakefs_action_file_drives_a_check_to_success_and_the_gate_accepts_lakefs_event(
    snapshot, receiver, service_factory
) -> None:
    """The done-when path: a file written for lakeFS (unquoted ``on:``, LAKEFSACTION_ prefix);
    STARTING -> EXECUTING -> SUCCESS by the callback token; lakeFS's own pre-merge body."""
    receiver.mode = "record"
    action = LAKEFS_ACTION.format(url=receiver.url + "/hook")
    main = snapshot.commit({"_lakefs_actions/branch-checks.yaml": action}, branch="main")
    source = snapshot.commit({"_lakefs_actions/branch-checks.yaml": action, "data/a.csv": "x\n1\n"},
                             parents=[main], branch="feature")
    snapshot.write()
    live = service_factory(snapshot.directory, PROTECT_MAIN, env={"LAKEFSACTION_HOOK_SECRET": "s3cr3t"})
    started = live.trigger("feature").json()["checks"][0]
    assert started["status"] == "STARTING" and started["pinned_for"] == ["main"]
    live.wait_for("feature", "row-count", {"EXECUTING"})
    [received] = receiver.received
    assert received.headers["Authorization"] == "Bearer s3cr3t"
    event = received.body
    url = f"{live.checks_url(event['source_ref'])}/row-count"
    done = requests.post(url, params={"token": event["callback_token"]}, json={"status": "SUCCESS"}, timeout=10)
    assert done.status_code == 200 and done.json()["status"] == "SUCCESS"
    lakefs_event = {  # what lakeFS's webhook hook POSTs for pre-merge (pkg/actions/event.go)
        "event_type": "pre-merge", "event_time": "2026-11-23T11:00:00Z", "action_name": "branch checks",
        "hook_id": "branch_checks_gate", "repository_id": REPO, "branch_id": "main", "source_ref": source,
        "commit_message": "Merge 'feature' into 'main'", "committer": "admin", "commit_metadata": {},
        "merge_source": "feature",
    }
    gate = requests.post(f"{live.url}/api/v1/hooks/pre-merge", json=lakefs_event, timeout=10)
    assert gate.status_code == 200, gate.text
    assert gate.json()["allowed"] is True and gate.json()["commit_id"] == source
