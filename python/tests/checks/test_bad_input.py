"""Bad action files, config and requests give clear errors (HTTP 400/404/409 with a JSON reason)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import requests

from checks_support import webhook_actions
from lakewarden.checks.config import collect_checks, parse_action_file, parse_service_config
from lakewarden.durations import format_duration, parse_duration
from lakewarden.checks.executors import EXECUTORS
from lakewarden.checks.templating import render_env
from lakewarden.errors import BadInput

PATH = "_lakefs_actions/checks.yaml"
#: What lakeFS requires of every action file; the checks cases below come after it.
HEAD = "name: data checks\non:\n  pre-merge:\n    branches: [main]\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("checks: [id: x\n  - bad", f"{PATH}: lakeFS rejects this action file: invalid YAML"),
        ("checks:\n  - type: webhook\n", f"{PATH}: checks[0].id: check has no id"),
        ("checks:\n  - id: a\n", f"{PATH}: checks[a].type: check has no type"),
        ("checks:\n  - id: a\n    type: jenkins\n", "unknown check type 'jenkins' (known: airflow, webhook)"),
        ("checks:\n  - {id: a, type: webhook}\n  - {id: a, type: webhook}\n", "checks[a]: duplicate check id 'a'"),
        ("checks:\n  - {id: 'a b', type: webhook}\n", "invalid check id 'a b'"),
        ("checks: {id: a}\n", f"{PATH}: checks: must be a list"),
        ("checks:\n  - {id: a, type: webhook, timeout: soon}\n", "checks[a].timeout: invalid duration 'soon'"),
        ("checks:\n  - {id: a, type: webhook, propreties: {}}\n", "unknown keys ['propreties']"),
        ("- just a list\n", "an action file must be a mapping"),
    ],
)
def test_action_file_errors(text: str, message: str) -> None:
    with pytest.raises(BadInput) as info:
        parse_action_file(PATH, text if text.startswith("- ") else HEAD + text, EXECUTORS)
    assert message in str(info.value)


def test_hooks_only_action_file_has_no_checks_and_duplicates_across_files_fail() -> None:
    hooks_only = "name: hooks\non:\n  pre-commit:\nhooks:\n  - id: hk\n    type: webhook\n    properties: {url: 'http://x'}\n"
    assert parse_action_file(PATH, hooks_only, EXECUTORS) == []
    one = "checks:\n  - {id: a, type: webhook, properties: {url: 'http://x'}}\n"
    a = HEAD.replace("data checks", "first") + one
    b = HEAD.replace("data checks", "second") + one
    with pytest.raises(BadInput, match=r"_lakefs_actions/b.yaml: checks\[a\]: duplicate check id 'a' \(also defined in _lakefs_actions/a.yaml\)"):
        collect_checks([("_lakefs_actions/b.yaml", b), ("_lakefs_actions/a.yaml", a)], EXECUTORS)
    # lakeFS refuses two actions of one name, whichever files they are in.
    with pytest.raises(BadInput, match=r"b.yaml: lakeFS rejects this action file: action name 'first' already loaded"):
        collect_checks([("_lakefs_actions/b.yaml", a.replace("id: a", "id: b")), ("_lakefs_actions/a.yaml", a)], EXECUTORS)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # The checks are fine; the file is not an action lakeFS accepts, so none of it is used.
        ("checks:\n  - {id: a, type: webhook}\n", "'name' is required"),
        ("name: x\non: {pre-merge: {}}\n", "'name' is invalid"),
        ("name: 'bad/name'\non: {pre-merge: {}}\n", "'name' is invalid"),
        ("name: checks\n", "'on' is required"),
        ("name: checks\non: {}\n", "'on' is required"),
        ("name: checks\non: {pre-push: {}}\n", "event 'pre-push' is not supported"),
        ("name: checks\non: {pre-create-tag: {branches: [main]}}\n", "'branches' is not supported in tag event types"),
        ("name: checks\non: {pre-merge: {}}\nhooks:\n  - {type: webhook, properties: {url: 'http://x'}}\n", "hook[0] missing ID"),
        ("name: checks\non: {pre-merge: {}}\nhooks:\n  - {id: 'a', type: webhook, properties: {url: 'http://x'}}\n", "hook[0] missing ID"),
        (
            "name: checks\non: {pre-merge: {}}\nhooks:\n  - {id: gate, type: webhook, properties: {url: 'http://x'}}\n"
            "  - {id: gate, type: webhook, properties: {url: 'http://y'}}\n",
            "hook[1] duplicate ID 'gate'",
        ),
        ("name: checks\non: {pre-merge: {}}\nhooks:\n  - {id: gate, type: jenkins, properties: {}}\n", "hook[0] type 'gate' unknown"),
        ("name: checks\non: {pre-merge: {}}\nhooks:\n  - {id: gate, type: webhook}\n", "hook[0] type 'webhook': missing hook properties"),
        (
            "name: checks\non: {pre-merge: {}}\nhooks:\n  - {id: dag, type: airflow, properties: {url: 'http://x', dag_id: d}}\n",
            "hook[0] type 'airflow': 'username' must be supplied in properties",
        ),
    ],
)
def test_files_lakefs_rejects_are_reported_with_lakefs_reason(text: str, reason: str) -> None:
    with pytest.raises(BadInput) as info:
        parse_action_file(PATH, text + "checks:\n  - {id: a, type: webhook}\n" if "checks" not in text else text, EXECUTORS)
    assert str(info.value) == f"{PATH}: lakeFS rejects this action file: {reason}"


def test_on_is_read_as_lakefs_reads_it() -> None:
    """PyYAML alone reads the key ``on`` as True (YAML 1.1); lakeFS reads "on"."""
    text = "name: gate\non:\n  pre-merge:\n    branches: [main]\nchecks:\n  - {id: a, type: webhook, properties: {x: on}}\n"
    [check] = parse_action_file(PATH, text, EXECUTORS)
    assert check.properties == {"x": "on"}


def test_env_templating_requires_allowed_and_present_variables() -> None:
    value = {"headers": {"X": "token {{ ENV.LAKEFSACTION_T }}!"}}
    rendered: set[str] = set()
    render_env(value, {"LAKEFSACTION_T": "t0ken"}, prefix="LAKEFSACTION_", rendered=rendered)
    assert rendered == {"t0ken"}
    assert render_env(value, {"LAKEFSACTION_T": "t"}, prefix="LAKEFSACTION_") == {"headers": {"X": "token t!"}}
    with pytest.raises(BadInput, match=r"f.yaml: props.headers.X: environment variable LAKEFSACTION_T is not set"):
        render_env(value, {}, prefix="LAKEFSACTION_", source="f.yaml", field="props")
    with pytest.raises(BadInput, match="HOME may not be used"):
        render_env("{{ENV.HOME}}", {"HOME": "/root"}, prefix="LAKEFSACTION_")
    assert render_env("{{ENV.HOME}}", {"HOME": "/root"}, prefix="") == "/root"


def test_durations_and_service_config() -> None:
    assert parse_duration("1d12h") == timedelta(days=1, hours=12)
    assert parse_duration(90) == timedelta(seconds=90)
    assert format_duration(timedelta(days=3, minutes=5)) == "3d5m"
    for bad in ("", "-1s", "5 parsecs", True, 0):
        with pytest.raises(BadInput):
            parse_duration(bad)
    cfg = parse_service_config(
        {
            "api_token_env": "TOKEN",
            "protected_branches": [
                {"branch": "main", "mandatory_checks": ["a", "b"]},
                {"branch": "ma*", "repository": "sample", "mandatory_checks": ["b", "c"]},
            ],
            "default_timeout": "3d",
        },
        source="c.yaml",
        env={"TOKEN": "x" * 20},
    )
    assert cfg.api_token == "x" * 20 and cfg.default_timeout == timedelta(days=3)
    assert cfg.mandatory_checks("sample", "main") == ["a", "b", "c"]
    assert cfg.mandatory_checks("other", "main") == ["a", "b"]
    assert not cfg.is_protected("sample", "dev")
    with pytest.raises(BadInput, match="c.yaml: protected_branches.0..mandatory_checks"):
        parse_service_config({"protected_branches": [{"branch": "main", "mandatory_checks": "a"}]}, source="c.yaml", env={})
    with pytest.raises(BadInput, match="unknown keys"):
        parse_service_config({"protected": []}, source="c.yaml", env={})
    with pytest.raises(BadInput, match="api_token_env: environment variable 'NOPE' is not set"):
        parse_service_config({"api_token_env": "NOPE"}, source="c.yaml", env={})


def test_reaper_interval_and_its_former_name() -> None:
    """``reaper_interval`` is how often the timeout reaper runs; configs written when it was
    called the sweeper say ``sweep_interval`` and load the same; saying both is ambiguous."""
    assert parse_service_config({}, source="c.yaml", env={}).reaper_interval == timedelta(seconds=30)
    assert parse_service_config({"reaper_interval": "5s"}, source="c.yaml", env={}).reaper_interval == timedelta(seconds=5)
    assert parse_service_config({"sweep_interval": "7s"}, source="c.yaml", env={}).reaper_interval == timedelta(seconds=7)
    with pytest.raises(BadInput, match="c.yaml: sweep_interval: give reaper_interval only"):
        parse_service_config({"reaper_interval": "5s", "sweep_interval": "7s"}, source="c.yaml", env={})
    with pytest.raises(BadInput, match="c.yaml: sweep_interval"):
        parse_service_config({"sweep_interval": "soon"}, source="c.yaml", env={})


def test_executor_property_errors() -> None:
    def check(props: dict, type_: str = "webhook") -> str:
        with pytest.raises(BadInput) as info:
            EXECUTORS[type_].validate(props, source="f.yaml", field="p")
        return str(info.value)

    assert "p.url: must be an http(s) URL" in check({"url": "ftp://x"})
    assert "webhook needs a url" in check({})
    assert "headers must map names to strings" in check({"url": "http://x", "headers": {"a": {"b": 1}}})
    assert "unknown webhook properties ['urls']" in check({"url": "http://x", "urls": 1})
    assert "airflow needs dag_id" in check({"url": "http://x"}, "airflow")
    assert "api_version must be v1 or v2" in check({"url": "http://x", "dag_id": "d", "token": "t", "api_version": "v9"}, "airflow")
    assert "username and password, or token" in check({"url": "http://x", "dag_id": "d"}, "airflow")


def broken_service(snapshot, service_factory, text: str, **kwargs):
    snapshot.commit({"_lakefs_actions/checks.yaml": text if text.startswith("name") else HEAD + text}, branch="main")
    snapshot.write()
    return service_factory(snapshot.directory, **kwargs)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("checks: [", "_lakefs_actions/checks.yaml: lakeFS rejects this action file: invalid YAML"),
        ("name: checks\nchecks: []\n", "_lakefs_actions/checks.yaml: lakeFS rejects this action file: 'on' is required"),
        ("checks:\n  - type: webhook\n", "checks[0].id: check has no id"),
        ("checks:\n  - id: a\n    properties: {}\n", "checks[a].type: check has no type"),
        ("checks:\n  - {id: a, type: lambda}\n", "unknown check type 'lambda'"),
        (
            "checks:\n  - {id: a, type: webhook, properties: {url: 'http://127.0.0.1:9'}}\n"
            "  - {id: a, type: webhook, properties: {url: 'http://127.0.0.1:9'}}\n",
            "duplicate check id 'a'",
        ),
        (
            "checks:\n  - id: a\n    type: webhook\n    properties:\n      url: http://127.0.0.1:9\n"
            "      headers: {Authorization: 'Bearer {{ ENV.LAKEFSACTION_MISSING }}'}\n",
            "checks[a].properties.headers.Authorization: environment variable LAKEFSACTION_MISSING is not set",
        ),
    ],
)
def test_trigger_with_bad_action_file_is_400_and_changes_nothing(snapshot, service_factory, text, expected) -> None:
    live = broken_service(snapshot, service_factory, text)
    answer = live.trigger("main")
    assert answer.status_code == 400
    assert expected in answer.json()["error"]
    assert live.checks("main") == {}


def test_bad_requests(snapshot, receiver, service_factory) -> None:
    receiver.mode = "record"
    commit = snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["a"])}, branch="main")
    snapshot.write()
    live = service_factory(snapshot.directory, {"protected_branches": [{"branch": "main", "mandatory_checks": ["a"]}]})
    live.trigger("main")
    callback = receiver.events(1)[0]["callback_url"]
    live.wait_for("main", "a", {"EXECUTING"})

    unknown = requests.post(callback, json={"status": "DONE"}, timeout=10)
    assert unknown.status_code == 400
    assert unknown.json() == {"error": "status: Input should be 'SUCCESS' or 'FAILED'", "field": "status"}
    assert requests.post(callback, json={"status": "SUCCESS", "metadata": {"n": 3}}, timeout=10).status_code == 400
    assert requests.post(callback, data=b"{nope", timeout=10).status_code == 400
    assert requests.post(callback, json=["SUCCESS"], timeout=10).status_code == 400
    assert live.checks(commit)["a"]["status"] == "EXECUTING"  # none of that used the token up

    assert requests.get(live.checks_url("nope"), timeout=10).status_code == 404
    assert requests.get(live.checks_url("main", repo="other"), timeout=10).json()["error"] == "repository 'other' not found"
    assert requests.get(f"{live.url}/api/v1/nothing", timeout=10).status_code == 404
    assert live.retry("main", "a").status_code == 409
    assert live.retry("main", "zzz").status_code == 404
    wrong = requests.post(f"{live.checks_url('main')}/a/retry", headers={"Authorization": "Bearer wrong"}, timeout=10)
    assert wrong.status_code == 401

    gate = f"{live.url}/api/v1/hooks/pre-merge"
    assert requests.post(gate, json={"event_type": "pre-commit", "repository_id": "sample"}, timeout=10).status_code == 400
    missing = requests.post(gate, json={"event_type": "pre-merge", "repository_id": "sample", "branch_id": "main"}, timeout=10)
    assert missing.status_code == 400 and missing.json()["field"] == "source_ref"
    unknown_source = live.gate("main", "0" * 64)
    assert unknown_source.status_code == 412
