"""Locate the dbt project and run dbt in this process, on this process's Spark session.

Running dbt through ``dbtRunner`` (not a subprocess) is what lets the runner, dbt's session
connection and the sweep share one JVM and one Derby metastore connection.

dbt's own log lines go to ``STATE/logs/dbt.log`` only; stdout stays the job's. With ``-v``
(debug logging) they are shown as well. The build is one progress phase (``progress.phase``):
a bar over the selected nodes on a terminal, one line otherwise.
"""

from __future__ import annotations

import importlib.resources
import json
import logging
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from lakewarden.errors import LakewardenError

log = logging.getLogger(__name__)


class DbtFailed(LakewardenError):
    """A dbt command failed: a model errored or a data test found rows."""


PACKAGED_PROJECT = "dbt_project"


def project_dir() -> Path:
    """The dbt project root: ``LAKEWARDEN_PROJECT_DIR``; else the copy a built wheel carries as
    package data (``lakewarden/dbt_project``, see setup.py); else the checkout this package lives
    in (a source tree or an editable install)."""
    explicit = os.environ.get("LAKEWARDEN_PROJECT_DIR")
    if explicit:
        return Path(explicit).resolve()
    packaged = importlib.resources.files("lakewarden").joinpath(PACKAGED_PROJECT)
    if packaged.joinpath("dbt_project.yml").is_file():
        return Path(str(packaged))
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "dbt_project.yml").is_file():
            return parent
    raise LakewardenError(
        "cannot find dbt_project.yml above the lakewarden package; set LAKEWARDEN_PROJECT_DIR"
    )


_MANIFESTS: dict[tuple[str, ...], Any] = {}


def parsed_manifest(location: Sequence[str]) -> Any:
    """The project's parsed manifest, parsed once per process and project location.

    It is parsed without the run's ``--vars`` (every model's refs are unconditional, and the
    sources' schema is the default one), so dbt's partial parsing under the state dir's target/
    stays valid from one run to the next, and each run hands the manifest to dbt instead of
    parsing again; the run's variables still apply when dbt compiles each node.
    """
    from dbt.cli.main import dbtRunner

    key = tuple(location)
    if key not in _MANIFESTS:
        verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
        quiet = ["--log-level", "info" if verbose else "none", "--log-level-file", "debug"]
        result = dbtRunner().invoke(["parse", *location, *quiet])
        if result.exception is not None or not result.success:
            raise DbtFailed(f"dbt parse failed: {result.exception or 'see the dbt log'}")
        _MANIFESTS[key] = result.result
    return _MANIFESTS[key]


def run_dbt(args: Sequence[str], *, state: Path, variables: Mapping[str, Any] | None = None) -> Any:
    """Run one dbt command (``["build", "--select", ...]``) and raise DbtFailed unless it succeeds.

    ``state`` is exported as ``LAKEWARDEN_HOME`` so the profile's paths match the session the
    caller already started.
    """
    from dbt.cli.main import dbtRunner

    project = project_dir()
    os.environ["LAKEWARDEN_HOME"] = str(state)
    # dbt would otherwise phone home with usage events and write profiles/.user.yml, which in an
    # installed wheel is site-packages: lakewarden talks to nothing it was not asked to
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    location = [
        "--project-dir",
        str(project),
        "--profiles-dir",
        str(project / "profiles"),
        "--target-path",
        str(state / "target"),
        "--log-path",
        str(state / "logs"),
    ]
    command = [*args, *location]
    if variables:
        command += ["--vars", json.dumps(dict(variables))]
    verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
    command += ["--log-level", "info" if verbose else "none", "--log-level-file", "debug"]
    log.debug("dbt %s", " ".join(command))
    manifest = parsed_manifest(location) if args and args[0] != "parse" else None
    from lakewarden.progress import phase

    with phase(f"dbt {' '.join(args[:1])} {_selection(args)}".rstrip(), unit="nodes") as bar:

        def on_event(event: Any) -> None:
            name = event.info.name
            if name == "LogStartLine" and getattr(event.data, "total", 0):
                bar.set_total(int(event.data.total))
            elif name == "NodeFinished":
                bar.advance()

        result = dbtRunner(manifest=manifest, callbacks=[on_event]).invoke(command)
    if result.exception is not None:
        raise DbtFailed(f"dbt {' '.join(args)} failed: {result.exception}") from result.exception
    if not result.success:
        failures = []
        for node_result in getattr(result.result, "results", None) or []:
            status = str(getattr(node_result, "status", ""))
            if status.lower() in {"error", "fail", "runtime error"}:
                failures.append(f"{node_result.node.name}: {(node_result.message or status).strip()}")
        detail = "; ".join(failures[:5]) or f"see {state / 'logs' / 'dbt.log'}"
        raise DbtFailed(f"dbt {' '.join(args)} failed: {detail}")
    return result.result


def _selection(args: Sequence[str]) -> str:
    """The ``--select`` value of a dbt command, for the phase's name."""
    values = list(args)
    for flag in ("--select", "-s"):
        if flag in values and values.index(flag) + 1 < len(values):
            return values[values.index(flag) + 1]
    return ""
