"""The one rule for where lakeFS is and which credentials to use (lakewarden.lakefs.client), as
every command that talks to lakeFS follows it: extract, a job's --repo, checks serve."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from lakewarden.errors import BadInput
from lakewarden.lakefs.client import LakeFSConfig, api_base_url, resolve_config

LAKECTL_NAMES = ("LAKECTL_CREDENTIALS_ACCESS_KEY_ID", "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY", "LAKECTL_SERVER_ENDPOINT_URL")


def lakectl_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "lakectl.yaml"
    path.write_text(
        "credentials:\n  access_key_id: AKIAFILE\n  secret_access_key: file-secret\n"
        "server:\n  endpoint_url: http://lakefs.example:8000/api/v1\n"
    )
    return path


def test_config_from_lakectl_yaml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (*LAKECTL_NAMES, "LAKEFS_ACCESS_KEY_ID", "LAKEFS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LAKECTL_CONFIG_FILE", str(lakectl_yaml(tmp_path)))
    config = resolve_config()
    assert config == LakeFSConfig("http://lakefs.example:8000/api/v1", "AKIAFILE", "file-secret")
    assert "file-secret" not in repr(config)
    monkeypatch.setenv("LAKECTL_CREDENTIALS_ACCESS_KEY_ID", "AKIAENV")
    assert resolve_config("http://other:8000").access_key_id == "AKIAENV"
    assert resolve_config("http://other:8000").endpoint == "http://other:8000"


def test_the_rule_field_by_field_arguments_lakectl_former_names_then_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    file = {"LAKECTL_CONFIG_FILE": str(lakectl_yaml(tmp_path))}
    former = {"LAKEFS_ACCESS_KEY_ID": "AKIAOLD", "LAKEFS_SECRET_ACCESS_KEY": "old-secret"}
    lakectl = {"LAKECTL_CREDENTIALS_ACCESS_KEY_ID": "AKIAENV", "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY": "env-secret"}

    # lakectl's variables come before the former names, silently
    with caplog.at_level(logging.WARNING, logger="lakewarden.lakefs.client"):
        config = resolve_config(env={**file, **former, **lakectl})
    assert (config.access_key_id, config.secret_access_key) == ("AKIAENV", "env-secret")
    assert not caplog.records

    # the checks service's former names still authenticate, before the file, with a warning
    with caplog.at_level(logging.WARNING, logger="lakewarden.lakefs.client"):
        config = resolve_config(env={**file, **former})
    assert (config.access_key_id, config.secret_access_key) == ("AKIAOLD", "old-secret")
    assert "LAKEFS_ACCESS_KEY_ID and LAKEFS_SECRET_ACCESS_KEY" in caplog.text
    assert "old-secret" not in caplog.text and "old-secret" not in repr(config)

    # field by field: an argument wins over everything, the rest is found where it is
    config = resolve_config("http://arg:8000", "AKIAARG", env={**file, "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY": "env-secret"})
    assert config == LakeFSConfig("http://arg:8000", "AKIAARG", "env-secret")

    # nothing anywhere but the endpoint: no credentials (lakeFS answers 401 and the caller says why)
    config = resolve_config("http://arg:8000", env={"LAKECTL_CONFIG_FILE": str(tmp_path / "absent.yaml")})
    assert not config.has_credentials


def test_no_endpoint_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no lakeFS endpoint"):
        resolve_config(env={"LAKECTL_CONFIG_FILE": str(tmp_path / "absent.yaml")})


def test_an_unreadable_lakectl_file_is_bad_input_naming_it(tmp_path: Path) -> None:
    broken = tmp_path / "lakectl.yaml"
    broken.write_text("credentials: [unclosed\n")
    with pytest.raises(BadInput) as raised:
        resolve_config("http://h:8000", env={"LAKECTL_CONFIG_FILE": str(broken)})
    assert raised.value.source == str(broken)


def test_api_base_url() -> None:
    assert api_base_url("http://h:8000") == "http://h:8000/api/v1"
    assert api_base_url("http://h:8000/api/v1/") == "http://h:8000/api/v1"
