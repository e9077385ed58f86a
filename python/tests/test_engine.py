"""The engine (lakewarden.engine): a command handed to it runs as it would in its own process
(the same marks, output lines, exit statuses and one-line errors), a command it must not take
runs in its own process, and a run whose command goes away is cancelled without stopping it.

Every command handed to the engine is a process of its own, as a user runs it; one engine serves
the module. The run it is compared with runs on the suite's session (the CLI's entry point)."""

from __future__ import annotations

import csv
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lakewarden.engine.client import command_of, forwarded_run
from lakewarden.engine.protocol import VERSION, Frames, check_socket_path, code_fingerprint, engine_settings, send
from lakewarden.errors import BadInput
from lakewarden.sample import SampleConfig, SampleRepository, generate

PYTHON_DIR = Path(__file__).resolve().parents[1]
# on the embedded session (its first test's run without an engine): scripts/test.sh's first
# pytest process runs this module, its engine's processes beside the embedded tests

POLICY = {"logs": {"prefix": "logs/", "days": 14, "enabled": True}, "events": {"prefix": "events/", "days": 30}}


def command_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "LAKEWARDEN_ENGINE"}
    env["PYTHONPATH"] = os.pathsep.join(part for part in (str(PYTHON_DIR), env.get("PYTHONPATH", "")) if part)
    env["LAKEWARDEN_PROGRESS"] = "plain"
    return {**env, **extra}


