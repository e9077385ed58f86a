"""Locate the dbt project and run dbt in this process, on this process's Spark session.

Running dbt through ``dbtRunner`` (not a subprocess) is what lets the runner, dbt's session
connection and the sweep share one JVM.

The project is parsed once per project version, not once per run: the parsed manifest is kept
as msgpack keyed by a fingerprint of the project's files and dbt's version (under the project's
``target/``, or the user's cache directory when that is read-only), so a run loads it in a
fraction of a second instead of parsing for ~3 s. The first run after an install or a change
of the models pays the parse.

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
#: SQL statements dbt has sent in this process (its ``SQLQuery`` events), for the run's summary.
SENT = {"queries": 0}
PROJECT_PARTS = ("dbt_project.yml", "models", "macros", "tests", "seeds", "profiles")
MANIFEST_CACHE = "lakewarden-manifest"


def project_fingerprint(project: Path) -> str:
    """Identity of everything dbt parses: each file's path and bytes under the project's parts,
    and dbt's own version (a manifest is only read back by the dbt that wrote it)."""
    import hashlib

    digest = hashlib.sha256(f"dbt {dbt_version()}\n".encode())
    for part in PROJECT_PARTS:
        root = project / part
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
        for file in files:
            digest.update(f"{file.relative_to(project).as_posix()}\0".encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:24]


def dbt_version() -> str:
    """dbt-core's version from its distribution's metadata (importing dbt costs ~0.3 s)."""
    from importlib.metadata import version

    return version("dbt-core")


def manifest_cache_dirs(project: Path) -> list[Path]:
    """Where a parsed manifest may be found or kept: the project's ``target/`` (a checkout, or the
    copy an installed wheel carries), then the user's cache directory (a read-only install)."""
    from lakewarden.runtime.user_cache import user_cache_dir

    return [project / "target" / MANIFEST_CACHE, user_cache_dir() / MANIFEST_CACHE]


def parsed_manifest(location: Sequence[str]) -> Any:
    """The project's parsed manifest, once per process, from the cache when the project is
    unchanged (see the module docstring).

    It is parsed without the run's ``--vars`` (every model's refs are unconditional, and the
    sources' schema is the default one), so one manifest serves every run; the run's variables
    still apply when dbt compiles each node.
    """
    project = project_dir()
    # keyed by the project's fingerprint too: a process that outlives a change of the models
    # (the test suite) never compiles the new files with the old manifest
    key = (*location, project_fingerprint(project))
    if key not in _MANIFESTS:
        _MANIFESTS[key] = _load_or_parse(project, location)
    return _MANIFESTS[key]


def _load_or_parse(project: Path, location: Sequence[str]) -> Any:
    from dbt.contracts.graph.manifest import Manifest
    from dbt.parser.manifest import extended_mashumuro_decoder

    name = f"manifest-{project_fingerprint(project)}.msgpack"
    for directory in manifest_cache_dirs(project):
        cached = directory / name
        if cached.is_file():
            try:
                return Manifest.from_msgpack(cached.read_bytes(), decoder=extended_mashumuro_decoder)
            except Exception:  # noqa: BLE001 - a damaged cache file is parsed again
                log.debug("cached manifest %s unreadable; parsing", cached, exc_info=True)
    manifest = parse_project(location)
    save_manifest(manifest, project, name)
    return manifest


def parse_project(location: Sequence[str]) -> Any:
    """``dbt parse`` of the project in this process; the Manifest."""
    from dbt.cli.main import dbtRunner

    verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
    quiet = ["--log-level", "info" if verbose else "none", "--log-level-file", "debug"]
    result = dbtRunner().invoke(["parse", *location, *quiet])
    if result.exception is not None or not result.success:
        raise DbtFailed(f"dbt parse failed: {result.exception or 'see the dbt log'}")
    return result.result


def save_manifest(manifest: Any, project: Path, name: str) -> Path | None:
    """Keep the manifest in the first writable cache directory (atomically); None if none is."""
    import tempfile

    from dbt.parser.manifest import extended_mashumaro_encoder

    data = manifest.to_msgpack(extended_mashumaro_encoder)
    for directory in manifest_cache_dirs(project):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=directory, prefix=".manifest-")
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.replace(temporary, directory / name)
            return directory / name
        except OSError:
            continue
    return None


