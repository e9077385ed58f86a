"""A job that fails on bad input leaves no JVM behind in the caller's process (the Python API's
callers live long: an Airflow worker, a notebook). Each case runs in a fresh interpreter, where
no Spark session exists before the job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# first_process: the second pytest process of scripts/test.sh was the command's longest (by
# about a minute: 1,073 s against 975 s); these fresh interpreters (~40 s) run in the first
# instead, beside the embedded tests (conftest.py)
pytestmark = pytest.mark.first_process

NO_SOURCE = """
import threading
from pyspark import SparkContext
from lakewarden import api
from lakewarden.errors import BadInput
from lakewarden.jobs.options import RunOptions
try:
    api.gc_committed(RunOptions(dry_run=True, state=STATE))
    raise SystemExit("no BadInput")
except BadInput as exc:
    message = str(exc)
print(json.dumps({
    "message": message,
    "starting": [t.name for t in threading.enumerate() if t.name == "lakewarden-spark-start"],
    "spark": SparkContext._active_spark_context is not None,
}))
"""

BAD_SNAPSHOT = """
from pyspark import SparkContext
from lakewarden import api
from lakewarden.errors import BadInput
from lakewarden.jobs.options import RunOptions
from lakewarden.runtime import spark_session
starters = []
original = spark_session.SparkStarter.__init__
def keep(self, *args, **kwargs):
    original(self, *args, **kwargs)
    starters.append(self)
spark_session.SparkStarter.__init__ = keep
try:
    api.gc_committed(RunOptions(snapshot=SNAPSHOT, dry_run=True, state=STATE))
    raise SystemExit("no BadInput")
except BadInput as exc:
    message = str(exc)
for starter in starters:
    starter._thread.join()  # the JVM came up after the job had given up
print(json.dumps({"message": message, "starters": len(starters), "spark": SparkContext._active_spark_context is not None}))
"""


def run_script(script: str, **values: Path) -> dict:
    prelude = "import json\nfrom pathlib import Path\n" + "".join(f"{name} = Path({str(value)!r})\n" for name, value in values.items())
    env = {key: value for key, value in os.environ.items() if not key.startswith("LAKEWARDEN_")}
    env["LAKEWARDEN_PROGRESS"] = "off"
    # no JVM class archive kept at exit: on a fresh machine this process could be the suite's
    # first to end after starting a JVM, and keeping the archive then took it 29 s, not 7
    # (lakewarden.runtime.jvm_classes; test_jvm_classes.py tests the archive itself)
    env["LAKEWARDEN_JVM_CACHE"] = "off"
    result = subprocess.run([sys.executable, "-c", prelude + script], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_no_snapshot_and_no_repository_fails_before_a_jvm_starts(tmp_path: Path) -> None:
    found = run_script(NO_SOURCE, STATE=tmp_path / "state")
    assert "--snapshot" in found["message"]
    assert found["starting"] == [] and found["spark"] is False


def test_a_bad_snapshot_stops_the_session_started_for_it(tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    (snapshot / "repository.json").write_text("{not json")
    found = run_script(BAD_SNAPSHOT, SNAPSHOT=snapshot, STATE=tmp_path / "state")
    assert "repository.json" in found["message"]
    # the JVM was started beside the snapshot's check, and stopped once up: the job had failed
    assert found["starters"] == 1 and found["spark"] is False