def lakewarden(*args: str, env: dict[str, str], cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lakewarden", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> SampleRepository:
    return generate(tmp_path_factory.mktemp("engine-sample"), SampleConfig(seed=31, entries=600))


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    """An engine for this module, on a socket of its own (stopped at the end, killed if need be)."""
    root = tmp_path_factory.mktemp("engine")
    path = root / "e.sock"
    started = lakewarden("engine", "start", "--socket", str(path), "--idle-timeout", "600", "--jit", "quick", "--no-warm-up", env=command_env())
    assert started.returncode == 0, started.stderr
    status = json.loads(lakewarden("engine", "status", "--socket", str(path), env=command_env()).stdout)
    yield path
    stopped = lakewarden("engine", "stop", "--socket", str(path), env=command_env())
    if stopped.returncode != 0:  # pragma: no cover - only when the engine died already
        try:
            os.kill(status["pid"], 9)
        except ProcessLookupError:
            pass


def lifecycle_args(sample: SampleRepository, base: Path, name: str) -> list[str]:
    policy = base / "policy.json"
    policy.write_text(json.dumps(POLICY))
    now = (sample.end).isoformat().replace("+00:00", "Z")
    return ["lifecycle", "--dry-run", "--snapshot", str(sample.snapshot_dir), "--policy", str(policy), "--now", now,
            "--state", str(base / f"state-{name}"), "--report", str(base / f"report-{name}")]


def addresses(report: Path) -> list[tuple[str, ...]]:
    with open(report / "addresses.csv", newline="", encoding="utf-8") as handle:
        return sorted(tuple(row) for row in csv.reader(handle))


def without_run_ids(text: str) -> str:
    return re.sub(r"lifecycle-\d{8}T\d{6}Z-[0-9a-f]+", "RUN", text).replace("report-local", "REPORT").replace("report-engine", "REPORT")


def test_a_job_handed_to_the_engine_marks_and_prints_what_it_does_without_one(
    engine: Path, sample: SampleRepository, tmp_path: Path, spark, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run without an engine is the CLI's own entry point on the suite's session: the same
    code path as a command's own process from its arguments on (the process itself, a cold JVM,
    cost this test 80 CPU seconds in CI; the commands below that do run in their own process
    check what only a process has: its exit status and its stderr)."""
    from lakewarden.cli import main

    assert main(lifecycle_args(sample, tmp_path, "local")) == 0
    local_stdout = capsys.readouterr().out
    handed = lakewarden(*lifecycle_args(sample, tmp_path, "engine"), env=command_env(LAKEWARDEN_ENGINE=str(engine)))
    assert handed.returncode == 0, handed.stderr
    assert addresses(tmp_path / "report-engine") == addresses(tmp_path / "report-local")
    assert len(addresses(tmp_path / "report-local")) > 1  # a header and marked addresses
    # the same result lines on stdout (the queries and jobs counts differ: the engine's session is warm)
    def results(text: str) -> list[str]:
        return [line for line in without_run_ids(text).splitlines() if not line.startswith("work:")]

    assert results(handed.stdout) == results(local_stdout)
    assert any("marked" in line for line in results(local_stdout)), local_stdout  # lines to compare, not none
    assert "no engine" not in handed.stderr and "did not take" not in handed.stderr
    status = json.loads(lakewarden("engine", "status", "--socket", str(engine), env=command_env()).stdout)
    assert status["runs"] >= 1 and status["code"] == code_fingerprint()
    assert status["warm_up"] is None  # started with --no-warm-up (test_engine_warm_up.py runs one)
    # the log, where a run's output lands when its command went away, is its user's only, as the socket
    assert (engine.with_name(engine.name + ".log").stat().st_mode & 0o777) == 0o600


def test_bad_input_through_the_engine_is_exit_2_and_one_line_naming_the_file(engine: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-policy.json"
    args = ["lifecycle", "--dry-run", "--snapshot", str(tmp_path), "--policy", str(missing), "--state", str(tmp_path / "state")]
    local = lakewarden(*args, env=command_env())
    handed = lakewarden(*args, env=command_env(LAKEWARDEN_ENGINE=str(engine)))
    assert handed.returncode == local.returncode == 2
    assert handed.stderr.strip() == local.stderr.strip()
    assert handed.stderr.count("\n") == 1 and str(missing) in handed.stderr
    # relative paths are the command's: the engine runs in the command's directory
    relative = lakewarden(*[arg.replace(str(tmp_path) + "/", "") for arg in args], env=command_env(LAKEWARDEN_ENGINE=str(engine)), cwd=tmp_path)
    assert relative.returncode == 2 and "no-policy.json: no such file" in relative.stderr


def test_an_engine_started_with_other_settings_does_not_take_the_run(engine: Path, tmp_path: Path) -> None:
    args = ["lifecycle", "--policy", str(tmp_path / "missing.json"), "--state", str(tmp_path / "state")]
    ran = lakewarden(*args, env=command_env(LAKEWARDEN_ENGINE=str(engine), LAKEWARDEN_SHUFFLE_PARTITIONS="3"))
    lines = ran.stderr.strip().splitlines()
    assert "did not take this run" in lines[0] and "LAKEWARDEN_SHUFFLE_PARTITIONS" in lines[0], ran.stderr
    assert "running in this process" in lines[0]
    assert ran.returncode == 2 and "missing.json: no such file" in lines[-1]  # run here, as without an engine


def test_a_command_whose_engine_is_not_there_runs_in_its_own_process(tmp_path: Path) -> None:
    args = ["lifecycle", "--policy", str(tmp_path / "missing.json"), "--state", str(tmp_path / "state")]
    ran = lakewarden(*args, env=command_env(LAKEWARDEN_ENGINE=str(tmp_path / "none.sock")))
    lines = ran.stderr.strip().splitlines()
    assert lines[0].startswith("lakewarden: LAKEWARDEN_ENGINE: no engine at") and "running in this process" in lines[0]
    assert ran.returncode == 2 and "missing.json: no such file" in lines[-1]
    # a command the engine does not run never looks for one
    listed = lakewarden("sstable", "--help", env=command_env(LAKEWARDEN_ENGINE=str(tmp_path / "none.sock")))
    assert listed.returncode == 0 and "engine" not in listed.stderr


def test_a_run_whose_command_goes_away_is_cancelled_and_the_engine_takes_the_next(
    engine: Path, sample: SampleRepository, tmp_path: Path
) -> None:
    before = json.loads(lakewarden("engine", "status", "--socket", str(engine), env=command_env()).stdout)["runs"]
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(120)  # a test that stops by itself, whatever the engine does
    connection.connect(str(engine))
    send(connection, {"version": VERSION, "run": {
        "argv": lifecycle_args(sample, tmp_path, "gone"), "cwd": str(tmp_path), "env": command_env(),
        "code": code_fingerprint(), "settings": engine_settings(),
    }})
    first = Frames(connection).next()  # the run started: its first line came
    assert first is not None and "refused" not in first, first
    connection.close()  # the command went away (Ctrl-C twice, a killed shell)
    deadline = time.monotonic() + 120
    while True:  # the engine answers again once the cancelled run ended
        status = lakewarden("engine", "status", "--socket", str(engine), env=command_env(), timeout=150)
        if status.returncode == 0 or time.monotonic() > deadline:
            break
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["runs"] == before + 1
    again = lakewarden(*lifecycle_args(sample, tmp_path, "engine"), env=command_env(LAKEWARDEN_ENGINE=str(engine)))
    assert again.returncode == 0, again.stderr
    assert len(addresses(tmp_path / "report-engine")) > 1


def test_a_run_whose_directory_is_gone_fails_in_one_line_and_the_engine_goes_on(engine: Path, tmp_path: Path) -> None:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(120)  # a test that stops by itself, whatever the engine does
    connection.connect(str(engine))
    send(connection, {"version": VERSION, "run": {
        "argv": ["lifecycle", "--policy", "p.json"], "cwd": str(tmp_path / "gone"), "env": command_env(),
        "code": code_fingerprint(), "settings": engine_settings(),
    }})
    frames, got = Frames(connection), []
    while (frame := frames.next()) is not None:
        got.append(frame)
    connection.close()
    assert got == [{"err": f"lakewarden: cannot run in {tmp_path / 'gone'}: No such file or directory\n"}, {"exit": 1}]
    assert lakewarden("engine", "status", "--socket", str(engine), env=command_env()).returncode == 0


def test_start_refuses_a_socket_an_engine_listens_on_and_stop_ends_it(tmp_path: Path, engine: Path) -> None:
    again = lakewarden("engine", "start", "--socket", str(engine), env=command_env())
    assert again.returncode == 2 and again.stderr.strip() == f"lakewarden: --socket: an engine is running at {engine} already"
    assert lakewarden("engine", "status", "--socket", str(tmp_path / "none.sock"), env=command_env()).returncode == 1
    assert lakewarden("engine", "stop", "--socket", str(tmp_path / "none.sock"), env=command_env()).returncode == 1


def test_what_goes_to_an_engine_and_socket_paths() -> None:
    assert command_of(["-v", "lifecycle", "--full"]) == "lifecycle"
    assert command_of(["--verbose"]) is None
    assert forwarded_run(["checks", "serve"]) is None  # not a job: never handed over
    with pytest.raises(BadInput, match="longer than a Unix socket"):
        check_socket_path(Path("/tmp") / ("x" * 120))
