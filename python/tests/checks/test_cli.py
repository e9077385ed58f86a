"""``lakewarden checks ...``: client commands against a live service, and ``serve`` as a process."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from checks_support import API_TOKEN, REPO, webhook_actions
from lakewarden.checks import cli as checks_cli
from lakewarden.errors import BadInput

REPO_ROOT = Path(__file__).resolve().parents[3]


def run_cli(argv: list[str]) -> int:
    """Parse and run like ``lakewarden.cli.main`` does (BadInput -> 2), with only our commands."""
    parser = argparse.ArgumentParser(prog="lakewarden")
    checks_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except BadInput as exc:
        print(f"lakewarden: {exc}", file=sys.stderr)
        return 2


@pytest.fixture
def live(snapshot, receiver, service_factory, monkeypatch):
    receiver.result = {"status": "FAILED", "metadata": {"nulls": "2", "column": "price"}}
    receiver.log_text = "reading prices\n2 rows with null price\n"
    snapshot.commit(
        {"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["nulls", "schema"], properties={"output_url": "http://logs.example/{{ execution_id }}"})},
        message="add prices",
        branch="main",
    )
    snapshot.write()
    service = service_factory(snapshot.directory)
    monkeypatch.setenv("LAKEWARDEN_CHECKS_URL", service.url)
    monkeypatch.setenv("LAKEWARDEN_CHECKS_TOKEN", API_TOKEN)
    return service


def test_run_list_show_retry(live, receiver, capsys) -> None:
    uri = f"lakefs://{REPO}/main"
    assert run_cli(["checks", "run", uri, "--wait", "20"]) == 1  # both checks FAILED
    out = capsys.readouterr().out
    assert "nulls" in out and "FAILED" in out and "CHECK" in out

    assert run_cli(["checks", "list", uri, "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert {c["id"]: c["status"] for c in listing["checks"]} == {"nulls": "FAILED", "schema": "FAILED"}

    assert run_cli(["checks", "show", uri, "--id", "nulls"]) == 0
    shown = capsys.readouterr().out
    assert "column = price" in shown and "nulls = 2" in shown
    assert f"log link:     http://logs.example/{listing['checks'][0]['execution_id']}" in shown
    assert "    | 2 rows with null price" in shown  # the executor's log, from the event's output_url
    assert "NOT mergeable" not in shown  # no protected branch in this config: no merge lines

    receiver.result = {"status": "SUCCESS", "metadata": {}}
    assert run_cli(["checks", "retry", uri, "--id", "nulls", "--json"]) == 0
    retried = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in retried["checks"]] == ["nulls"] and retried["checks"][0]["attempt"] == 2
    live.wait_for("main", "nulls", {"SUCCESS"})

    assert run_cli(["checks", "retry", uri]) == 0  # retries every FAILED/LOST one: schema
    assert "schema" in capsys.readouterr().out
    live.wait_for("main", "schema", {"SUCCESS"})
    assert run_cli(["checks", "retry", uri]) == 0
    assert "nothing to retry" in capsys.readouterr().out

    assert run_cli(["checks", "retry", uri, "--id", "nulls"]) == 2  # SUCCESS cannot be retried
    assert "only FAILED or LOST checks can be retried (HTTP 409)" in capsys.readouterr().err
    assert run_cli(["checks", "run", uri, "--json"]) == 0
    assert [c["triggered"] for c in json.loads(capsys.readouterr().out)["checks"]] == [False, False]


def test_client_bad_input(live, capsys, monkeypatch) -> None:
    assert run_cli(["checks", "list", "s3://bucket/x"]) == 2
    assert "expected lakefs://REPOSITORY/REF" in capsys.readouterr().err
    assert run_cli(["checks", "list", f"lakefs://{REPO}/nope"]) == 2
    assert "ref 'nope' not found" in capsys.readouterr().err
    assert run_cli(["checks", "run", f"lakefs://{REPO}/main", "--token", "wrong"]) == 2
    assert "missing or wrong API token" in capsys.readouterr().err
    assert run_cli(["checks", "show", f"lakefs://{REPO}/main", "--id", "nope"]) == 2


def test_serve_process_end_to_end(snapshot, receiver, tmp_path) -> None:
    """The real ``lakewarden checks serve`` process: config file, SQLite under --state, SIGTERM."""
    commit = snapshot.commit({"_lakefs_actions/c.yaml": webhook_actions(receiver.url, ["rows"])}, branch="main")
    snapshot.write()
    config = tmp_path / "checks.yaml"
    config.write_text("protected_branches:\n  - branch: main\n    mandatory_checks: [rows]\nsweep_interval: 1s\n")
    state = tmp_path / "state"
    exe = Path(sys.executable).parent / "lakewarden"
    proc = subprocess.Popen(
        [str(exe), "checks", "serve", "--snapshot", str(snapshot.directory), "--port", "0", "--config", str(config), "--state", str(state)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert "serving on http://127.0.0.1:" in line, line + proc.stderr.read()  # type: ignore[union-attr]
        url = line.split("serving on ")[1].split()[0]
        token = (state / "checks-api-token").read_text().strip()
        env = {**os.environ, "LAKEWARDEN_CHECKS_URL": url}
        env.pop("LAKEWARDEN_CHECKS_TOKEN", None)
        run = subprocess.run(
            [str(exe), "checks", "run", f"lakefs://{REPO}/main", "--wait", "20", "--state", str(state)],
            env=env, capture_output=True, text=True, timeout=60,
        )
        assert run.returncode == 0, run.stderr
        assert "SUCCESS" in run.stdout
        gate = requests.post(
            f"{url}/api/v1/hooks/pre-merge",
            json={"event_type": "pre-merge", "repository_id": REPO, "branch_id": "main", "source_ref": commit},
            timeout=10,
        )
        assert gate.status_code == 200
        assert token and (state / "checks.sqlite").is_file()
        bad = subprocess.run([str(exe), "checks", "serve", "--snapshot", str(tmp_path / "missing")], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and "no repository.json" in bad.stderr
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.stdout.close()  # type: ignore[union-attr]
            proc.stderr.close()  # type: ignore[union-attr]
