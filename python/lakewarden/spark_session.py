"""The one embedded Spark session a lakewarden process uses.

dbt-spark's ``session`` method calls ``SparkSession.builder.getOrCreate()``, so whoever builds
the session first decides the warehouse and metastore. Building it here, before dbt runs, keeps
the warehouse and the Derby metastore at absolute paths under the state directory, whatever the
working directory is, and lets the runner, dbt and the sweep share one JVM (JVM start costs ~10 s).
Under ``spark-submit`` the cluster's session already exists and is reused as is.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

DEFAULT_STATE_DIR = ".lakewarden"


def state_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Resolve the state directory: ``--state``, else ``LAKEWARDEN_HOME``, else ``./.lakewarden``."""
    raw = explicit or os.environ.get("LAKEWARDEN_HOME") or DEFAULT_STATE_DIR
    return Path(raw).expanduser().resolve()


def spark_conf(state: Path) -> dict[str, str]:
    """Static Spark settings for the embedded engine (also written into the dbt profile)."""
    warehouse = state / "warehouse"
    metastore = state / "metastore_db"
    log4j = Path(__file__).with_name("log4j2.properties")
    return {
        "spark.sql.warehouse.dir": str(warehouse),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={metastore};create=true",
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={state} -Dderby.stream.error.file={state / 'derby.log'} "
            f"-Dlog4j2.configurationFile={log4j.as_uri()}"
        ),
        # The embedded engine talks to nothing but itself: bind the driver to loopback.
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.sql.shuffle.partitions": os.environ.get("LAKEWARDEN_SHUFFLE_PARTITIONS", "8"),
        "spark.sql.ansi.enabled": "false",
        "spark.ui.enabled": "false",
        "spark.driver.memory": os.environ.get("LAKEWARDEN_DRIVER_MEMORY", "4g"),
        "spark.sql.legacy.createHiveTableByDefault": "false",
    }


def under_spark_submit() -> bool:
    """True when spark-submit started this process: its launcher hands the Python driver a
    gateway to the JVM it already configured (PYSPARK_GATEWAY_PORT)."""
    return bool(os.environ.get("PYSPARK_GATEWAY_PORT"))


def get_or_create(state: Path, *, app_name: str = "lakewarden", master: str | None = None) -> "SparkSession":
    """Return the active session, or start the embedded one with Hive support under ``state``."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name).enableHiveSupport()
    # Under spark-submit the cluster's session: master, warehouse and metastore come from
    # spark-submit, spark-defaults.conf and hive-site.xml, never from the embedded settings.
    if not under_spark_submit():
        state.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        master = master or os.environ.get("LAKEWARDEN_SPARK_MASTER", "local[*]")
        builder = builder.master(master)
        if master.startswith("local"):
            # Python workers must import lakewarden: run them with this interpreter (the venv's),
            # not whatever python3 is first on PATH (SparkContext reads PYSPARK_PYTHON).
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        for key, value in spark_conf(state).items():
            builder = builder.config(key, value)
    session = builder.getOrCreate()
    # Spark logs failed tasks (e.g. a malformed snapshot line) as ERROR with JVM stack traces;
    # lakewarden reports those errors itself in one line, so only FATAL goes to the terminal.
    session.sparkContext.setLogLevel(os.environ.get("LAKEWARDEN_SPARK_LOG_LEVEL", "FATAL"))
    return session
