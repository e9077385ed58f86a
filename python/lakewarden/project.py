"""Locate the dbt project and run dbt in this process, on this process's Spark session.

Running dbt through ``dbtRunner`` (not a subprocess) is what lets the runner, dbt's session
connection and the sweep share one JVM and one Derby metastore connection.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from lakewarden.errors import LakewardenError

log = logging.getLogger(__name__)


class DbtFailed(LakewardenError):
    """A dbt command failed: a model errored or a data test found rows."""


def project_dir() -> Path:
    """The dbt project root: ``LAKEWARDEN_PROJECT_DIR``, else the checkout this package lives in."""
    explicit = os.environ.get("LAKEWARDEN_PROJECT_DIR")
    if explicit:
        return Path(explicit).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "dbt_project.yml").is_file():
            return parent
    raise LakewardenError(
        "cannot find dbt_project.yml above the lakewarden package; set LAKEWARDEN_PROJECT_DIR"
    )


def run_dbt(args: Sequence[str], *, state: Path, variables: Mapping[str, Any] | None = None) -> Any:
    """Run one dbt command (``["build", "--select", ...]``) and raise DbtFailed unless it succeeds.

    ``state`` is exported as ``LAKEWARDEN_HOME`` so the profile's paths match the session the
    caller already started.
    """
    from dbt.cli.main import dbtRunner

    project = project_dir()
    os.environ["LAKEWARDEN_HOME"] = str(state)
    command = [
        *args,
        "--project-dir",
        str(project),
        "--profiles-dir",
        str(project / "profiles"),
        "--target-path",
        str(state / "target"),
        "--log-path",
        str(state / "logs"),
    ]
    if variables:
        command += ["--vars", json.dumps(dict(variables))]
    log.info("dbt %s", " ".join(args))
    result = dbtRunner().invoke(command)
    if result.exception is not None:
        raise DbtFailed(f"dbt {' '.join(args)} failed: {result.exception}") from result.exception
    if not result.success:
        failures = []
        for node_result in getattr(result.result, "results", None) or []:
            status = str(getattr(node_result, "status", ""))
            if status.lower() in {"error", "fail", "runtime error"}:
                failures.append(f"{node_result.node.name}: {(node_result.message or status).strip()}")
        detail = "; ".join(failures[:5]) or "see the dbt log above"
        raise DbtFailed(f"dbt {' '.join(args)} failed: {detail}")
    return result.result
