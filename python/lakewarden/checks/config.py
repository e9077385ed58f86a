"""Check definitions (``_lakefs_actions/*.yaml``) and the service configuration file.

Both are parsed completely before anything is triggered: a bad action file or config raises
:class:`~lakewarden.errors.BadInput` naming the file and the field, and nothing changes state.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from lakewarden.checks.durations import parse_duration
from lakewarden.errors import BadInput

#: Where lakeFS keeps action files; checks are read from the same objects as hooks.
ACTIONS_PREFIX = "_lakefs_actions/"

#: A check id appears in URL paths and DAG run ids, so it is kept to URL-safe characters.
CHECK_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")

DEFAULT_TIMEOUT = timedelta(hours=1)
DEFAULT_ENV_PREFIX = "LAKEFSACTIONS_"


@dataclass(frozen=True)
class CheckDefinition:
    """One ``checks:`` entry of an action file, as committed (properties not yet templated)."""

    id: str
    type: str
    properties: dict[str, Any]
    source: str
    action_name: str
    description: str = ""
    timeout: timedelta | None = None

    def to_json(self) -> dict[str, Any]:
        """The definition as stored with each execution, so a retry needs no catalog access."""
        return {
            "id": self.id,
            "type": self.type,
            "properties": self.properties,
            "source": self.source,
            "action_name": self.action_name,
            "description": self.description,
            "timeout_seconds": self.timeout.total_seconds() if self.timeout else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CheckDefinition":
        timeout = data.get("timeout_seconds")
        return cls(
            id=data["id"],
            type=data["type"],
            properties=dict(data.get("properties") or {}),
            source=data.get("source", ""),
            action_name=data.get("action_name", ""),
            description=data.get("description", ""),
            timeout=timedelta(seconds=timeout) if timeout else None,
        )


def is_action_path(key: str) -> bool:
    """Whether an object key is an action file lakeFS would load (directly under the prefix)."""
    if not key.startswith(ACTIONS_PREFIX):
        return False
    name = key[len(ACTIONS_PREFIX) :]
    return "/" not in name and name.endswith((".yaml", ".yml"))


def parse_action_file(path: str, text: str | bytes, known_types: Iterable[str]) -> list[CheckDefinition]:
    """The checks of one action file; an action file without ``checks:`` (hooks only) has none."""
    types = set(known_types)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        reason = str(exc).replace("\n", " ")
        raise BadInput(f"invalid YAML: {reason}", source=path) from None
    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise BadInput("an action file must be a mapping", source=path)
    action_name = doc.get("name") if isinstance(doc.get("name"), str) else Path(path).stem
    raw_checks = doc.get("checks")
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
        unknown = set(entry) - {"id", "type", "properties", "description", "timeout"}
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
            )
        )
    return out


def collect_checks(files: Iterable[tuple[str, str | bytes]], known_types: Iterable[str]) -> list[CheckDefinition]:
    """Every check of a commit's action files; a check id may be defined only once per commit."""
    types = list(known_types)
    by_id: dict[str, CheckDefinition] = {}
    for path, text in sorted(files, key=lambda item: item[0]):
        for check in parse_action_file(path, text, types):
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
    executors: dict[str, dict[str, Any]] = field(default_factory=dict)
    default_timeout: timedelta = DEFAULT_TIMEOUT
    sweep_interval: timedelta = timedelta(seconds=30)
    env_prefix: str = DEFAULT_ENV_PREFIX
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
    "sweep_interval",
    "env_prefix",
}


def parse_service_config(data: Any, *, source: str, env: Mapping[str, str]) -> ServiceConfig:
    """Validate a parsed config document; see the package README for the format."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise BadInput("the config file must be a mapping", source=source)
    unknown = set(data) - _CONFIG_KEYS
    if unknown:
        raise BadInput(f"unknown keys {sorted(unknown)}", source=source)
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
    executors = data.get("executors") or {}
    if not isinstance(executors, dict) or not all(isinstance(v, dict) for v in executors.values()):
        raise BadInput("executors must map a check type to its default properties", source=source, field="executors")
    env_prefix = data.get("env_prefix", DEFAULT_ENV_PREFIX)
    if not isinstance(env_prefix, str):
        raise BadInput("env_prefix must be a string ('' allows every variable)", source=source, field="env_prefix")
    return ServiceConfig(
        api_token=token,
        public_url=public_url.rstrip("/") if public_url else None,
        protected_branches=tuple(rules),
        executors={str(k): dict(v) for k, v in executors.items()},
        default_timeout=parse_duration(data.get("default_timeout", "1h"), source=source, field="default_timeout"),
        sweep_interval=parse_duration(data.get("sweep_interval", "30s"), source=source, field="sweep_interval"),
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