def dbt_location(state: Path) -> list[str]:
    """The dbt flags that place the project, profiles, target and logs for a state dir."""
    project = project_dir()
    return [
        "--project-dir",
        str(project),
        "--profiles-dir",
        str(project / "profiles"),
        "--target-path",
        str(state / "target"),
        "--log-path",
        str(state / "logs"),
    ]


def warm_up(state: Path) -> None:
    """Import dbt and load the manifest now (while the JVM starts on another thread), so the
    first build pays neither."""
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    import dbt.cli.main  # noqa: F401

    parsed_manifest(dbt_location(state))


def run_dbt(args: Sequence[str], *, state: Path, variables: Mapping[str, Any] | None = None) -> Any:
    """Run one dbt command (``["build", "--select", ...]``) and raise DbtFailed unless it succeeds.

    ``state`` is exported as ``LAKEWARDEN_HOME`` so the profile's paths match the session the
    caller already started.
    """
    from dbt.cli.main import dbtRunner

    os.environ["LAKEWARDEN_HOME"] = str(state)
    # dbt would otherwise phone home with usage events and write profiles/.user.yml, which in an
    # installed wheel is site-packages: lakewarden talks to nothing it was not asked to
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    location = dbt_location(state)
    command = [*args, *location]
    if variables:
        command += ["--vars", json.dumps(dict(variables))]
    verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
    command += ["--log-level", "info" if verbose else "none", "--log-level-file", "debug"]
    log.debug("dbt %s", " ".join(command))
    manifest = parsed_manifest(location) if args and args[0] != "parse" else None
    from lakewarden.runtime.progress import phase

    with phase(f"dbt {' '.join(args[:1])} {_selection(args)}".rstrip(), unit="nodes") as bar:

        def on_event(event: Any) -> None:
            name = event.info.name
            if name == "LogStartLine" and getattr(event.data, "total", 0):
                bar.set_total(int(event.data.total))
            elif name == "NodeFinished":
                bar.advance()
            elif name == "SQLQuery":
                SENT["queries"] += 1

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


def compile_nodes(args: Sequence[str], *, state: Path, variables: Mapping[str, Any]) -> list[Any]:
    """``dbt compile`` of a selection with this run's variables, on the cached manifest: the
    selected nodes with their compiled code, for lakewarden.runtime.compiled_models to execute.

    No relation cache is populated and no JSON artefact written: the runner's session holds the
    relations, and compiling costs Jinja only (~0.5 s for a job's nodes)."""
    from dbt.cli.main import dbtRunner

    os.environ["LAKEWARDEN_HOME"] = str(state)
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    location = dbt_location(state)
    verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
    command = [
        "compile", *args, *location, "--no-populate-cache", "--no-write-json",
        "--vars", json.dumps(dict(variables)),
        "--log-level", "info" if verbose else "none", "--log-level-file", "debug",
    ]
    log.debug("dbt %s", " ".join(command))

    def on_event(event: Any) -> None:
        if event.info.name == "SQLQuery":
            SENT["queries"] += 1

    result = dbtRunner(manifest=parsed_manifest(location), callbacks=[on_event]).invoke(command)
    if result.exception is not None:
        raise DbtFailed(f"dbt compile failed: {result.exception}") from result.exception
    if not result.success:
        failures = [
            f"{r.node.name}: {(r.message or r.status)}".strip()
            for r in getattr(result.result, "results", None) or []
            if str(getattr(r, "status", "")).lower() in {"error", "fail", "runtime error"}
        ]
        detail = "; ".join(failures[:5]) or f"see {state / 'logs' / 'dbt.log'}"
        raise DbtFailed(f"dbt compile failed: {detail}")
    executed = getattr(result.result, "results", None)
    if executed is None:  # dbt's compile always returns its node results; anything else is its bug
        raise DbtFailed(f"dbt compile returned {type(result.result).__name__}, not node results")
    return [node_result.node for node_result in executed]


def _selection(args: Sequence[str]) -> str:
    """The ``--select`` value of a dbt command, for the phase's name."""
    values = list(args)
    for flag in ("--select", "-s"):
        if flag in values and values.index(flag) + 1 < len(values):
            return values[values.index(flag) + 1]
    return ""
