"""Check definitions (``_lakefs_actions/*.yaml``) and the service configuration file.

Both are parsed completely before anything is triggered: a bad action file or config raises
:class:`~lakewarden.errors.BadInput` naming the file and the field, and nothing changes state.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from lakewarden.checks.definitions import CheckDefinition, ExecutorEndpoint
from lakewarden.checks.executors import EXECUTORS
from lakewarden.durations import parse_duration
from lakewarden.errors import BadInput

#: Where lakeFS keeps action files; checks are read from the same objects as hooks.
ACTIONS_PREFIX = "_lakefs_actions/"

#: A check id appears in URL paths and DAG run ids, so it is kept to URL-safe characters.
CHECK_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")

DEFAULT_TIMEOUT = timedelta(hours=1)
#: lakeFS's ``actions.env.prefix`` default (pkg/config/defaults.go): action files written for lakeFS
#: read ``{{ ENV.LAKEFSACTION_... }}`` and must read the same variables here.
DEFAULT_ENV_PREFIX = "LAKEFSACTION_"

#: lakeFS's own rules for an action file (pkg/actions/action.go), restated: a file lakeFS rejects
#: fails every commit and merge of the repository, so checks are read only from files it accepts.
LAKEFS_ACTION_NAME = re.compile(r"[0-9A-Za-z_][0-9A-Za-z_\-. ]+")
LAKEFS_HOOK_ID = re.compile(r"[_a-zA-Z][\-_a-zA-Z0-9]{1,255}")
LAKEFS_EVENTS = frozenset(
    {
        "prepare-commit", "pre-commit", "post-commit", "pre-merge", "post-merge",
        "pre-create-tag", "post-create-tag", "pre-delete-tag", "post-delete-tag",
        "pre-create-branch", "post-create-branch", "pre-delete-branch", "post-delete-branch",
        "pre-revert", "post-revert", "pre-cherry-pick", "post-cherry-pick",
    }
)
#: Hook types lakeFS knows, with the property groups it requires (one key of each group).
LAKEFS_HOOK_PROPERTIES: dict[str, tuple[tuple[str, ...], ...]] = {
    "webhook": (("url",),),
    "airflow": (("url",), ("dag_id",), ("username",), ("password",)),
    "lua": (("script", "script_path"),),
}

#: The largest check timeout accepted: longer ones are typos, and huge numbers must not overflow.
MAX_TIMEOUT = timedelta(days=365)


def is_action_path(key: str) -> bool:
    """Whether an object key is an action file lakeFS would load (directly under the prefix)."""
    if not key.startswith(ACTIONS_PREFIX):
        return False
    name = key[len(ACTIONS_PREFIX) :]
    return "/" not in name and name.endswith((".yaml", ".yml"))


def lakefs_rejection(doc: Any) -> str | None:
    """Why lakeFS would refuse this parsed action file (its own wording), or None if it accepts it.

    The rules are lakeFS's ``Action.Validate``: ``name`` required and matching its pattern, ``on``
    required with known events (no ``branches`` for tag events), hook ids valid and unique, hook
    types known, and each type's required properties present. Keys lakeFS does not know (such as
    ``checks``) are ignored by lakeFS, which is what lets one file carry hooks and checks.
    """
    if not isinstance(doc, dict):
        return "an action file must be a mapping"
    name = doc.get("name")
    if name is None or name == "":
        return "'name' is required"
    if not isinstance(name, (str, int, float)) or isinstance(name, bool) or not LAKEFS_ACTION_NAME.fullmatch(str(name)):
        return "'name' is invalid"
    on = doc.get("on")
    if not isinstance(on, dict) or not on:
        return "'on' is required"
    for event, spec in on.items():
        if event not in LAKEFS_EVENTS:
            return f"event '{event}' is not supported"
        if spec is not None and not isinstance(spec, dict):
            return f"event '{event}': expected a mapping with 'branches'"
        branches = (spec or {}).get("branches")
        if branches is not None and not (isinstance(branches, list) and all(isinstance(b, str) for b in branches)):
            return f"event '{event}': 'branches' must be a list of names"
        if branches and str(event).endswith("-tag"):
            return "'branches' is not supported in tag event types"
    hooks = doc.get("hooks")
    if hooks is None:
        hooks = []
    if not isinstance(hooks, list):
        return "'hooks' must be a list"
    ids: set[str] = set()
    for i, hook in enumerate(hooks):
        if not isinstance(hook, dict):
            return f"hook[{i}] must be a mapping"
        hook_id = hook.get("id")
        if not isinstance(hook_id, str) or not LAKEFS_HOOK_ID.fullmatch(hook_id):
            return f"hook[{i}] missing ID"
        if hook_id in ids:
            return f"hook[{i}] duplicate ID '{hook_id}'"
        ids.add(hook_id)
        hook_type = hook.get("type")
        if hook_type not in LAKEFS_HOOK_PROPERTIES:
            return f"hook[{i}] type '{hook_id}' unknown"
        props = hook.get("properties")
        if not isinstance(props, dict):
            return f"hook[{i}] type '{hook_type}': missing hook properties"
        for group in LAKEFS_HOOK_PROPERTIES[hook_type]:
            if not any(key in props for key in group):
                wanted = "' or '".join(group)
                return f"hook[{i}] type '{hook_type}': '{wanted}' must be supplied in properties"
    return None


class ActionFileLoader(yaml.SafeLoader):
    """YAML as lakeFS (Go's yaml.v3) reads it: only true/false are booleans.

    PyYAML follows YAML 1.1, where the key ``on`` is the boolean True, so every action file's
    ``on:`` would vanish; yaml.v3 reads it as the string "on".
    """


ActionFileLoader.yaml_implicit_resolvers = {
    first: [r for r in resolvers if r[0] != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
ActionFileLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load_action_document(path: str, text: str | bytes) -> dict[str, Any]:
    """The parsed action file, or :class:`BadInput` with lakeFS's reason for rejecting it."""
    try:
        doc = yaml.load(text, Loader=ActionFileLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        detail = str(exc).replace("\n", " ")
        raise BadInput(f"lakeFS rejects this action file: invalid YAML: {detail}", source=path) from None
    reason = lakefs_rejection(doc)
    if reason is not None:
        raise BadInput(f"lakeFS rejects this action file: {reason}", source=path)
    assert isinstance(doc, dict)
    return doc


_CHECK_KEYS = {"id", "type", "properties", "description", "timeout", "executor"}


def parse_check_entries(
    raw_checks: Any, *, path: str, action_name: str, known_types: Iterable[str]
) -> list[CheckDefinition]:
    """The ``checks:`` list of an action file (or of the server config)."""
    types = set(known_types)
    if raw_checks is None:
        return []
    if not isinstance(raw_checks, list):
        raise BadInput("must be a list of checks", source=path, field="checks")
    out: list[CheckDefinition] = []
    seen: set[str] = set()
    for index, entry in enumerate(raw_checks):
        where = f"checks[{index}]"
        if not isinstance(entry, dict):
            raise BadInput("a check must be a mapping with id, type and properties", source=path, field=where)
        check_id = entry.get("id")
        if check_id is None or check_id == "":
            raise BadInput("check has no id", source=path, field=f"{where}.id")
        if not isinstance(check_id, str) or not CHECK_ID_PATTERN.fullmatch(check_id):
            raise BadInput(
                f"invalid check id {check_id!r} (letters, digits, '_', '.', '-')", source=path, field=f"{where}.id"
            )
        where = f"checks[{check_id}]"
        if check_id in seen:
            raise BadInput(f"duplicate check id {check_id!r}", source=path, field=where)
        seen.add(check_id)
        check_type = entry.get("type")
        if check_type is None or check_type == "":
            raise BadInput("check has no type", source=path, field=f"{where}.type")
        if check_type not in types:
            raise BadInput(
                f"unknown check type {check_type!r} (known: {', '.join(sorted(types))})",
                source=path,
                field=f"{where}.type",
            )
        properties = entry.get("properties", {})
        if properties is None:
            properties = {}
        if not isinstance(properties, dict):
            raise BadInput("properties must be a mapping", source=path, field=f"{where}.properties")
        description = entry.get("description", "")
        if not isinstance(description, str):
            raise BadInput("description must be a string", source=path, field=f"{where}.description")
        timeout = None
        if entry.get("timeout") is not None:
            timeout = parse_duration(entry["timeout"], source=path, field=f"{where}.timeout")
            if timeout > MAX_TIMEOUT:
                raise BadInput(f"timeout longer than {MAX_TIMEOUT.days} days", source=path, field=f"{where}.timeout")
        executor = entry.get("executor")
        if executor is not None and (not isinstance(executor, str) or not executor):
            raise BadInput("executor must name an executor of the server config", source=path, field=f"{where}.executor")
        unknown = set(entry) - _CHECK_KEYS
        if unknown:
            raise BadInput(f"unknown keys {sorted(unknown)}", source=path, field=where)
        out.append(
            CheckDefinition(
                id=check_id,
                type=check_type,
                properties=properties,
                source=path,
                action_name=action_name,
                description=description,
                timeout=timeout,
                executor=executor,
            )
        )
    return out


def parse_action_file(path: str, text: str | bytes, known_types: Iterable[str]) -> list[CheckDefinition]:
    """The checks of one action file; lakeFS must accept the file (see :func:`lakefs_rejection`)."""
    doc = load_action_document(path, text)
    return parse_check_entries(doc.get("checks"), path=path, action_name=str(doc["name"]), known_types=known_types)


def collect_checks(files: Iterable[tuple[str, str | bytes]], known_types: Iterable[str]) -> list[CheckDefinition]:
    """Every check of a commit's action files; a check id may be defined only once per commit."""
    types = list(known_types)
    by_id: dict[str, CheckDefinition] = {}
    names: dict[str, str] = {}
    for path, text in sorted(files, key=lambda item: item[0]):
        doc = load_action_document(path, text)
        name = str(doc["name"])
        if name in names:  # lakeFS refuses two actions of one name (validateActions)
            raise BadInput(
                f"lakeFS rejects this action file: action name '{name}' already loaded (from {names[name]})", source=path
            )
        names[name] = path
        for check in parse_check_entries(doc.get("checks"), path=path, action_name=name, known_types=types):
            if check.id in by_id:
                raise BadInput(
                    f"duplicate check id {check.id!r} (also defined in {by_id[check.id].source})",
                    source=path,
                    field=f"checks[{check.id}]",
                )
            by_id[check.id] = check
    return list(by_id.values())


@dataclass(frozen=True)
class ProtectedBranch:
    """A protection rule: merges into matching branches need every mandatory check SUCCESS."""

    branch: str
    mandatory_checks: tuple[str, ...]
    repository: str = "*"

    def matches(self, repository: str, branch: str) -> bool:
        return fnmatch.fnmatchcase(repository, self.repository) and fnmatch.fnmatchcase(branch, self.branch)


@dataclass(frozen=True)
class ServiceConfig:
    """The ``--config`` file of ``lakewarden checks serve``."""

    api_token: str | None = None
    public_url: str | None = None
    protected_branches: tuple[ProtectedBranch, ...] = ()
    executors: dict[str, ExecutorEndpoint] = field(default_factory=dict)
    #: Check definitions owned by the operator; a mandatory check defined here is never read
    #: from any branch.
    checks: tuple["CheckDefinition", ...] = ()
    default_timeout: timedelta = DEFAULT_TIMEOUT
    #: How often the timeout reaper looks for executions past their deadline (``sweep_interval``
    #: in configs written before the reaper had its name: still read).
    reaper_interval: timedelta = timedelta(seconds=30)
    env_prefix: str = DEFAULT_ENV_PREFIX
    #: How many rejected callbacks are kept; older ones are dropped (and counted).
    max_rejections: int = 10_000
    #: Rejected callbacks recorded per client (IP address, IPv6 /64) and minute; more are counted.
    rejections_per_client: int = 60
    #: How often a ``wait_for_dag`` Airflow run is polled (lakeFS polls every 5s).
    airflow_poll_interval: timedelta = timedelta(seconds=5)
    #: ``connections:`` of the config: overrides of :class:`~lakewarden.checks.connections.ConnectionLimits`.
    connection_limits: dict[str, float | int] = field(default_factory=dict)
    source: str = "<defaults>"

    def mandatory_checks(self, repository: str, branch: str) -> list[str]:
        """Union of the mandatory checks of every rule matching the branch, in config order."""
        out: list[str] = []
        for rule in self.protected_branches:
            if rule.matches(repository, branch):
                out.extend(c for c in rule.mandatory_checks if c not in out)
        return out

    def is_protected(self, repository: str, branch: str) -> bool:
        return any(rule.matches(repository, branch) for rule in self.protected_branches)


_CONFIG_KEYS = {
    "api_token",
    "api_token_env",
    "public_url",
    "protected_branches",
    "executors",
    "default_timeout",
    "reaper_interval",
    "sweep_interval",  # the former name of reaper_interval
    "env_prefix",
    "checks",
    "max_rejections",
    "rejections_per_client",
    "airflow_poll_interval",
    "connections",
}

#: ``connections:`` keys: deadlines (durations) and caps (counts); see "Threat model and limits" in the package README.
CONNECTION_DEADLINES = ("header_timeout", "body_timeout", "request_timeout", "grace")
CONNECTION_CAPS = ("per_client_pending", "max_pending", "max_active", "max_connections")


def parse_connection_limits(raw: Any, *, source: str) -> dict[str, float | int]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise BadInput("connections must be a mapping", source=source, field="connections")
    out: dict[str, float | int] = {}
    for key, value in raw.items():
        where = f"connections.{key}"
        if key in CONNECTION_DEADLINES:
            seconds = parse_duration(value, source=source, field=where).total_seconds()
            if not 0 < seconds <= 3600:
                raise BadInput("must be more than 0s and at most 1h", source=source, field=where)
            out[key] = seconds
        elif key in CONNECTION_CAPS:
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
                raise BadInput("must be a number from 1 to 1000000", source=source, field=where)
            out[key] = value
        else:
            raise BadInput(f"unknown key (known: {', '.join(CONNECTION_DEADLINES + CONNECTION_CAPS)})",
                           source=source, field=where)
    return out


def parse_service_config(data: Any, *, source: str, env: Mapping[str, str]) -> ServiceConfig:
    """Validate a parsed config document; see the package README for the format."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise BadInput("the config file must be a mapping", source=source)
    unknown = set(data) - _CONFIG_KEYS
    if unknown:
        raise BadInput(f"unknown keys {sorted(unknown)}", source=source)
    if "reaper_interval" in data and "sweep_interval" in data:
        raise BadInput("give reaper_interval only (sweep_interval is its former name)", source=source, field="sweep_interval")
    interval_key = "sweep_interval" if "sweep_interval" in data else "reaper_interval"
    token = data.get("api_token")
    if token is not None and (not isinstance(token, str) or len(token) < 16):
        raise BadInput("api_token must be a string of at least 16 characters", source=source, field="api_token")
    if data.get("api_token_env") is not None:
        name = data["api_token_env"]
        if not isinstance(name, str) or name not in env:
            raise BadInput(f"environment variable {name!r} is not set", source=source, field="api_token_env")
        token = env[name]
    public_url = data.get("public_url")
    if public_url is not None and (not isinstance(public_url, str) or not re.match(r"https?://", public_url)):
        raise BadInput("public_url must be an http(s) URL", source=source, field="public_url")
    rules: list[ProtectedBranch] = []
    raw_rules = data.get("protected_branches") or []
    if not isinstance(raw_rules, list):
        raise BadInput("must be a list", source=source, field="protected_branches")
    for i, rule in enumerate(raw_rules):
        where = f"protected_branches[{i}]"
        if not isinstance(rule, dict) or not isinstance(rule.get("branch"), str) or not rule["branch"]:
            raise BadInput("each rule needs a branch (name or glob)", source=source, field=where)
        checks = rule.get("mandatory_checks", [])
        if not isinstance(checks, list) or not all(isinstance(c, str) and c for c in checks):
            raise BadInput("mandatory_checks must be a list of check ids", source=source, field=f"{where}.mandatory_checks")
        repo = rule.get("repository", "*")
        if not isinstance(repo, str) or not repo:
            raise BadInput("repository must be a name or glob", source=source, field=f"{where}.repository")
        extra = set(rule) - {"branch", "mandatory_checks", "repository"}
        if extra:
            raise BadInput(f"unknown keys {sorted(extra)}", source=source, field=where)
        rules.append(ProtectedBranch(branch=rule["branch"], mandatory_checks=tuple(checks), repository=repo))
    raw_executors = data.get("executors") or {}
    if not isinstance(raw_executors, dict):
        raise BadInput("executors must map endpoint names to {type, url, ...}", source=source, field="executors")
    executors: dict[str, ExecutorEndpoint] = {}
    for name, spec in raw_executors.items():
        where = f"executors.{name}"
        if not isinstance(spec, dict):
            raise BadInput("an executor endpoint must be a mapping {type, url, ...}", source=source, field=where)
        props = dict(spec)
        kind = props.pop("type", name if name in EXECUTORS else None)
        if kind not in EXECUTORS:
            raise BadInput(f"type must be one of {', '.join(sorted(EXECUTORS))}", source=source, field=f"{where}.type")
        if not isinstance(props.get("url"), str) or not re.match(r"https?://", props["url"]):
            raise BadInput("an executor endpoint needs an http(s) url", source=source, field=f"{where}.url")
        allowed = props.pop("allowed_dags", None)
        if allowed is not None:
            if kind != "airflow":
                raise BadInput("allowed_dags is for airflow endpoints", source=source, field=f"{where}.allowed_dags")
            if not isinstance(allowed, list) or not all(isinstance(d, str) and d for d in allowed):
                raise BadInput("allowed_dags must be a list of DAG ids (globs allowed)", source=source,
                               field=f"{where}.allowed_dags")
        executors[str(name)] = ExecutorEndpoint(name=str(name), type=str(kind), properties=props,
                                                allowed_dags=tuple(allowed) if allowed is not None else None)
    config_checks = [
        dataclasses.replace(c, operator_owned=True)
        for c in parse_check_entries(data.get("checks"), path=source, action_name="server config", known_types=EXECUTORS)
    ]
    max_rejections = data.get("max_rejections", 10_000)
    if isinstance(max_rejections, bool) or not isinstance(max_rejections, int) or not 1 <= max_rejections <= 10_000_000:
        raise BadInput("max_rejections must be a number from 1 to 10000000", source=source, field="max_rejections")
    per_client = data.get("rejections_per_client", 60)
    if isinstance(per_client, bool) or not isinstance(per_client, int) or not 1 <= per_client <= 1_000_000:
        raise BadInput("rejections_per_client must be a number from 1 to 1000000 (per minute)", source=source,
                       field="rejections_per_client")
    env_prefix = data.get("env_prefix", DEFAULT_ENV_PREFIX)
    if not isinstance(env_prefix, str):
        raise BadInput("env_prefix must be a string ('' allows every variable)", source=source, field="env_prefix")
    return ServiceConfig(
        api_token=token,
        public_url=public_url.rstrip("/") if public_url else None,
        protected_branches=tuple(rules),
        executors=executors,
        checks=tuple(config_checks),
        max_rejections=max_rejections,
        rejections_per_client=per_client,
        connection_limits=parse_connection_limits(data.get("connections"), source=source),
        airflow_poll_interval=parse_duration(
            data.get("airflow_poll_interval", "5s"), source=source, field="airflow_poll_interval"
        ),
        default_timeout=parse_duration(data.get("default_timeout", "1h"), source=source, field="default_timeout"),
        reaper_interval=parse_duration(data.get(interval_key, "30s"), source=source, field=interval_key),
        env_prefix=env_prefix,
        source=source,
    )


def load_service_config(path: str | Path | None, env: Mapping[str, str]) -> ServiceConfig:
    """The config file at ``path`` (YAML or JSON), or the defaults when there is none."""
    if path is None:
        return ServiceConfig()
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot read config file: {exc.strerror}", source=str(p)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BadInput(f"invalid YAML: {str(exc).replace(chr(10), ' ')}", source=str(p)) from None
    return parse_service_config(data, source=str(p), env=env)
