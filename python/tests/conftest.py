"""Shared fixtures: one embedded Spark session for the whole test run (JVM start is ~10 s)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Generator

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
#: real SSTables written by lakeFS and by pebble (read-only; their origin in fixtures/lakefs-sstables/README.md)
SSTABLE_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lakefs-sstables"

# The tests read stderr as the command line's error channel (one line per error), as a script or
# cron job would run lakewarden: no progress lines there. test_progress checks the progress
# output itself on its own streams.
os.environ.setdefault("LAKEWARDEN_PROGRESS", "off")

# Every JVM the tests start, the suite's sessions and the processes they start (dbt from the
# checkout, a cluster's scripts, commands), on the runtime a job would choose
# (lakewarden.runtime.java_runtime): JAVA_HOME is set once, here, for all of them.
from lakewarden.runtime.java_runtime import describe_choice, use_java  # noqa: E402 - after the environment above

_JAVA = use_java()


def pytest_report_header() -> str:
    """The Java runtime of every JVM in the run, first in the log (CI's machine says which)."""
    return describe_choice(_JAVA)


@pytest.fixture(scope="session")
def test_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """State directory (scratch warehouse, state tables, run history) shared by every Spark test in this run."""
    return tmp_path_factory.mktemp("lakewarden-state")


@pytest.fixture(scope="session")
def spark(test_state_dir: Path):
    """The single embedded Spark session of the test run."""
    from pyspark import SparkContext

    from lakewarden.runtime.spark_session import get_or_create

    # A session someone else started (dbt's session connection, say, from a test that compiles
    # without this fixture) would carry its settings into every later test: no PYSPARK_PYTHON
    # for the Python workers, another warehouse. Say so here instead of failing far away.
    if SparkContext._active_spark_context is not None:  # noqa: SLF001 - the only way to ask
        pytest.fail("a Spark session was started before the suite's own: request the `spark` fixture in the test that started it")
    os.environ["LAKEWARDEN_HOME"] = str(test_state_dir)
    # Both of the JVM's compilers, C2's thresholds raised (spark_session.jit_mode's `full`): the
    # session runs for the whole suite, a hundred job runs and more, long enough for the
    # optimised code to pay for its compiling. Measured on 2 cores, the three job test modules
    # (test_lifecycle, test_gc_uncommitted, test_gc_committed; 53 tests) alone, in turn: quick
    # only 365 and 507 machine CPU seconds (262 and 360 s), raised thresholds 346 and 466 (223
    # and 299 s), C2's default thresholds 399 (245 s). In one warm session, a lifecycle, a
    # committed and an uncommitted dry run on the 600-entry sample a round, twelve rounds: about
    # 180 CPU seconds in all either way, the twelfth round 13.1 with quick against 9.5 raised.
    # (The quick compiler had been chosen on test_gc_committed.py alone: 118 CPU seconds
    # against 153, a session too short to pay back.)
    # It uses the JVM class archive when one is kept, and never writes one: a JVM that writes pays
    # for it as it runs and stops (spark_session.class_archive), and this one runs for the whole
    # suite. On a fresh machine none is kept during the suite (scripts/test.sh, --no-warm-up).
    session = get_or_create(test_state_dir, app_name="lakewarden-tests", master="local[2]", jit="full", write_archive=False)
    yield session
    session.stop()
    from lakewarden.runtime.jvm_classes import finish_pending

    finish_pending()  # an xdist worker may end without exit handlers: keep the JVM's class archive now


@pytest.fixture(scope="session")
def sstable_fixtures() -> Path:
    """The real lakeFS and pebble SSTables in python/tests/fixtures (read-only)."""
    return SSTABLE_FIXTURES


WHEEL_MARKERS = ("wheel", "cluster")


#: scripts/test.sh's first pytest process runs the serial tests first, alone, then the embedded
#: ones: it creates this file once the serial tests are done
SERIAL_DONE = "LAKEWARDEN_SERIAL_DONE"
#: a pytest process given these collects its tests, then runs none before this file exists or
#: the process of this pid has ended (without a pid it does not wait): scripts/test.sh starts
#: both of its processes while sqlfluff still runs, the first waiting for sqlfluff's pid, the
#: second for the first's serial tests (the file above) or its pid
START_AFTER, START_AFTER_PID = "LAKEWARDEN_START_AFTER", "LAKEWARDEN_START_AFTER_PID"
_last_serial: list[str] = []


def _serial_done() -> None:
    """Say the serial tests are done (scripts/test.sh's second pytest process runs its first test then)."""
    path = os.environ.get(SERIAL_DONE)
    if path and not Path(path).exists():
        Path(path).touch()


@pytest.hookimpl(wrapper=True)  # around pytest's own hook, which deselects by -m
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> Generator[None, None, None]:
    """The serial tests run first (alone: scripts/test.sh's second process runs its first test
    once they are done, :data:`SERIAL_DONE`); the tests that build and install the wheel run last (in
    their files' order): the suite's quick failures come first.

    Every test of a module that uses the embedded session (the ``spark`` fixture) is marked
    ``embedded``, before ``-m`` selects: scripts/test.sh runs ``-m embedded`` in one process
    (one driver JVM, warmed once) and the other tests in a second process beside it. A module
    marked ``second_process`` is not: it runs in the second process, on a session of its own
    started when its first test needs it; a module marked ``first_process`` (off the session)
    is marked ``embedded`` too and runs in the first: both even out the two processes' times."""
    items.sort(key=lambda item: (not item.get_closest_marker("serial"), any(item.get_closest_marker(name) for name in WHEEL_MARKERS)))
    on_session = {getattr(item, "module", None) for item in items if "spark" in getattr(item, "fixturenames", ())}
    for item in items:
        if item.get_closest_marker("first_process") or (
            getattr(item, "module", None) in on_session and not item.get_closest_marker("second_process")
        ):
            item.add_marker(pytest.mark.embedded)
    result = yield  # the selection is made: what is left of the serial tests runs first
    serial = [item.nodeid for item in items if item.get_closest_marker("serial")]
    _last_serial[:] = serial[-1:]
    if not serial:
        _serial_done()
    return result


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    if _last_serial and nodeid == _last_serial[0]:
        _serial_done()


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """In scripts/test.sh's processes: wait for what must end first before the first test
    (:data:`START_AFTER`): the first process waits for sqlfluff, the second for the first's
    serial tests (their latency promises are measured with nothing else running); the
    collection, done by now, ran beside them. Returns None: pytest's own loop runs the tests."""
    done = os.environ.get(START_AFTER)
    pid = int(os.environ.get(START_AFTER_PID) or 0)
    if not pid or not session.items or session.config.option.collectonly:
        return
    while not (done and Path(done).exists()) and _running(pid):
        time.sleep(0.2)


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, ended but not yet reaped by its parent, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _serial_done()  # stopped before the last serial test (-x, an interrupt): nothing waits for it


@pytest.fixture
def large_repository_forms() -> Generator[None, None, None]:
    """The test's job runs take the forms of a large repository (tests/model_forms.py): the same
    rows as the small one's, which the suite's small repositories take by default."""
    from model_forms import large_repository_forms as forms

    with forms():
        yield
