"""The state directory rule every command shares: --state, else $LAKEWARDEN_HOME, else ./.lakewarden."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from lakewarden.runtime.state_dir import add_state_option, state_dir


def test_explicit_then_environment_then_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LAKEWARDEN_HOME", str(tmp_path / "home"))
    assert state_dir(str(tmp_path / "given")) == tmp_path / "given"
    assert state_dir(None) == tmp_path / "home"
    monkeypatch.delenv("LAKEWARDEN_HOME")
    assert state_dir(None) == tmp_path / ".lakewarden"


def test_a_relative_or_home_relative_state_dir_is_made_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # a process that changes directory later (the sweep's workers, dbt) must mean the same directory
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert state_dir("rel/state") == tmp_path / "rel" / "state"
    assert state_dir("~/state") == tmp_path / "user" / "state"


def test_every_command_declares_the_option_the_same_way() -> None:
    from lakewarden.cli import build_parser

    parser = build_parser()
    helps = []

    def walk(node: argparse.ArgumentParser) -> None:
        for action in node._actions:  # noqa: SLF001 - argparse keeps no public list
            if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                for child in action.choices.values():
                    walk(child)
            elif "--state" in action.option_strings:
                helps.append(action.help or "")

    walk(parser)
    assert len(helps) >= 8, helps  # the jobs, sweep, extract, demo, the checks commands
    assert all(text.startswith("state directory: ") and text.endswith("(default $LAKEWARDEN_HOME, else ./.lakewarden)") for text in helps), helps


def test_the_option_is_parsed_into_state() -> None:
    parser = argparse.ArgumentParser()
    add_state_option(parser, "what this command keeps")
    assert parser.parse_args(["--state", "x"]).state == "x"
    assert parser.parse_args([]).state is None
