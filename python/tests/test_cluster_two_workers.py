"""A job on a real Spark standalone cluster: a master and two workers (1 core, 1g each) started
from pyspark's own launcher (``bin/spark-class``) on 127.0.0.1, the job submitted with
``spark-submit`` as the README shows, from the built wheel, and its marked addresses (with their
paths and rules) equal to what the lifecycle oracle (``lifecycle_oracle``, plain Python over the
snapshot) says a run must mark; the embedded runs are held to the same oracle in test_lifecycle.
The fixture always stops the cluster.

The job is ``lifecycle``: of the jobs it has the most steps (Python models walking the commit
graph, shuffles across both executors) and it writes state tables kept across runs (policy
history, range windows) from the executors. One submitted application, not one per job: each
costs a driver and two executor JVMs on the test machine's two cores (minutes); what differs
between the jobs (their models) runs the same way on a cluster as embedded, where every job is
tested."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Iterator

import pytest

from lakewarden.sample import SampleConfig, generate
from lifecycle_oracle import lifecycle_marked
from oracles import Snapshot
import report_files
from wheel_support import clean_env, installed_wheel

pytestmark = [pytest.mark.cluster]

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The six JVMs of this test (master, two workers, driver, two executors) on the test machine's
#: two cores, for one job on 700 entries: the JVM's quick compiler only and its serial collector.
#: With the defaults (the optimising compiler and a parallel collector in each JVM) the test used
#: 180 CPU seconds of the machine, with these 116 (wheel build and install included): the
#: other pytest process runs beside it. What the job marks does not depend on them; a real
#: cluster keeps its own settings.
SMALL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
POLICY = {"logs": {"prefix": "logs/", "days": 10, "enabled": True}, "events": {"prefix": "events/", "days": 20, "enabled": True, "branch_days": {"main": 12}}}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as response:
            return int(json.load(response).get("aliveworkers", 0))
    except OSError:
        return 0


#: the master's log line for each port it bound (Spark's Utils.startServiceOnPort)
MASTER_PORT = re.compile(r"Successfully started service '(sparkMaster|MasterUI)' on port (\d+)")


def master_ports(log: Path) -> dict[str, int]:
    """The ports the master bound, by service, as its log says. A port found free here may be
    taken by another process before the master binds it, and Spark then takes the next one up
    (seen once in CI: the UI on 46764, asked for 46763), so the ports asked for are not enough."""
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    return {service: int(port) for service, port in MASTER_PORT.findall(text)}


class Cluster:
    """A standalone master, launched, and two workers launched as soon as the master says on
    which port it listens (a thread of the fixture's); ``ready()`` waits until both workers have
    registered and gives the master URL. The test builds the wheel and its expectations while
    the three JVMs boot (both take tens of seconds on two cores)."""

    def __init__(self, processes: list[subprocess.Popen], logs: Path) -> None:
        self._processes, self._logs = processes, logs
        self.ports: dict[str, int] = {}
        self.booted = threading.Event()

    def fail(self, why: str) -> None:
        pytest.fail(f"the cluster did not come up ({why}): " + " | ".join((self._logs / f).read_text()[-500:] for f in sorted(os.listdir(self._logs))))

    def ready(self) -> str:
        deadline = time.monotonic() + 240
        if not self.booted.wait(timeout=240) or set(self.ports) != {"sparkMaster", "MasterUI"}:
            self.fail(f"the master's ports: {self.ports}")
        while alive_workers(self.ports["MasterUI"]) < 2:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self._processes):
                self.fail(f"alive workers on the master's UI port {self.ports['MasterUI']}: {alive_workers(self.ports['MasterUI'])}")
            time.sleep(1)
        return f"spark://127.0.0.1:{self.ports['sparkMaster']}"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A standalone master and two workers, launched (not yet waited for); stops them whatever happens."""
    home = spark_home()
    env = {
        **os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1",
        "SPARK_DAEMON_JAVA_OPTS": SMALL_JVM_OPTIONS,
    }
    logs = tmp_path / "cluster-logs"
    logs.mkdir()
    processes: list[subprocess.Popen] = []
    stopping = threading.Event()  # set before the cluster stops: no worker is launched after it

    def launch(name: str, *args: str) -> None:
        with open(logs / f"{name}.log", "wb") as sink:
            processes.append(
                subprocess.Popen([str(home / "bin" / "spark-class"), *args], stdout=sink, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            )

    cluster = Cluster(processes, logs)

    def launch_workers() -> None:
        deadline = time.monotonic() + 240
        try:
            while not stopping.is_set() and time.monotonic() < deadline and processes[0].poll() is None:
                cluster.ports = master_ports(logs / "master.log")
                if len(cluster.ports) == 2:
                    for number in (1, 2):
                        if not stopping.is_set():
                            launch(
                                f"worker-{number}", "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{cluster.ports['sparkMaster']}",
                                "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()),
                                "--work-dir", str(tmp_path / f"worker-{number}"),
                            )
                    return
                time.sleep(0.2)
        finally:
            cluster.booted.set()

    booting = threading.Thread(target=launch_workers, name="cluster-workers", daemon=True)
    try:
        launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()))
        booting.start()
        yield cluster
    finally:
        stopping.set()
        if booting.is_alive():
            booting.join()  # at most one launch away: it checks `stopping` before each
        for process in reversed(processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def submit_command(master: str, state: Path, bin_dir: Path) -> list[str]:
    """spark-submit as the README's cluster section shows it, with the built wheel installed in a
    fresh venv: its entry point, its Python for driver and executors, the warehouse under the
    state dir (Spark's in-memory catalog: no metastore to configure)."""
    python = str(bin_dir / "python")
    entry = subprocess.run(
        [python, "-c", "import lakewarden, os; print(os.path.join(os.path.dirname(lakewarden.__file__), '__main__.py'))"],
        env=clean_env(), capture_output=True, text=True, check=True,
    ).stdout.strip()
    return [
        str(bin_dir / "spark-submit"),
        "--master", master,
        "--total-executor-cores", "2", "--executor-cores", "1", "--executor-memory", "1g", "--driver-memory", "1g",
        "--conf", f"spark.pyspark.python={python}",
        "--conf", f"spark.pyspark.driver.python={python}",
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.driver.bindAddress=127.0.0.1",
        "--conf", f"spark.sql.warehouse.dir={state / 'warehouse'}",
        "--conf", "spark.sql.session.timeZone=UTC",
        "--conf", "spark.sql.legacy.createHiveTableByDefault=false",
        "--conf", "spark.ui.enabled=false",
        # the test machine's settings, not the README's: see SMALL_JVM_OPTIONS
        "--conf", f"spark.driver.extraJavaOptions={SMALL_JVM_OPTIONS}",
        "--conf", f"spark.executor.extraJavaOptions={SMALL_JVM_OPTIONS}",
        entry,
    ]


def marked(report: Path) -> dict[str, tuple[list[str], list[str]]]:
    """physical address -> (paths, matched rules), as addresses.csv lists them."""
    return {row["physical_address"]: (row["paths"].split(";"), row["matched_rules"].split(";")) for row in report_files.address_rows(report)}


def test_lifecycle_on_two_workers_marks_what_the_oracle_marks(cluster: Cluster, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    # while the cluster boots: the wheel (shared with test_wheel), the sample, the oracle's answer
    bin_dir = installed_wheel(tmp_path_factory.getbasetemp() / "wheel")
    sample = generate(tmp_path / "sample", SampleConfig(seed=21, entries=700))
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    now = sample.end + timedelta(days=2)
    expected = {
        physical: (found["paths"], found["matched_rules"])
        for physical, found in lifecycle_marked(Snapshot.read(sample.snapshot_dir), POLICY, now).items()
    }
    assert expected, "the sample should give the policy something to mark"
    state, report = tmp_path / "cluster-state", tmp_path / "cluster-report"
    # the wheel only, no checkout; the venv activated (its spark-submit finds SPARK_HOME through
    # the python first on PATH)
    env = clean_env(LAKEWARDEN_TARGET="cluster", LAKEWARDEN_HOME=str(state))
    env.pop("SPARK_HOME", None)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    job = ["lifecycle", "--policy", str(tmp_path / "policy.json"), "--snapshot", str(sample.snapshot_dir)]
    result = subprocess.run(
        [*submit_command(cluster.ready(), state, bin_dir), *job, "--now", now.strftime("%Y-%m-%dT%H:%M:%SZ"), "--dry-run", "--state", str(state), "--report", str(report)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    summary = report_files.summary(report)
    assert summary["success"] is True and summary["num_marked"] == len(expected)
    assert marked(report) == expected
    assert (report / "report.html").is_file()
    # each worker ran an executor of the submitted application
    for number in (1, 2):
        assert list((tmp_path / f"worker-{number}").glob("app-*/*/stderr")), f"worker {number} ran no executor"
