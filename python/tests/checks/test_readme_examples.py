"""Every action file and config the checks README shows is one lakeFS (and the service) accepts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from lakewarden.checks.config import collect_checks, load_action_document, parse_service_config
from lakewarden.checks.executors import EXECUTORS

README = Path(__file__).resolve().parents[2] / "lakewarden" / "checks" / "README.md"
BLOCKS = re.findall(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
ACTION_FILES = [b for b in BLOCKS if b.startswith("# _lakefs_actions/")]


def test_the_readme_documents_action_files() -> None:
    assert ACTION_FILES, "the README's action file examples start with '# _lakefs_actions/NAME.yaml'"


@pytest.mark.parametrize("text", ACTION_FILES, ids=[b.split("\n", 1)[0] for b in ACTION_FILES])
def test_documented_action_files_pass_lakefs_rules(text: str) -> None:
    path = text.split("\n", 1)[0][2:].split()[0]
    doc = load_action_document(path, text)  # raises with lakeFS's reason otherwise
    collect_checks([(path, text)], EXECUTORS)  # and the checks in it are valid
    assert doc["name"] and doc["on"]


def test_the_main_example_is_one_file_with_gate_hook_and_checks() -> None:
    [main] = [b for b in ACTION_FILES if "checks:" in b and "hooks:" in b]
    doc = load_action_document("_lakefs_actions/branch-checks.yaml", main)
    assert doc["on"] == {"pre-merge": {"branches": ["main"]}}
    [gate] = doc["hooks"]
    assert gate["type"] == "webhook" and gate["properties"]["url"].endswith("/api/v1/hooks/pre-merge")
    ids = [c.id for c in collect_checks([("_lakefs_actions/branch-checks.yaml", main)], EXECUTORS)]
    assert ids == ["row-count", "dq-dag"]
    assert "{{ ENV.LAKEFSACTION_" in main  # lakeFS's prefix


def test_the_documented_config_parses() -> None:
    [config] = [b for b in BLOCKS if b.startswith("api_token_env:")]
    env = {"LAKEWARDEN_CHECKS_TOKEN": "t" * 20, "AIRFLOW_PASSWORD": "pw", "CI_TOKEN": "ci"}
    cfg = parse_service_config(yaml.safe_load(config), source="README", env=env)
    assert set(cfg.executors) == {"prod-airflow", "ci"} and cfg.env_prefix == "LAKEFSACTION_"
    assert [c.id for c in cfg.checks] == ["dq-dag"]
